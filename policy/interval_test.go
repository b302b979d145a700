package policy

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/builtin"
)

// IntervalBounds finds every learned model a policy is made of (roles:,
// rate:, schedule:, +headroom=model:, a switch-level model's own bound)
// with the decision intervals it acts at, and Excludes says which
// intervals hold every queue it decides (as Decide does, with SpanJitter).
func TestIntervalBounds(t *testing.T) {
	ecn, err := builtin.Model()
	if err != nil {
		t.Fatal(err)
	}
	trained := ecn
	trained.Name, trained.ID, trained.Version = "t1", 7, 1
	trained.Hyper = maps.Clone(ecn.Hyper)
	delete(trained.Hyper, "validated_interval")
	trained.Hyper["interval"] = "200µs" // what train records: valid 20µs to 2ms
	hdrmW, err := pausedFloorNet(t).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]models.Model{
		"t1": trained,
		"hdrm": {Name: "hdrm", ID: 9, Version: 2, ObsSpec: env.SwitchSpecVersion, ActSpec: env.HeadroomActionSpec, Weights: hdrmW,
			Hyper: map[string]string{"validated_interval": "100ms-10s"}},
	}
	r := Resolver{Models: func(ref string) (models.Model, error) {
		if m, ok := stored[ref]; ok {
			return m, nil
		}
		return models.Model{}, models.ErrNotFound
	}}
	bi := builtin.ValidatedIntervalMin.String() + "-" + builtin.ValidatedIntervalMax.String()
	for _, c := range []struct {
		spec string
		want string // name lo-hi, sorted, joined by " "
	}{
		{"static:hpcc", ""},
		{"fixed:400KB/1.6MB/0.2", ""},
		{"builtin", "builtin " + bi},
		{"model:t1", "model:t1 20µs-2ms"},
		{"model:t1:prefer=0.5", "model:t1:prefer=0.5 20µs-2ms"},
		{"roles:host=model:t1;fabric=static:hpcc", "model:t1 20µs-2ms"},
		{"rate:static:hpcc;400G=model:t1", "model:t1 20µs-2ms"},
		{"schedule:static:hpcc,1s=model:t1", "model:t1 20µs-2ms"},
		{"builtin+headroom=model:hdrm", "builtin " + bi + " model:hdrm 100ms-10s"},
		{"static:hpcc+headroom=floor", ""},
		{"roles:host=model:t1;fabric=model:t1", "model:t1 20µs-2ms"},
	} {
		p, err := r.Lookup(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		var got []string
		for _, b := range IntervalBounds(p) {
			got = append(got, b.Policy+" "+b.Lo.String()+"-"+b.Hi.String())
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%s: bounds %q, want %q", c.spec, g, c.want)
		}
	}
	b := IntervalBound{Policy: "model:t1", Lo: 20 * time.Microsecond, Hi: 2 * time.Millisecond}
	for _, c := range []struct {
		d        time.Duration
		excluded bool
	}{{time.Millisecond, false}, {2 * time.Millisecond, false}, {2100 * time.Microsecond, false}, // SpanJitter
		{3 * time.Millisecond, true}, {100 * time.Millisecond, true}, {time.Second, true}, {10 * time.Microsecond, true}} {
		if got := b.Excludes(c.d); got != c.excluded {
			t.Errorf("%v excluded: %v, want %v", c.d, got, c.excluded)
		}
	}
	for _, c := range []struct {
		v      string
		lo, hi time.Duration
		err    string
	}{
		{"100ms-10s", 100 * time.Millisecond, 10 * time.Second, ""},
		{"200µs-1s", 200 * time.Microsecond, time.Second, ""},
		{"200us-1s", 200 * time.Microsecond, time.Second, ""},
		{"1s-100ms", 0, 0, "want MIN-MAX"},
		{"0s-1s", 0, 0, "want MIN-MAX"},
		{"1s", 0, 0, "want MIN-MAX"},
		{"fast-slow", 0, 0, "want MIN-MAX"},
	} {
		lo, hi, err := ParseValidInterval(c.v)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.v, err, c.err)
			}
			continue
		}
		if err != nil || lo != c.lo || hi != c.hi {
			t.Errorf("%q: %v %v %v", c.v, lo, hi, err)
		}
	}
}
