package agent

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/internal/etcdtest"
)

// An agent joins a fleet whose etcd serves TLS and asks for client
// certificates: with the CA that signed etcd's certificate it joins; with
// another CA, a wrong server name or without a client certificate it
// does not, and the error says what to check.
func TestJoinFleetOverTLS(t *testing.T) {
	ep, files := etcdtest.StartTLS(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	join := func(tl *config.FleetTLS) error {
		cfg := testConfig(config.ModeClosedLoop)
		cfg.Fleet = &config.Fleet{Endpoints: []string{ep}, Name: "tls", Member: "a", TTL: 2 * time.Second, TLS: tl}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		n, leave, err := joinFleet(ctx, cfg, 200*time.Millisecond, quiet)
		if err != nil {
			return err
		}
		defer leave()
		if _, err := n.Status(ctx); err != nil {
			t.Fatalf("status over TLS: %v", err)
		}
		return nil
	}
	right := &config.FleetTLS{CA: files.CA, Cert: files.Cert, Key: files.Key, ServerName: files.ServerName}
	if err := join(right); err != nil {
		t.Fatalf("the right CA: %v", err)
	}
	// the certificate is for 127.0.0.1 too: no server name needed
	if err := join(&config.FleetTLS{CA: files.CA, Cert: files.Cert, Key: files.Key}); err != nil {
		t.Fatalf("the right CA, no server name: %v", err)
	}
	other := filepath.Join(t.TempDir(), "other-ca.pem")
	etcdtest.NewCA(t, other)
	err := join(&config.FleetTLS{CA: other, Cert: files.Cert, Key: files.Key, ServerName: files.ServerName})
	if err == nil || !strings.Contains(err.Error(), "fleet.tls.ca") || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("another CA: %v", err)
	}
	t.Logf("another CA: %v", err)
	err = join(&config.FleetTLS{CA: files.CA, ServerName: "not-etcd.test"})
	if err == nil || !strings.Contains(err.Error(), "fleet.tls.server-name") {
		t.Fatalf("a wrong server name: %v", err)
	}
	err = join(&config.FleetTLS{CA: files.CA, ServerName: files.ServerName})
	if err == nil || !strings.Contains(err.Error(), "fleet.tls.cert") {
		t.Fatalf("no client certificate: %v", err)
	}
	t.Logf("no client certificate: %v", err)
}
