package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// A client in plain text beside an etcd that speaks TLS, and one over TLS
// beside an etcd in plain text, are told so at once (they said "did not
// answer (is it running there...)" after 10 s, and "over TLS: EOF").
func TestFleetTLSMismatchSaidSo(t *testing.T) {
	tlsEP, files := etcdtest.StartTLS(t)
	plainEP := etcdtest.Start(t)
	dir := t.TempDir()
	write := func(name, ep, tls string) string {
		p := filepath.Join(dir, name)
		body := fmt.Sprintf("mode: closed-loop\ndb: %s\ntargets:\n  leaf0: {address: 127.0.0.1:1, insecure: true}\n"+
			"fleet: {endpoints: [%s], name: dc1, member: a%s}\n", filepath.Join(dir, "a.db"), ep, tls)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withTLS := fmt.Sprintf(", tls: {ca: %s, cert: %s, key: %s, server-name: %s}", files.CA, files.Cert, files.Key, files.ServerName)
	for _, c := range []struct{ cfg, want string }{
		{write("plain.yaml", tlsEP, ""), "fleet: etcd " + tlsEP + " speaks TLS: set fleet.tls"},
		{write("tls.yaml", plainEP, withTLS), "fleet: etcd " + plainEP + " does not speak TLS (it answers in plain text"},
	} {
		start := time.Now()
		_, err := runFleet(t, "status", "--config", c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || time.Since(start) > 5*time.Second {
			t.Errorf("status: %v in %v, want %q", err, time.Since(start).Round(time.Millisecond), c.want)
		}
	}
	// plain text beside plain text still works
	if out, err := runFleet(t, "status", "--config", write("ok.yaml", plainEP, "")); err != nil || !strings.Contains(out, "fleet dc1: 0 members") {
		t.Fatalf("status in plain text: %v\n%s", err, out)
	}
}
