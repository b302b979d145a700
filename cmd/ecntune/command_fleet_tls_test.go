package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/internal/etcdtest"
)

// The fleet commands reach an etcd that serves TLS with the configuration's
// fleet.tls, and say which key to check when its CA is not etcd's.
func TestFleetCommandsOverTLS(t *testing.T) {
	ep, files := etcdtest.StartTLS(t)
	dir := t.TempDir()
	write := func(ca string) string {
		p := filepath.Join(dir, "agent.yaml")
		body := fmt.Sprintf("mode: closed-loop\ndb: %s\ntargets:\n  leaf0: {address: 127.0.0.1:1, insecure: true}\n"+
			"fleet: {endpoints: [%s], name: dc1, member: a, tls: {ca: %s, cert: %s, key: %s, server-name: %s}}\n",
			filepath.Join(dir, "a.db"), ep, ca, files.Cert, files.Key, files.ServerName)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out, err := runFleet(t, "status", "--config", write(files.CA))
	if err != nil || !strings.Contains(out, "fleet dc1: 0 members") {
		t.Fatalf("status over TLS: %v\n%s", err, out)
	}
	other := filepath.Join(dir, "other-ca.pem")
	etcdtest.NewCA(t, other)
	if _, err := runFleet(t, "status", "--config", write(other)); err == nil || !strings.Contains(err.Error(), "fleet.tls.ca") {
		t.Fatalf("status with another CA: %v", err)
	}
}
