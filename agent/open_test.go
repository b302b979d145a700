package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/policy/builtin"
)

// closingSwitch counts Close calls.
type closingSwitch struct {
	*fakeSwitch
	mu     *sync.Mutex
	closed *int
}

func (s closingSwitch) Close() error {
	s.mu.Lock()
	*s.closed++
	s.mu.Unlock()
	return nil
}

func openTestConfig(t *testing.T, targets ...string) *config.Config {
	cfg := testConfig(config.ModeShadow)
	cfg.DB = filepath.Join(t.TempDir(), "agent.db")
	cfg.Targets = nil
	for _, n := range targets {
		cfg.Targets = append(cfg.Targets, config.Target{Name: n, Address: "127.0.0.1:1", AllPorts: true, Queues: []int{3}})
	}
	return cfg
}

// TestOpenClose: Open builds the agent from the configuration (the policy
// resolved from Config.Policy, one switch per target, the journal at
// Config.DB, the HTTP endpoint at Config.Metrics) and Close releases it all.
func TestOpenClose(t *testing.T) {
	cfg := openTestConfig(t, "leaf0", "leaf1")
	cfg.Policy = "static:hpcc"
	cfg.Metrics = "127.0.0.1:0"
	var mu sync.Mutex
	closed := 0
	var dialed []string
	var logs bytes.Buffer
	a, err := Open(context.Background(), cfg, Deps{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Dial: func(_ context.Context, tc config.Target, _ time.Duration) (Switch, error) {
			dialed = append(dialed, tc.Name)
			return closingSwitch{newFakeSwitch(tc.Name, kA), &mu, &closed}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(dialed, ",") != "leaf0,leaf1" || a.o.Policy.Name() != "static:hpcc" || a.o.Model != "static:hpcc" || a.Journal() == nil {
		t.Fatalf("dialed %v, policy %s, model %s", dialed, a.o.Policy.Name(), a.o.Model)
	}
	addr := regexp.MustCompile(`addr=(\S+)`).FindStringSubmatch(logs.String())
	if addr == nil {
		t.Fatalf("no listen address logged:\n%s", logs.String())
	}
	resp, err := http.Get("http://" + addr[1] + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if closed != 2 {
		t.Fatalf("%d switches closed, want 2", closed)
	}
	if _, err := http.Get("http://" + addr[1] + "/healthz"); err == nil {
		t.Fatal("the HTTP endpoint still answers after Close")
	}
	j, err := journal.OpenJournal(cfg.DB, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("the journal is still locked after Close: %v", err)
	}
	j.Close()
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestOpenErrors: a failure releases what Open had opened so far.
func TestOpenErrors(t *testing.T) {
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))

	// The policy is resolved first: nothing is opened.
	cfg := openTestConfig(t, "leaf0")
	cfg.Policy = "model:tuned"
	if _, err := Open(context.Background(), cfg, Deps{Logger: discard}); err == nil || !strings.HasPrefix(err.Error(), "policy: ") {
		t.Fatalf("model:NAME without a model source: %v", err)
	}
	if _, err := os.Stat(cfg.DB); !os.IsNotExist(err) {
		t.Fatalf("the journal was created for a policy that does not resolve: %v", err)
	}

	// A target that cannot be reached: the journal and the switches
	// dialled before it are closed.
	cfg = openTestConfig(t, "leaf0", "leaf1")
	var mu sync.Mutex
	closed := 0
	refused := errors.New("connection refused")
	_, err := Open(context.Background(), cfg, Deps{Policy: &fixedPolicy{s: target, conf: 1}, Logger: discard,
		Dial: func(_ context.Context, tc config.Target, _ time.Duration) (Switch, error) {
			if tc.Name == "leaf1" {
				return nil, refused
			}
			return closingSwitch{newFakeSwitch(tc.Name, kA), &mu, &closed}, nil
		}})
	if !errors.Is(err, refused) || closed != 1 {
		t.Fatalf("dial failure: %v, %d switches closed (want 1)", err, closed)
	}
	if _, serr := os.Stat(cfg.DB); !errors.Is(serr, fs.ErrNotExist) {
		t.Fatalf("a failed Open left the agent db it made: %v", serr)
	}
	j, err := journal.OpenJournal(cfg.DB, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("the journal is still locked after a failed Open: %v", err)
	}
	j.Close()

	// The metrics address cannot be listened on: everything is released.
	cfg = openTestConfig(t, "leaf0")
	cfg.Metrics = "256.0.0.1:1"
	closed = 0
	_, err = Open(context.Background(), cfg, Deps{Policy: &fixedPolicy{s: target, conf: 1}, Logger: discard,
		Dial: func(_ context.Context, tc config.Target, _ time.Duration) (Switch, error) {
			return closingSwitch{newFakeSwitch(tc.Name, kA), &mu, &closed}, nil
		}})
	if err == nil || !strings.HasPrefix(err.Error(), "metrics: listen 256.0.0.1:1") || closed != 0 {
		t.Fatalf("bad metrics address: %v, %d switches dialled and closed (want none: the address is tried first)", err, closed)
	}
	if _, serr := os.Stat(cfg.DB); !errors.Is(serr, fs.ErrNotExist) {
		t.Fatalf("an agent that could not listen made its db: %v", serr)
	}
	if j, err = journal.OpenJournal(cfg.DB, 100*time.Millisecond); err != nil {
		t.Fatalf("the journal is still locked after a failed Open: %v", err)
	}
	j.Close()
}

// A registry model named by its promoted version runs as the version
// promoted at the start, and is recorded so (the audit log and the
// recommendations said model:NAME@promoted whatever ran).
func TestOpenPinsRegistryModels(t *testing.T) {
	m, err := builtin.Model()
	if err != nil {
		t.Fatal(err)
	}
	r, err := models.Open(filepath.Join(t.TempDir(), "models.db"), models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m.Name, m.ID, m.Status = "mine", 0, ""
	m.Hyper = maps.Clone(m.Hyper) // a model validated where the agent decides (train --twin --from builtin inherits it)
	m.Hyper["validated_interval"] = builtin.ValidatedIntervalMin.String() + "-" + builtin.ValidatedIntervalMax.String()
	for v := 1; v <= 2; v++ {
		m.Version = v
		if _, err := r.Put(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Promote("mine@2", time.Now()); err != nil {
		t.Fatal(err)
	}
	cfg := openTestConfig(t, "leaf0")
	cfg.Policy = "model:mine@promoted"
	var logs bytes.Buffer
	a, err := Open(context.Background(), cfg, Deps{
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		Resolver: policy.Resolver{Models: func(ref string) (models.Model, error) { return r.Resolve(ref) }},
		Dial: func(_ context.Context, tc config.Target, _ time.Duration) (Switch, error) {
			return newFakeSwitch(tc.Name, kA), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.o.Model != "model:mine@2" || !strings.Contains(logs.String(), "policy model:mine@promoted runs model:mine@2") {
		t.Fatalf("model %q; log:\n%s", a.o.Model, logs.String())
	}
}

// A model the registry does not hold is found only when the agent starts:
// the error names the file and line of the policy, as the configuration's
// own errors do.
func TestOpenUnknownModelNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	r, err := models.Open(filepath.Join(dir, "models.db"), models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path := filepath.Join(dir, "agent.yaml")
	doc := "mode: shadow\ndb: agent.db\ntargets:\n  leaf0:\n    address: 127.0.0.1:1\n\npolicy: model:nosuch\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), cfg, Deps{
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Resolver: policy.Resolver{Models: func(ref string) (models.Model, error) { return r.Resolve(ref) }},
		Dial: func(_ context.Context, tc config.Target, _ time.Duration) (Switch, error) {
			return newFakeSwitch(tc.Name, kA), nil
		},
	})
	if err == nil || !strings.Contains(err.Error(), "agent.yaml: line 7: policy model:nosuch: ") || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("Open with an unknown model: %v", err)
	}
}

// A policy whose learned model acts at other decision intervals than the
// agent's (a model train made at 200µs: 20µs to 2ms) held every queue
// forever, with one log line; Open refuses it, naming the model, its
// intervals, the agent's and the ways out, before anything is opened. A
// model validated for the interval runs, and so does one whose
// intervals the switches' counters span (a simulated fabric at a
// timescale, Deps.CounterSpan), or any with Deps.AnyInterval (eval's
// loops).
func TestOpenRefusesPolicyOutsideItsIntervals(t *testing.T) {
	m, err := builtin.Model()
	if err != nil {
		t.Fatal(err)
	}
	r, err := models.Open(filepath.Join(t.TempDir(), "models.db"), models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m.ID, m.Status, m.Version = 0, "", 1
	m.Hyper = map[string]string{"interval": "200µs"} // as ecntune train records it
	m.Name = "t1"
	if _, err := r.Put(m); err != nil {
		t.Fatal(err)
	}
	m.Name, m.Hyper = "slow", map[string]string{"interval": "200µs", "validated_interval": "100ms-2s"}
	if _, err := r.Put(m); err != nil {
		t.Fatal(err)
	}
	open := func(policy string, d Deps) (*config.Config, error) {
		cfg := openTestConfig(t, "leaf0")
		cfg.Policy = policy
		d.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		d.Resolver.Models = func(ref string) (models.Model, error) { return r.Resolve(ref) }
		d.Dial = func(_ context.Context, tc config.Target, _ time.Duration) (Switch, error) {
			return newFakeSwitch(tc.Name, kA), nil
		}
		a, err := Open(context.Background(), cfg, d)
		if err == nil {
			a.Close()
		}
		return cfg, err
	}
	for _, spec := range []string{"model:t1", "roles:host=model:t1;fabric=static:hpcc", "model:t1+alpha=0.5"} {
		cfg, err := open(spec, Deps{})
		if err == nil {
			t.Fatalf("%s at interval 1s: started", spec)
		}
		for _, want := range []string{"model:t1@1", "20µs to 2ms", "interval is 1s", "holds every queue", "ecntune eval --interval 1s",
			"--validated-interval MIN-MAX", "another policy"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v\nwant %q", spec, err, want)
			}
		}
		if _, serr := os.Stat(cfg.DB); !errors.Is(serr, fs.ErrNotExist) {
			t.Fatalf("%s: a refused agent made its db: %v", spec, serr)
		}
	}
	for _, c := range []struct {
		spec string
		d    Deps
	}{
		{"model:slow", Deps{}},
		{"static:hpcc", Deps{}},
		{"builtin", Deps{}},
		{"model:t1", Deps{CounterSpan: time.Millisecond}},
		{"model:t1", Deps{AnyInterval: true}},
	} {
		if _, err := open(c.spec, c.d); err != nil {
			t.Errorf("%s with %+v: %v", c.spec, c.d, err)
		}
	}
	if _, err := open("model:slow", Deps{CounterSpan: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "counters span 1ms") {
		t.Errorf("model:slow on counters over 1ms: %v", err)
	}
}
