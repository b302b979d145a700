package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fleet.tls: files relative to the configuration's folder, read at load;
// a missing file, a cert without its key or a file without PEM is an
// error naming the key and the file.
func TestFleetTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeTLSFiles(t, dir)
	load := func(tls string) (*Config, error) {
		doc := fmt.Sprintf("mode: closed-loop\ntargets:\n  leaf0: {address: 127.0.0.1:1, insecure: true}\nfleet: {endpoints: [127.0.0.1:2379], name: dc1, member: a, tls: %s}\n", tls)
		p := filepath.Join(dir, "agent.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return Load(p)
	}
	c, err := load(fmt.Sprintf("{ca: %s, cert: %s, key: %s, server-name: etcd.dc1}", filepath.Base(cert), cert, filepath.Base(key)))
	if err != nil {
		t.Fatal(err)
	}
	tl := c.Fleet.TLS
	if tl == nil || tl.CA != cert || tl.Key != key || tl.ServerName != "etcd.dc1" {
		t.Fatalf("fleet.tls: %+v", tl)
	}
	tc, err := tl.Config()
	if err != nil || tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.ServerName != "etcd.dc1" {
		t.Fatalf("tls config: %v %+v", err, tc)
	}
	if c, err = load("{}"); err != nil || c.Fleet.TLS == nil {
		t.Fatalf("tls: {} (the system's CAs): %v", err)
	}
	if tc, err := c.Fleet.TLS.Config(); err != nil || tc.RootCAs != nil {
		t.Fatalf("tls: {}: %v %+v", err, tc)
	}
	if c, err = load("null"); err != nil || c.Fleet.TLS != nil {
		t.Fatalf("no tls: %v", err)
	}
	for _, bad := range []struct{ tls, want string }{
		{"{ca: missing.pem}", "fleet.tls.ca: open " + filepath.Join(dir, "missing.pem")},
		{"{cert: " + cert + "}", "fleet.tls.cert/fleet.tls.key: give both or neither"},
		{"{ca: " + filepath.Base(key) + "}", "fleet.tls.ca: " + key + ": no PEM certificate"},
		{fmt.Sprintf("{cert: %s, key: %s}", key, cert), "fleet.tls.cert/fleet.tls.key: " + key},
		{"{ca: " + cert + ", sni: x}", "sni"},
	} {
		if _, err := load(bad.tls); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("tls: %s: %v, want %q", bad.tls, err, bad.want)
		}
	}
}

// fleet.ttl is whole seconds in 2s..1h: etcd grants a lease of whole
// seconds, and a fractional TTL (granted as the seconds below it) would
// let a member's deadlines run past its lease.
func TestFleetTTLWholeSeconds(t *testing.T) {
	dir := t.TempDir()
	for ttl, ok := range map[string]bool{"4s": true, "2s": true, "1h": true, "4.9s": false, "2500ms": false, "1s": false, "61m": false} {
		doc := fmt.Sprintf("mode: closed-loop\ntargets:\n  leaf0: {address: 127.0.0.1:1, insecure: true}\nfleet: {endpoints: [127.0.0.1:2379], name: dc1, member: a, ttl: %s}\n", ttl)
		p := filepath.Join(dir, "agent.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "fleet.ttl")) {
			t.Errorf("ttl %s: %v", ttl, err)
		}
	}
}
