package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestBenchPolicySmall(t *testing.T) {
	o := policyBenchOpts{scenario: "../../policy/builtin/scenarios/train-websearch.yaml", spec: "builtin", queues: []int{10, 300},
		minTime: time.Millisecond, episodes: 2, workers: 2}
	r, err := runPolicyBench(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pool < 8 || len(r.Decide) != 2 {
		t.Fatalf("pool %d, %d decide results", r.Pool, len(r.Decide))
	}
	for _, d := range r.Decide {
		if d.Batches < 5 || !(d.NsPerQueue > 0) || !(d.BatchP99Ms >= d.BatchP50Ms) || d.BatchP50Ms <= 0 {
			t.Fatalf("decide result %+v", d)
		}
	}
	tb := r.Train
	// 8-host star: 8 queues x 20 decisions per 5 ms episode at Δ = 200 µs.
	if tb == nil || tb.Episodes != 2 || tb.AgentSteps == 0 || tb.RolloutSteps != tb.AgentSteps || !(tb.StepsPerSec > 0) || !(tb.RolloutPerSec > 0) {
		t.Fatalf("train result %+v", tb)
	}
	var buf bytes.Buffer
	if err := printPolicyBench(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ns/queue", "agent steps/s", "rollouts only"} {
		if !strings.Contains(buf.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestBenchPolicyErrors(t *testing.T) {
	base := policyBenchOpts{scenario: "../../policy/builtin/scenarios/train-websearch.yaml", spec: "builtin", queues: []int{10},
		minTime: time.Millisecond, workers: 1}
	for _, c := range []struct {
		edit func(*policyBenchOpts)
		want string
	}{
		{func(o *policyBenchOpts) { o.queues = nil }, "--queues"},
		{func(o *policyBenchOpts) { o.queues = []int{0} }, "--queues 0"},
		{func(o *policyBenchOpts) { o.workers = 0 }, "--workers"},
		{func(o *policyBenchOpts) { o.scenario = "nope.yaml" }, "nope.yaml"},
		{func(o *policyBenchOpts) { o.spec = "static:nope" }, "nope"},
	} {
		o := base
		c.edit(&o)
		if _, err := runPolicyBench(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want %q", err, c.want)
		}
	}
}
