package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecntune/ecntune/models"
)

// A model the agent follows by its promoted version is promoted while the
// agent runs: it says so once, naming what it runs until it restarts; a
// model named by version is not followed.
func TestWatchPromotionsWarnsOnce(t *testing.T) {
	if got := promotedRefs("roles:host=model:mine;fabric=model:other@1", "roles:host=model:mine@2;fabric=model:other@1"); len(got) != 1 || got["mine"] != 2 {
		t.Fatalf("followed models %v, want mine at 2", got)
	}
	if got := promotedRefs("model:mine@promoted", "model:mine@4"); got["mine"] != 4 {
		t.Fatalf("model:NAME@promoted followed as %v", got)
	}
	var mu sync.Mutex
	promoted := 2
	info := func(ref string) (models.Model, error) {
		mu.Lock()
		defer mu.Unlock()
		if ref != "mine@promoted" {
			t.Errorf("looked up %q", ref)
		}
		return models.Model{Name: "mine", Version: promoted}, nil
	}
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		watchPromotions(ctx, "model:mine", "model:mine@2", info, slog.New(slog.NewTextHandler(&logs, nil)), time.Millisecond)
		close(done)
	}()
	wait := func(what string, ok func(string) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(logs.String()); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s; log:\n%s", what, logs.String())
			}
		}
	}
	time.Sleep(20 * time.Millisecond)
	if logs.String() != "" {
		t.Fatalf("warned with the running version promoted:\n%s", logs.String())
	}
	mu.Lock()
	promoted = 3
	mu.Unlock()
	wait("no warning of the promotion", func(s string) bool {
		return strings.Contains(s, "model mine@3 has been promoted; this agent runs model:mine@2 until it restarts")
	})
	time.Sleep(20 * time.Millisecond)
	if n := strings.Count(logs.String(), "has been promoted"); n != 1 {
		t.Fatalf("warned %d times of one promotion:\n%s", n, logs.String())
	}
	mu.Lock()
	promoted = 4
	mu.Unlock()
	wait("no warning of the next promotion", func(s string) bool { return strings.Contains(s, "model mine@4 has been promoted") })
	cancel()
	<-done
}
