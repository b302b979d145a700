package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestDemoFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--timescale", "0"}, "--timescale 0: must be a finite number > 0"},
		{[]string{"--timescale", "Inf"}, "--timescale +Inf: must be a finite number > 0"},
		// 1 s of wall time was announced as -2562h simulated: the
		// simulated clock (int64 picoseconds) overflowed
		{[]string{"--timescale", "1e-9"}, "--timescale 1e-09: below the smallest timescale"},
		{[]string{"--timescale", "0.0001"}, "--timescale 0.0001: below the smallest timescale"},
		{[]string{"--interval", "1"}, "--interval"},
		{[]string{"--interval", "10ms", "--scenario", "../../scenarios/star-incast.yaml"}, "interval 10ms: below the agent's minimum of 100ms"},
		{[]string{"--scenario", "nope.yaml"}, "nope.yaml"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--listen", "256.0.0.1:1"}, "listen 256.0.0.1:1"},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--listen", "127.0.0.1:0", "--policy", "model:none"}, "policy"},
		{[]string{"--fleet", "1"}, "--fleet 1: a fleet is 2 agents or more"},
		{[]string{"--fleet-kill-after", "10s"}, "--fleet-kill-after: only with --fleet"},
		{[]string{"--fleet", "3", "--fleet-kill-after", "soon"}, "--fleet-kill-after \"soon\""},
		{[]string{"--scenario", "../../scenarios/star-incast.yaml", "--fleet", "27"}, "fleet 27: a fleet is 2 to 26 agents"},
	} {
		cmd := newDemoCmd()
		cmd.SetArgs(c.args)
		var out syncBuf
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}

// The command prints the URL, then the first recommendations, and stops
// when its context ends.
func TestDemoCommandRunsAndStops(t *testing.T) {
	cmd := newDemoCmd()
	cmd.SetArgs([]string{"--scenario", "../../scenarios/star-incast.yaml", "--listen", "127.0.0.1:0", "--timescale", "100",
		"--interval", "100ms", "--closed-loop"})
	var out syncBuf
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "demo: first recommendations for ") {
		if time.Now().After(deadline) {
			t.Fatalf("no first recommendations after 30 s:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the demo still runs 10 s after its context ended")
	}
	for _, want := range []string{"demo: open http://127.0.0.1:", "agent in closed loop", "demo: stopped at simulated "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// demo --fleet 3 prints every agent's URL and the placement, and the
// fleet status command it prints works while the demo runs.
func TestDemoCommandFleet(t *testing.T) {
	cmd := newDemoCmd()
	cmd.SetArgs([]string{"--scenario", "../../scenarios/star-incast.yaml", "--listen", "127.0.0.1:0", "--fleet", "3"})
	var out syncBuf
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "demo: placement: a owns") {
		if time.Now().After(deadline) {
			t.Fatalf("no placement after 60 s:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, rest, _ := strings.Cut(out.String(), "from another terminal: ecntune fleet status --config ")
	cfgPath, _, _ := strings.Cut(rest, "\n")
	root := newRootCmd()
	root.SetArgs([]string{"fleet", "status", "--config", cfgPath})
	var st syncBuf
	root.SetOut(&st)
	root.SetErr(&st)
	if err := root.Execute(); err != nil || !strings.Contains(st.String(), "fleet demo: 3 members") {
		t.Errorf("fleet status --config %q: %v\n%s", cfgPath, err, st.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the demo still runs 30 s after its context ended")
	}
	for _, want := range []string{"demo: agent a: open http://127.0.0.1:", "demo: agent c: open http://127.0.0.1:", "fleet demo: 3 agents in closed loop", "demo: stopped at simulated "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
