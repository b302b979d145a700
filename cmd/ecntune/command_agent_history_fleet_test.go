package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/etcdtest"
)

// agent history --fleet reads the audit the fleet keeps in etcd: every
// member's entries, oldest first, with their writer and token.
func TestAgentHistoryOfTheFleet(t *testing.T) {
	ep := etcdtest.Start(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := fleet.Join(ctx, cli, fleet.Config{Name: "dc1", Member: fleet.Member{ID: "a"}, Switches: []fleet.Switch{{Name: "leaf0"}, {Name: "leaf1"}},
		TTL: 2 * time.Second, Takeover: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	s := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.1}
	for i, sw := range []string{"leaf1", "leaf0"} {
		var tok int64
		for ok := false; !ok; time.Sleep(20 * time.Millisecond) {
			if tok, ok = n.Writable(sw, time.Now()); ctx.Err() != nil {
				t.Fatal("not writable")
			}
		}
		e := core.AuditEntry{TimeNs: int64(i + 1), Target: sw, Writer: "a", Token: tok, State: core.StateIntent,
			Change: core.Change{Key: env.QueueKey{Target: sw, Port: "Ethernet0", Queue: 3}, Kind: core.KindTune, Old: s, New: s, Reason: "test " + sw}}
		if err := n.Fence(ctx, sw, tok, []core.AuditEntry{e}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(t.TempDir(), "agent.yaml")
	body := fmt.Sprintf("mode: closed-loop\ntargets:\n  leaf0: {address: 127.0.0.1:1, insecure: true}\nfleet: {endpoints: [%s], name: dc1, member: b}\n", ep)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := runAgentCmd(t, ctx, "history", "--config", cfg, "--fleet")
	if err != nil {
		t.Fatal(err)
	}
	i0, i1 := strings.Index(out, "test leaf1"), strings.Index(out, "test leaf0")
	if !strings.Contains(out, "WRITER") || i0 < 0 || i1 < 0 || i0 > i1 {
		t.Fatalf("agent history --fleet: want both entries, leaf1's (older) first, with a WRITER column:\n%s", out)
	}
	if out, _, err = runAgentCmd(t, ctx, "history", "--config", cfg, "--fleet", "--target", "leaf0", "--json"); err != nil ||
		strings.Count(out, "\n") != 1 || !strings.Contains(out, `"writer":"a"`) {
		t.Fatalf("--target leaf0 --json: %v\n%s", err, out)
	}
}
