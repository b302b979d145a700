package policy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/builtin"
)

func TestParseFixed(t *testing.T) {
	for in, want := range map[string]env.Setting{
		"387KB/774KB/0.3%":  {KminBytes: 387_000, KmaxBytes: 774_000, Pmax: 0.003},
		" 0/1MB/0.05 ":      {KminBytes: 0, KmaxBytes: 1_000_000, Pmax: 0.05},
		"1MiB/2MiB/100%":    {KminBytes: 1 << 20, KmaxBytes: 2 << 20, Pmax: 1},
		"500KB/500KB/ 1 % ": {KminBytes: 500_000, KmaxBytes: 500_000, Pmax: 0.01},
	} {
		got, err := ParseFixed(in)
		if err != nil || got.KminBytes != want.KminBytes || got.KmaxBytes != want.KmaxBytes || abs(got.Pmax-want.Pmax) > 1e-12 {
			t.Errorf("ParseFixed(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"":                 "want KMIN/KMAX/PMAX",
		"1MB/2MB":          "want KMIN/KMAX/PMAX",
		"x/2MB/1%":         "kmin",
		"1MB/two/1%":       "kmax",
		"1MB/2MB/lots":     "not a number",
		"2MB/1MB/1%":       "kmin 2MB is above kmax 1MB",
		"0/0/1%":           "kmax must be above 0",
		"1MB/2MB/0%":       "outside (0, 100%]",
		"1MB/2MB/101%":     "pmax 101% is outside (0, 100%]",
		"1MB/2MB/1.5":      "pmax 1.5 is outside (0, 100%]",
		"1MB/2MB/NaN":      "not a number",
		"-1KB/2MB/1%":      "negative",
		"1MB/2MB/1%/extra": "want KMIN/KMAX/PMAX",
	} {
		if _, err := ParseFixed(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseFixed(%q) err = %v, want it to contain %q", in, err, msg)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestFixedScalesAndIsNotAPreset(t *testing.T) {
	p, err := Lookup("fixed:400KB/800KB/1%")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "fixed:400KB/800KB/1%" {
		t.Fatalf("name %q", p.Name())
	}
	obs := []env.Observation{
		{Key: env.QueueKey{Port: "a"}, RateBps: 25e9, Current: env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.5, HeadroomBytes: 9000}},
		{Key: env.QueueKey{Port: "b"}, RateBps: 400e9},
	}
	ds := p.Decide(obs)
	if s := ds[0].Setting; s.KminBytes != 100_000 || s.KmaxBytes != 200_000 || s.Pmax != 0.01 || s.HeadroomBytes != 9000 {
		t.Errorf("at 25G: %+v", s)
	}
	if s := ds[1].Setting; s.KminBytes != 1_600_000 || s.KmaxBytes != 3_200_000 {
		t.Errorf("at 400G: %+v", s)
	}
	if !strings.HasPrefix(ds[0].Reason, "fixed 400KB/800KB/1%") {
		t.Errorf("reason %q", ds[0].Reason)
	}
	if _, err := Lookup("fixed:1MB"); err == nil || !strings.Contains(err.Error(), `policy "fixed:1MB"`) {
		t.Errorf("bad fixed spec: %v", err)
	}
}

func TestSchedule(t *testing.T) {
	p, err := Lookup("schedule:sonic-default, 3ms=387KB/774KB/0.3%, 6ms=hpcc")
	if err != nil {
		t.Fatal(err)
	}
	// The simulator's first observation comes one interval (100 µs) in:
	// the schedule's clock starts at the start of that interval.
	at := func(ns int64) env.Setting {
		o := env.Observation{RateBps: 100e9, TimeNs: ns, Valid: true}
		o.Metrics.IntervalNs = 100_000
		return p.Decide([]env.Observation{o})[0].Setting
	}
	sonic, _ := Preset("sonic-default")
	hpcc, _ := Preset("hpcc")
	mid := env.Setting{KminBytes: 387_000, KmaxBytes: 774_000, Pmax: 0.003}
	for _, c := range []struct {
		ns   int64
		want env.Setting
	}{{100_000, sonic.Setting(100e9)}, {2_999_999, sonic.Setting(100e9)}, {3_000_000, mid}, {5_900_000, mid},
		{6_000_000, hpcc.Setting(100e9)}, {60_000_000, hpcc.Setting(100e9)}} {
		if got := at(c.ns); got != c.want {
			t.Errorf("at %d ns: %+v, want %+v", c.ns, got, c.want)
		}
	}
	// Offsets are relative to the first observation, not absolute times
	// (against switches TimeNs is wall-clock time).
	q, _ := NewSchedule("hpcc,1s=sonic-default")
	o := env.Observation{RateBps: 100e9, TimeNs: 1_700_000_000_000_000_000}
	o.Metrics.IntervalNs = 500_000_000 // the clock starts 0.5 s before the first observation
	if d := q.Decide([]env.Observation{o}); d[0].Setting != hpcc.Setting(100e9) || !strings.Contains(d[0].Reason, "schedule step 1") {
		t.Errorf("first decision: %+v", d[0])
	}
	o.TimeNs += 1_000_000_000
	if d := q.Decide([]env.Observation{o}); d[0].Setting != sonic.Setting(100e9) || !strings.Contains(d[0].Reason, "schedule step 2 (from 1s)") {
		t.Errorf("one second later: %+v", d[0])
	}
	if ds := q.Decide(nil); len(ds) != 0 {
		t.Errorf("no observations: %v", ds)
	}
	for spec, msg := range map[string]string{
		"":                          "empty schedule",
		"hpcc,sonic-default":        "entry 2 \"sonic-default\": needs an offset",
		"1ms=hpcc":                  "the first entry starts at 0",
		"hpcc,3ms=nvidia,2ms=cisco": "offset 2ms is not after the previous entry's 3ms",
		"hpcc,3ms=nvidia,3ms=cisco": "is not after",
		"hpcc,soon=nvidia":          "entry 2 \"soon=nvidia\": offset",
		"hpcc,3ms=nope":             `unknown preset "nope"`,
		"hpcc,3ms=2MB/1MB/1%":       "kmin 2MB is above kmax 1MB",
	} {
		if _, err := NewSchedule(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("NewSchedule(%q) err = %v, want it to contain %q", spec, err, msg)
		}
	}
	a, _ := Lookup("schedule:hpcc,1ms=cisco")
	b, _ := Lookup("schedule:hpcc,1ms=cisco")
	if a == b {
		t.Fatal("each Lookup must return a fresh schedule (it keeps its start time)")
	}
}

// TestSpecWarnings: a threshold below one MTU in a fixed: or schedule:
// spec is warned about (not refused); presets and sane settings are not.
func TestSpecWarnings(t *testing.T) {
	for spec, want := range map[string][]string{
		"fixed:400B/1600KB/0.2":                                         {"kmin 400B is below one MTU"},
		"fixed:400B/1000B/20%+headroom=floor":                           {"kmin 400B is below one MTU", "kmax 1KB is below one MTU"},
		"fixed:400B/1600KB/1%+alpha=2+headroom=floor":                   {"kmin 400B is below one MTU"},
		"fixed:400B/1600KB/1%+headroom=floor+alpha=2":                   {"kmin 400B is below one MTU"},
		"schedule:sonic-default,3ms=100B/774KB/1%":                      {"entry 2 (at 3ms): kmin 100B is below one MTU"},
		"schedule:builtin:prefer=1,3ms=fixed:100B/774KB/1%,6ms=builtin": {"entry 2 (at 3ms): kmin 100B is below one MTU"},
		"schedule:1KB/2MB/1%,5ms=sonic-default":                         {"entry 1 (at 0s): kmin 1KB is below one MTU"},
		"fixed:400KB/1600KB/0.2":                                        nil,
		"schedule:sonic-default,3ms=387KB/774KB/1%":                     nil,
		"static:hpcc":          nil,
		"fixed:400/1600KB/0.2": nil, // refused by Lookup instead
		"builtin":              nil,
	} {
		got := SpecWarnings(spec)
		if len(got) != len(want) {
			t.Errorf("SpecWarnings(%q) = %q, want %d warnings", spec, got, len(want))
			continue
		}
		for i, w := range want {
			if !strings.Contains(got[i], w) {
				t.Errorf("SpecWarnings(%q)[%d] = %q, want it to say %q", spec, i, got[i], w)
			}
		}
	}
}

// TestSchedulePolicies: an entry may be a policy: it decides while its
// entry holds (the same decisions it gives alone, its reason after the
// step's), a hold outside its validated interval stays a hold, and specs
// that cannot be entries are refused by name.
func TestSchedulePolicies(t *testing.T) {
	p, err := Lookup("schedule:builtin:prefer=1, 3ms=sonic-default, 6ms=builtin")
	if err != nil {
		t.Fatal(err)
	}
	lat, _ := Lookup("builtin:prefer=1")
	base, _ := Lookup("builtin")
	sonic, _ := Preset("sonic-default")
	o := validObs(100e9, env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2})
	o.Metrics.IntervalNs = 500_000 // within the models' validated intervals
	// an observation on which the two models' entries differ
	rng := rand.New(rand.NewPCG(3, 4))
	for try := 0; try < 1000; try++ {
		for i := range o.Features {
			o.Features[i] = rng.Float32()
		}
		o.Features[env.FeatValid] = 1
		if lat.Decide([]env.Observation{o})[0].Setting != base.Decide([]env.Observation{o})[0].Setting {
			break
		}
	}
	differ := false
	for _, c := range []struct {
		ns   int64
		step int
		want Policy
	}{{500_000, 1, lat}, {2_500_000, 1, lat}, {3_000_000, 2, nil}, {6_000_000, 3, base}, {9_000_000, 3, base}} {
		o.TimeNs = c.ns
		got := p.Decide([]env.Observation{o})[0]
		var want Decision
		if c.want != nil {
			want = c.want.Decide([]env.Observation{o})[0]
		} else {
			want = Decision{Setting: sonic.Setting(100e9)}
		}
		prefix := fmt.Sprintf("schedule step %d (from ", c.step)
		if got.Setting != want.Setting || !strings.HasPrefix(got.Reason, prefix) || (c.want != nil && !strings.HasSuffix(got.Reason, "): "+want.Reason)) {
			t.Errorf("at %d ns: %+v, want %+v from step %d", c.ns, got, want, c.step)
		}
		if c.want == lat {
			b := base.Decide([]env.Observation{o})[0]
			differ = differ || b.Setting != want.Setting
		}
	}
	if !differ {
		t.Error("builtin and builtin:prefer=1 chose the same setting: the test cannot tell the entries apart")
	}
	// the model holds outside its validated intervals, inside a schedule too
	q, _ := Lookup("schedule:builtin,1h=hpcc")
	o.TimeNs, o.Metrics.IntervalNs = 10_000_000_000, int64(10*time.Second)
	d := q.Decide([]env.Observation{o})[0]
	if why := HoldText(d.Reason); d.Held != HoldInterval || d.Setting != o.Current || !strings.HasPrefix(why, "counters over 10s") {
		t.Errorf("a schedule's model outside its interval: %+v (held %v %q)", d, d.Held, why)
	}
	for spec, msg := range map[string]string{
		"hpcc,3ms=model:tuned,prefer=0.5":          "model:NAME,prefer=P cannot be one (write model:NAME:prefer=P)",
		"hpcc,3ms=model:tuned":                     "no model registry",
		"hpcc,3ms=builtin:prefer=3":                "[-1, 1]",
		"hpcc,3ms=schedule:hpcc":                   "a schedule cannot hold a schedule",
		"hpcc,3ms=roles:host=hpcc;fabric=nvidia":   "cannot hold roles:",
		"hpcc,3ms=":                                "entry 2 \"3ms=\": nothing to apply",
		"builtin:prefer=1,builtin":                 "entry 2 \"builtin\": needs an offset",
		"hpcc,3ms=adaptive:x":                      "adaptive takes no argument",
		"hpcc,3ms=static:nope":                     "nope",
		"hpcc,3ms=fixed:2MB/1MB/1%":                "kmin 2MB is above kmax 1MB",
		"hpcc,3ms=builtin:prefer=1,1ms=builtin":    "offset 1ms is not after",
		"hpcc,3ms=builtin:prefer=1,soon=hpcc,ok=x": "entry 3 \"soon=hpcc\": offset",
		"hpcc,00:01=builtin":                       "00:01 is a time of day; schedule: takes offsets",
		"08:00=hpcc":                               "daily:HH:MM=WHAT",
	} {
		if _, err := NewSchedule(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("NewSchedule(%q) err = %v, want it to contain %q", spec, err, msg)
		}
	}
	// a model from a registry, through the Resolver
	r := tunedResolver()
	s, err := r.Lookup("schedule:hpcc,3ms=model:tuned")
	if err != nil {
		t.Fatal(err)
	}
	o.Metrics.IntervalNs = 500_000
	for _, o.TimeNs = range []int64{500_000, 1_000_000} {
		if d := s.Decide([]env.Observation{o})[0]; d.Reason != "schedule step 1 (from 0s): preset hpcc" {
			t.Errorf("hpcc in force: %+v", d)
		}
	}
	o.TimeNs = 3_500_000
	if d := s.Decide([]env.Observation{o})[0]; !strings.HasPrefix(d.Reason, "schedule step 2 (from 3ms): ") || d.Action < 0 {
		t.Errorf("model:tuned in force: %+v", d)
	}
	// with a preference, in the colon form a schedule entry can hold
	sp, err := r.Lookup("schedule:hpcc,3ms=model:tuned:prefer=1")
	if err != nil {
		t.Fatal(err)
	}
	alone, err := r.Lookup("model:tuned:prefer=1")
	if err != nil {
		t.Fatal(err)
	}
	o.TimeNs = 500_000
	sp.Decide([]env.Observation{o})
	o.TimeNs = 3_500_000
	want := alone.Decide([]env.Observation{o})[0]
	if d := sp.Decide([]env.Observation{o})[0]; d.Setting != want.Setting || d.Reason != "schedule step 2 (from 3ms): "+want.Reason {
		t.Errorf("model:tuned:prefer=1 in force: %+v, want %+v", d, want)
	}
	if _, err := r.Lookup("schedule:hpcc,3ms=model:other"); !errors.Is(err, models.ErrNotFound) {
		t.Errorf("absent model in a schedule: %v", err)
	}
}

// TestHoldText reads why a decision held past the prefixes wrappers put
// before a reason (for logs and tables; the hold itself is Decision.Held).
func TestHoldText(t *testing.T) {
	for reason, want := range map[string]string{
		"hold: interval not measured":                            "interval not measured",
		"schedule step 2 (from 3ms): hold: counters over 10s, x": "counters over 10s, x",
		"host port, builtin: hold: counters over 2s":             "counters over 2s",
	} {
		if got := HoldText(reason); got != want {
			t.Errorf("HoldText(%q) = %q, want %q", reason, got, want)
		}
	}
}

// A hold is typed and passes through every wrapper: outside its validated
// intervals the model's decisions say HoldInterval alone, in a schedule, in
// a role and under a headroom or alpha rule; inside, they say HoldNone.
func TestHoldPassesThroughWrappers(t *testing.T) {
	o := validObs(100e9, env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2})
	o.Features = make([]float32, env.NumFeatures)
	o.Peer = env.PeerHost
	for _, spec := range []string{"builtin", "schedule:builtin,1h=hpcc", "roles:host=builtin;fabric=static:hpcc", "builtin+headroom=floor", "builtin+alpha=1"} {
		p, err := Lookup(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			iv   time.Duration
			want Hold
		}{{10 * time.Second, HoldInterval}, {time.Millisecond, HoldNone}} {
			o.Metrics.IntervalNs = int64(c.iv)
			if d := p.Decide([]env.Observation{o})[0]; d.Held != c.want {
				t.Errorf("%s at %v: held %v, want %v (%q)", spec, c.iv, d.Held, c.want, d.Reason)
			}
		}
	}
	for _, h := range []Hold{HoldNone, HoldUndecided, HoldInterval} {
		var back Hold
		if b, err := h.MarshalText(); err != nil || back.UnmarshalText(b) != nil || back != h {
			t.Errorf("hold %v does not read back (%v)", h, back)
		}
	}
	if err := new(Hold).UnmarshalText([]byte("later")); err == nil {
		t.Error(`hold "later" read`)
	}
	roles, _ := Lookup("roles:host=builtin;fabric=static:hpcc")
	o.Peer = env.PeerUnknown
	if d := roles.Decide([]env.Observation{o})[0]; d.Held != HoldUndecided {
		t.Errorf("roles: without other= on an unknown peer: held %v (%q)", d.Held, d.Reason)
	}
}

// countPolicy counts the batches it is asked to decide.
type countPolicy struct{ n *int }

func (countPolicy) Name() string { return "count" }
func (c countPolicy) Decide(obs []env.Observation) []Decision {
	*c.n++
	return make([]Decision, len(obs))
}

// Only the entry in force is asked to decide (a stateful policy in a later
// entry starts when its entry does).
func TestScheduleAsksOnlyTheEntryInForce(t *testing.T) {
	var a, b int
	s := &Schedule{name: "t", offsets: []time.Duration{0, time.Millisecond}, from: []string{"0s", "1ms"}, steps: []Policy{countPolicy{&a}, countPolicy{&b}}}
	o := env.Observation{TimeNs: 100_000}
	o.Metrics.IntervalNs = 100_000
	for _, o.TimeNs = range []int64{100_000, 500_000, 1_100_000, 2_000_000} {
		s.Decide([]env.Observation{o})
	}
	if a != 2 || b != 2 {
		t.Errorf("entries asked %d and %d times, want 2 and 2", a, b)
	}
}

// A +headroom= or +alpha= rule applies to a whole schedule, after its last
// entry; inside one it is refused by name.
func TestScheduleRules(t *testing.T) {
	p, err := Lookup("schedule:sonic-default,3ms=builtin+headroom=floor")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*Headroom); !ok {
		t.Errorf("schedule with +headroom=floor: %T, want the rule around the schedule", p)
	}
	for _, spec := range []string{"schedule:sonic-default,3ms=builtin+headroom=floor,6ms=nvidia", "daily:08:00=builtin+alpha=2,20:00=nvidia"} {
		if _, err := Lookup(spec); err == nil || !strings.Contains(err.Error(), "inside a schedule: give it after the last entry") {
			t.Errorf("Lookup(%q): %v", spec, err)
		}
	}
}

// tunedResolver resolves model:tuned to the embedded model and any other
// name to models.ErrNotFound.
func tunedResolver() Resolver {
	return Resolver{Models: func(ref string) (models.Model, error) {
		if ref != "tuned" {
			return models.Model{}, models.ErrNotFound
		}
		return builtin.Model()
	}}
}
