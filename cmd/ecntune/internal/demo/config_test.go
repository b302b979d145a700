package demo

import (
	"context"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
)

// examples/eval-agent-demo.yaml is how eval measures the demo's closed
// loop: its policy and guardrails (all but the per-rate bounds, which the
// demo derives from its fabric) must be the demo's.
func TestEvalExampleIsTheDemosLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, addr, err := simswitch.Start(ctx, simswitch.Config{Sim: smallFabric(), Listen: "127.0.0.1:0", Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	demo, err := config.Parse([]byte(agentYAML(srv, addr, Config{ClosedLoop: true, Policy: policy.DefaultSpec, Interval: time.Second, DB: filepath.Join(t.TempDir(), "d.db")}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	ex, err := config.Load(filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "examples", "eval-agent-demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := demo.Guardrails, ex.Guardrails
	a.Bounds, b.Bounds, a.Reward, b.Reward = nil, nil, nil, nil
	if demo.Mode != ex.Mode || demo.Policy != ex.Policy || !reflect.DeepEqual(a, b) {
		t.Fatalf("demo %s %s %+v\nexample %s %s %+v", demo.Mode, demo.Policy, a, ex.Mode, ex.Policy, b)
	}
}

// The demo's guardrail bounds of a slow fabric are never below one MTU,
// so that the configuration it writes loads without a warning (at 25 Gb/s
// the Kmin floor scaled to 1.25KB: "guardrails.bounds[0].kmin: the minimum
// 1.25KB is below one MTU (1.5KB) ... (was a size in KB meant?)").
func TestDemoBoundsNotBelowOneMTU(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := smallFabric()
	c.Topology = simenv.LeafSpineTopology(2, 1, 3, 25e9, 100e9, simenv.Microsecond)
	srv, addr, err := simswitch.Start(ctx, simswitch.Config{Sim: c, Listen: "127.0.0.1:0", Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg, err := config.Parse([]byte(agentYAML(srv, addr, Config{ClosedLoop: true, Policy: policy.DefaultSpec, Interval: time.Second, DB: filepath.Join(t.TempDir(), "d.db")}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) > 0 {
		t.Errorf("the demo's configuration of a 25G fabric warns: %q", cfg.Warnings)
	}
	bs := cfg.Guardrails.Bounds
	if len(bs) != 2 || bs[0].KminMin != env.MTUBytes || bs[1].KminMin != 5000 {
		t.Errorf("bounds of 25G and 100G ports: %+v; want Kmin floors of one MTU and 5KB", bs)
	}
}

// A simulation behind real time by more than a few of the agent's
// intervals and a minute of wall time is a health problem that says so and what to do (/healthz said
// ok while /demo said behind_ns 22603064 and the agent held every queue).
func TestBehindProblem(t *testing.T) {
	p := behindProblem(simenv.FromDuration(72_603_064), time.Second, 1000)
	for _, want := range []string{"the simulation is 72.603064ms of simulated time behind real time", "(73 of the agent's 1s intervals at timescale 1000)", "raise --timescale"} {
		if !strings.Contains(p, want) {
			t.Errorf("behind by 72.6 ms at 1 ms per interval: %q; want %q", p, want)
		}
	}
	// 22.6 intervals of 1 s: a lag a busy machine makes up, under a minute
	if p := behindProblem(simenv.FromDuration(22_603_064), time.Second, 1000); p != "" {
		t.Errorf("behind by 22.6 s of wall time: %q; want no problem", p)
	}
	if p := behindProblem(simenv.FromDuration(3*time.Millisecond), time.Second, 1000); p != "" {
		t.Errorf("behind by 3 intervals: %q; want no problem", p)
	}
	if p := behindProblem(simenv.FromDuration(3*time.Millisecond), time.Second, 100); p != "" {
		t.Errorf("behind by 0.3 intervals at timescale 100: %q; want no problem", p)
	}
}
