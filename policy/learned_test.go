package policy

import (
	"errors"
	"fmt"
	"github.com/ecntune/ecntune/internal/cputime"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/policy/nn"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/train/rl"
)

// biasNet is a network whose output does not depend on the input: all
// weights zero, output biases given. Action best wins by margin.
func biasNet(t testing.TB, kind rl.OutputKind, best int, margin float32) *rl.Net {
	t.Helper()
	cat := env.DefaultCatalogue()
	n, err := rl.NewNet(rl.Arch{In: env.NumFeatures, Hidden: []int{8}, Out: cat.ECNLen(), Act: rl.ReLU})
	if err != nil {
		t.Fatal(err)
	}
	n.Kind = kind
	out := &n.Layers[len(n.Layers)-1]
	for j := range out.B {
		out.B[j] = float32(j%5) * 0.01
	}
	out.B[best] = 0.04 + margin
	return n
}

func validObs(rate float64, cur env.Setting) env.Observation {
	f := make([]float32, env.NumFeatures)
	f[env.FeatValid] = 1
	return env.Observation{Key: env.QueueKey{Target: "leaf0", Port: "Ethernet1", Queue: 3}, RateBps: rate, Current: cur,
		Valid: true, Features: f, Metrics: env.Metrics{IntervalNs: 1e6, Util: 0.93, AvgQueueFrac: 2.1, MarkFrac: 0.04}}
}

func TestLearnedDecide(t *testing.T) {
	cat := env.DefaultCatalogue()
	best := cat.Absolute(8, 0, 1) // kmin 387KB kmax 774KB pmax 1% at 100G
	l, err := NewLearned("model:x", biasNet(t, rl.OutputQ, best, 0.31), cat, 0)
	if err != nil {
		t.Fatal(err)
	}
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 90_000}
	bad := validObs(100e9, cur)
	bad.Valid, bad.Problem = false, "counter reset: tx_pkts went back"
	norate := validObs(0, cur)
	obs := []env.Observation{validObs(100e9, cur), bad, validObs(25e9, cur), norate}
	ds := l.Decide(obs)
	if len(ds) != 4 {
		t.Fatalf("%d decisions for 4 observations", len(ds))
	}
	d := ds[0]
	want := env.Setting{KminBytes: 387_000, KmaxBytes: 774_000, Pmax: 0.01, HeadroomBytes: 90_000}
	if d.Action != best || d.Setting != want {
		t.Fatalf("decision %+v, want action %d setting %+v", d, best, want)
	}
	if want := rl.SoftmaxMargin(biasNet(t, rl.OutputQ, best, 0.31).Layers[1].B, DefaultQTemperature); math.Abs(d.Confidence-want) > 1e-9 || d.Confidence < 0.5 {
		t.Fatalf("confidence %g, want %g (> 0.5 for a 0.31 margin at temperature %g)", d.Confidence, want, DefaultQTemperature)
	}
	// no undefined terms: the score lead, the queue in bytes, marks and
	// pauses as shares
	wantReason := "kmin 400KB→387KB, kmax 1.6MB→774KB, pmax 20%→1%: score lead 0.31, util 93%, avg queue 525KB, ECN-marked 4%, PFC-paused 0%"
	if d.Reason != wantReason {
		t.Fatalf("reason\n %q\nwant\n %q", d.Reason, wantReason)
	}
	if ds[1].Setting != cur || ds[1].Confidence != 0 || !strings.Contains(ds[1].Reason, "counter reset") {
		t.Fatalf("invalid observation: %+v, want a hold with confidence 0 naming the problem", ds[1])
	}
	if ds[2].Setting.KmaxBytes != 193_500 || ds[2].Setting.KminBytes != 96_750 {
		t.Fatalf("at 25G: %+v, want the 100G setting scaled by 1/4", ds[2].Setting)
	}
	if ds[3].Setting != cur || !strings.Contains(ds[3].Reason, "link rate 0") {
		t.Fatalf("unknown rate: %+v", ds[3])
	}
	// The reason says what the port faces when it is known.
	fab, host := validObs(100e9, cur), validObs(100e9, cur)
	fab.Peer, host.Peer = env.PeerSwitch, env.PeerHost
	if r := l.Decide([]env.Observation{fab, host}); !strings.HasSuffix(r[0].Reason, ", fabric port") ||
		!strings.HasSuffix(r[1].Reason, ", host port") {
		t.Fatalf("reasons with a known peer: %q, %q", r[0].Reason, r[1].Reason)
	}
	// Holding: the chosen setting is the current one.
	held := l.Decide([]env.Observation{validObs(100e9, want)})[0]
	if !strings.HasPrefix(held.Reason, "hold kmin 387KB kmax 774KB pmax 1%: score lead 0.31") {
		t.Fatalf("hold reason %q", held.Reason)
	}
	lg, err := NewLearned("builtin", biasNet(t, rl.OutputLogits, best, 8), cat, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := lg.Decide(obs[:1])[0]; d.Action != best || !strings.Contains(d.Reason, "probability lead ") || d.Confidence < 0.5 {
		t.Fatalf("logits policy: %+v", d)
	}
	if got := l.Decide(nil); len(got) != 0 {
		t.Fatalf("Decide(nil) = %v", got)
	}
}

func TestNewLearnedErrors(t *testing.T) {
	cat := env.DefaultCatalogue()
	wrongIn, _ := rl.NewNet(rl.Arch{In: 5, Out: cat.ECNLen(), Act: rl.ReLU})
	wrongIn.Kind = rl.OutputQ
	wrongOut, _ := rl.NewNet(rl.Arch{In: env.NumFeatures, Out: 9, Act: rl.ReLU})
	wrongOut.Kind = rl.OutputQ
	value := biasNet(t, rl.OutputValue, 0, 1)
	for _, c := range []struct {
		net  *rl.Net
		want string
	}{{nil, "no network"}, {wrongIn, "reads 5 features"}, {wrongOut, "has 9 outputs"}, {value, "outputs value"}} {
		if _, err := NewLearned("m", c.net, cat, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want %q", err, c.want)
		}
	}
}

func TestModelLookupFromRegistry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reg.db")
	reg, err := models.Open(path, models.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	cat := env.DefaultCatalogue()
	w, err := biasNet(t, rl.OutputQ, cat.Absolute(4, 0, 1), 0.2).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	base := models.Model{Name: "tuned", Algorithm: "ddqn", ObsSpec: env.SpecVersion, ActSpec: env.ActionSpecVersion,
		Created: time.Unix(0, 0).UTC(), Weights: w}
	if _, err := reg.Put(base); err != nil {
		t.Fatal(err)
	}
	old := base
	old.Name, old.ObsSpec = "old", "obs-v0"
	if _, err := reg.Put(old); err != nil {
		t.Fatal(err)
	}
	reg.Close()
	if _, err := Lookup("model:tuned"); err == nil || !strings.Contains(err.Error(), "no model registry") {
		t.Fatalf("model:tuned without a model source: err = %v", err)
	}
	r := Resolver{Models: func(ref string) (models.Model, error) { return models.Load(path, ref) }}
	Lookup := r.Lookup
	p, err := Lookup("model:tuned")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "model:tuned" {
		t.Fatalf("name %q", p.Name())
	}
	if d := p.Decide([]env.Observation{validObs(100e9, env.Setting{KmaxBytes: 1, Pmax: 1})})[0]; d.Action != cat.Absolute(4, 0, 1) {
		t.Fatalf("model:tuned decided %+v", d)
	}
	if p, err := Lookup("model:tuned,prefer=-0.5"); err != nil || p.Name() != "model:tuned,prefer=-0.5" || p.(*Learned).Preference() != -0.5 {
		t.Fatalf("model:tuned,prefer=-0.5: %v %v", p, err)
	}
	if p, err := Lookup("model:tuned:prefer=-0.5"); err != nil || p.Name() != "model:tuned:prefer=-0.5" || p.(*Learned).Preference() != -0.5 {
		t.Fatalf("model:tuned:prefer=-0.5: %v %v", p, err)
	}
	if _, err := Lookup("model:tuned,prefer=3"); err == nil || !strings.Contains(err.Error(), "[-1, 1]") {
		t.Fatalf("preference 3: err = %v", err)
	}
	if _, err := Lookup("model:,prefer=0"); err == nil || !strings.Contains(err.Error(), "want model:NAME") {
		t.Fatalf("no model name: err = %v", err)
	}
	if _, err := Lookup("model:old"); !errors.Is(err, models.ErrSpecMismatch) {
		t.Fatalf("model trained on obs-v0: err = %v, want a spec mismatch", err)
	}
	if _, err := Lookup("model:absent"); !errors.Is(err, models.ErrNotFound) {
		t.Fatalf("absent model: err = %v, want not found", err)
	}
	if _, err := Lookup("model:"); err == nil || !strings.Contains(err.Error(), "want model:NAME") {
		t.Fatalf("empty model name: err = %v", err)
	}
	none := filepath.Join(t.TempDir(), "none.db")
	r.Models = func(ref string) (models.Model, error) { return models.Load(none, ref) }
	if _, err := r.Lookup("model:tuned"); !errors.Is(err, models.ErrNoRegistry) {
		t.Fatalf("missing registry: err = %v", err)
	}
}

// leanNet is a network (logits) whose scores do not depend on the input:
// best first, then near-ties gap nats below it, per action.
func leanNet(t testing.TB, best int, gaps map[int]float32) *rl.Net {
	t.Helper()
	n := biasNet(t, rl.OutputLogits, best, 0)
	out := &n.Layers[len(n.Layers)-1]
	for j := range out.B {
		out.B[j] = -20
	}
	out.B[best] = 0
	for a, g := range gaps {
		out.B[a] = -g
	}
	return n
}

func TestLearnedPreference(t *testing.T) {
	cat := env.DefaultCatalogue()
	// At 100G: best Kmax 774 KB; near-ties 1.29 MB (1 nat below), a step
	// Kmin at 774 KB (0.5 below), 464 KB (2 below), 10 MB (4 below).
	best, looser, step, tighter, far := cat.Absolute(8, 0, 0), cat.Absolute(10, 0, 1), cat.Absolute(8, 1, 0),
		cat.Absolute(6, 0, 0), cat.Absolute(18, 1, 0)
	l, err := NewLearned("model:p", leanNet(t, best, map[int]float32{looser: 1, step: 0.5, tighter: 2, far: 4}), cat, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.Preference() != 0 {
		t.Fatalf("preference %g", l.Preference())
	}
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	obs := []env.Observation{validObs(100e9, cur), validObs(25e9, cur)}
	for _, c := range []struct {
		p    float64
		want int
	}{{0, best}, {-0.1, best}, {-0.25, step}, {-0.5, looser}, {-1, looser}, {0.5, best}, {0.7, tighter}, {1, tighter}} {
		lp, err := l.WithPreference("model:p,prefer=x", c.p)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range lp.Decide(obs) {
			if d.Action != c.want {
				t.Fatalf("prefer %g, queue %d: %s, want %s", c.p, i, cat.Describe(d.Action), cat.Describe(c.want))
			}
			if named := strings.Contains(d.Reason, "prefer"); named != (c.p != 0) {
				t.Fatalf("prefer %g: reason %q", c.p, d.Reason)
			}
			if leaned := strings.Contains(d.Reason, "model's best"); leaned != (c.want != best) {
				t.Fatalf("prefer %g: reason %q (should name the model's own best only when it differs)", c.p, d.Reason)
			}
		}
		if lp.Name() != "model:p,prefer=x" || lp.Preference() != c.p || l.Preference() != 0 {
			t.Fatalf("copy %q %g, original %g", lp.Name(), lp.Preference(), l.Preference())
		}
	}
	lp, _ := l.WithPreference("model:p,prefer=-0.5", -0.5)
	if got, want := lp.Decide(obs[:1])[0].Reason, ", prefer -0.5 (model's best kmin 387KB kmax 774KB pmax 0.3%, 1 nats ahead)"; !strings.HasSuffix(got, want) {
		t.Fatalf("reason %q, want it to end with %q", got, want)
	}
	// On a fabric port the preference is not applied, and the reason says so;
	// a host port and an unknown peer lean as above.
	lp, _ = l.WithPreference("model:p,prefer=-1", -1)
	peered := []env.Observation{validObs(100e9, cur), validObs(100e9, cur), validObs(100e9, cur)}
	peered[0].Peer, peered[1].Peer = env.PeerSwitch, env.PeerHost
	ds := lp.Decide(peered)
	if ds[0].Action != best || !strings.HasSuffix(ds[0].Reason, ", fabric port, prefer -1 not applied (fabric port)") {
		t.Fatalf("fabric port at prefer -1: %s, %q; want the model's best, preference not applied", cat.Describe(ds[0].Action), ds[0].Reason)
	}
	if ds[1].Action != looser || ds[2].Action != looser {
		t.Fatalf("host port / unknown peer at prefer -1: %s / %s, want %s", cat.Describe(ds[1].Action), cat.Describe(ds[2].Action), cat.Describe(looser))
	}
	// A NaN score is never taken.
	nanNet := leanNet(t, best, map[int]float32{looser: 1})
	nanNet.Layers[len(nanNet.Layers)-1].B[far] = float32(math.NaN())
	ln, err := NewLearned("model:nan", nanNet, cat, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ln, _ = ln.WithPreference("nan", -1); ln.Decide(obs[:1])[0].Action != looser {
		t.Fatalf("prefer -1 with a NaN score: %s, want %s", cat.Describe(ln.Decide(obs[:1])[0].Action), cat.Describe(looser))
	}
	// A Q network: the span is in temperatures (0.05 reward units).
	q, err := NewLearned("model:q", biasNet(t, rl.OutputQ, best, 0.05), cat, 0)
	if err != nil {
		t.Fatal(err)
	}
	if lq, _ := q.WithPreference("q", -0.5); lq.Decide(obs[:1])[0].Action == best {
		t.Fatal("Q policy at prefer -0.5 (span 0.075) kept its best action: actions 0.05 below it are near-ties")
	}
	if lq, _ := q.WithPreference("q", -0.2); lq.Decide(obs[:1])[0].Action != best {
		t.Fatal("Q policy at prefer -0.2 (span 0.03) left an action 0.05 ahead of the rest")
	}
	for _, p := range []float64{-1.5, 2, math.NaN(), math.Inf(1)} {
		if _, err := l.WithPreference("x", p); err == nil || !strings.Contains(err.Error(), "[-1, 1]") {
			t.Errorf("prefer %g: err = %v, want a range error", p, err)
		}
	}
}

func TestCutPreference(t *testing.T) {
	for _, c := range []struct {
		arg, rest string
		p         float64
		set       bool
		err       string
	}{
		{"tuned", "tuned", 0, false, ""},
		{"tuned@3", "tuned@3", 0, false, ""},
		{"tuned,prefer=-0.5", "tuned", -0.5, true, ""},
		{"tuned:prefer=-0.5", "tuned", -0.5, true, ""},
		{"tuned@3:prefer=1", "tuned@3", 1, true, ""},
		{"tuned:prefer=2", "", 0, false, "[-1, 1]"},
		{"tuned:speed=1", "", 0, false, "want prefer=P"},
		{"tuned:prefer=0.5,prefer=1", "", 0, false, "one prefer=P option"},
		{"tuned,prefer=0.5:prefer=1", "", 0, false, "not a number"},
		{"prefer=1", "", 1, true, ""},
		{"", "", 0, false, ""},
		{"tuned,prefer=2", "", 0, false, "[-1, 1]"},
		{"tuned,prefer=abc", "", 0, false, "not a number"},
		{"tuned,speed=1", "", 0, false, "want prefer=P"},
	} {
		rest, p, set, err := SplitPreference(c.arg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v, want %q", c.arg, err, c.err)
			}
			continue
		}
		if err != nil || rest != c.rest || p != c.p || set != c.set {
			t.Errorf("%q: %q %g %v %v, want %q %g %v", c.arg, rest, p, set, err, c.rest, c.p, c.set)
		}
	}
}

func TestBuiltinResolves(t *testing.T) {
	p, err := Lookup("builtin")
	if err != nil {
		t.Fatal(err)
	}
	l, ok := p.(*Learned)
	if !ok || p.Name() != "builtin" {
		t.Fatalf("builtin is %T %q", p, p.Name())
	}
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	o := validObs(100e9, cur)
	d := l.Decide([]env.Observation{o})[0]
	ecn := simenv.ECN{KminBytes: d.Setting.KminBytes, KmaxBytes: d.Setting.KmaxBytes, Pmax: d.Setting.Pmax}
	if d.Action < 0 || d.Action >= env.DefaultCatalogue().Len() || ecn.Validate() != nil || d.Confidence < 0 || d.Confidence > 1 {
		t.Fatalf("builtin decided %+v", d)
	}
	for _, spec := range []string{"builtin::prefer=1", "builtin:,prefer=1"} {
		if _, err := Lookup(spec); err == nil || !strings.Contains(err.Error(), "builtin takes no argument but prefer=P") {
			t.Errorf("%s: err = %v", spec, err)
		}
	}
	if _, err := Lookup("builtin:x"); err == nil {
		t.Fatal("builtin:x accepted")
	}
	if p, err := Lookup("builtin:prefer=-0.25"); err != nil || p.Name() != "builtin:prefer=-0.25" || p.(*Learned).Preference() != -0.25 {
		t.Fatalf("builtin:prefer=-0.25: %v %v", p, err)
	}
}

func benchDecide(b *testing.B, n int, pref float64) {
	cat := env.DefaultCatalogue()
	net, err := rl.InitNet(rl.Arch{In: env.NumFeatures, Hidden: []int{64, 64}, Out: cat.ECNLen(), Act: rl.ReLU},
		rand.New(rand.NewPCG(1, 2)), 1)
	if err != nil {
		b.Fatal(err)
	}
	net.Kind = rl.OutputQ
	l, err := NewLearned("bench", net, cat, 0)
	if err != nil {
		b.Fatal(err)
	}
	if l, err = l.WithPreference("bench", pref); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	obs := make([]env.Observation, n)
	for i := range obs {
		obs[i] = validObs(100e9, env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2})
		f := make([]float32, env.NumFeatures)
		for j := range f {
			f[j] = rng.Float32()
		}
		obs[i].Features = f
	}
	b.ResetTimer()
	cpu0 := cputime.Process()
	for b.Loop() {
		l.Decide(obs)
	}
	// Wall time per queue (a batch uses every core), and the CPU it costs.
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/queue")
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/queue")
}

// Decision latency per queue, batched (64x64 hidden, 83 actions), and with
// a preference (the tie-break scans the scores once more per queue).
func BenchmarkLearnedDecide1k(b *testing.B)       { benchDecide(b, 1000, 0) }
func BenchmarkLearnedDecide10k(b *testing.B)      { benchDecide(b, 10000, 0) }
func BenchmarkLearnedDecidePrefer1k(b *testing.B) { benchDecide(b, 1000, -0.5) }

// Outside the decision intervals it was validated for, a learned policy
// holds every queue and says why; inside, it decides.
func TestLearnedHoldsOutsideValidInterval(t *testing.T) {
	m, l := baseModel(t)
	lo, hi := l.ValidInterval()
	if lo <= 0 || hi < lo {
		t.Fatalf("builtin valid interval %v to %v", lo, hi)
	}
	o := validObs(100e9, env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2})
	o.Features = make([]float32, env.NumFeatures)
	for _, c := range []struct {
		iv   time.Duration
		hold bool
	}{{lo, false}, {hi, false}, {hi * 2, true}, {time.Second, true}, {lo / 2, true},
		// A switch's sampling jitter (sonic-gnmi at 1 s: 1.0004 s) is inside.
		{hi + hi/20, false}, {lo - lo/20, false}, {hi + hi/5, true}, {lo - lo/5, true}} {
		o.Metrics.IntervalNs = int64(c.iv)
		d := l.Decide([]env.Observation{o})[0]
		held := strings.HasPrefix(d.Reason, "hold: counters over ")
		if held != c.hold || (held && (d.Setting != o.Current || !strings.Contains(d.Reason, "outside the decision intervals the model was validated for"))) {
			t.Errorf("interval %v: %+v", c.iv, d)
		}
	}
	if _, err := l.WithValidInterval(time.Second, time.Millisecond); err == nil {
		t.Error("lo > hi accepted")
	}
	bad := m
	bad.Hyper = map[string]string{"validated_interval": "fast"}
	if _, err := LearnedFromModel("x", bad); err == nil || !strings.Contains(err.Error(), `validated_interval "fast"`) {
		t.Errorf("bad validated_interval: %v", err)
	}
}

// TestLearnedTwoHeads: an act-v3 network's second head moves the PG (here
// alpha to 1/4 and headroom to 1.5× the floor) on top of the ECN head's
// choice, the reason names it, and the confidence is the ECN head's.
func TestLearnedTwoHeads(t *testing.T) {
	cat := env.DefaultCatalogue()
	best := cat.Absolute(8, 0, 1)
	for _, c := range []struct {
		pfc  int
		want func(env.Setting) env.Setting
		text string
	}{
		{1 + 2, func(s env.Setting) env.Setting { s.HeadroomBytes = 90_000; return s }, "headroom 72KB→90KB"},
		{1 + 4 + 2, func(s env.Setting) env.Setting { s.Alpha = 0.25; return s }, "alpha 1→1/4"},
		{0, func(s env.Setting) env.Setting { return s }, "pmax 20%→1%: "},
	} {
		n, err := rl.NewNet(rl.Arch{In: env.NumFeatures, Hidden: []int{8}, Out: cat.Outputs(), Act: rl.Tanh})
		if err != nil {
			t.Fatal(err)
		}
		n.Kind = rl.OutputLogits
		out := &n.Layers[len(n.Layers)-1]
		out.B[best] = 2
		out.B[cat.ECNLen()+c.pfc] = 1
		l, err := NewLearned("model:x", n, cat, 0)
		if err != nil {
			t.Fatal(err)
		}
		cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 72_000, Alpha: 1}
		o := validObs(100e9, cur)
		o.MinHeadroomBytes = 60_000
		d := l.Decide([]env.Observation{o})[0]
		want := c.want(env.Setting{KminBytes: 387_000, KmaxBytes: 774_000, Pmax: 0.01, HeadroomBytes: 72_000, Alpha: 1})
		if d.Setting != want || d.Action != cat.Joint(best, c.pfc) {
			t.Fatalf("pfc %d: decision %+v, want action %d setting %+v", c.pfc, d, cat.Joint(best, c.pfc), want)
		}
		if !strings.Contains(d.Reason, c.text) {
			t.Fatalf("pfc %d: reason %q lacks %q", c.pfc, d.Reason, c.text)
		}
		if wantC := rl.Confidence(rl.OutputLogits, out.B[:cat.ECNLen()], 1); math.Abs(d.Confidence-wantC) > 1e-6 {
			t.Fatalf("confidence %g, want the ECN head's %g", d.Confidence, wantC)
		}
		// A floor ecntune estimated (a SONiC cable length) above the
		// vendor's headroom: a headroom action keeps the vendor's.
		o.MinHeadroomBytes, o.FloorEstimated = 150_000, true
		if d := l.Decide([]env.Observation{o})[0]; d.Setting.HeadroomBytes != cur.HeadroomBytes {
			t.Fatalf("pfc %d: estimated floor 150KB above the vendor's 72KB: headroom %d, want it kept", c.pfc, d.Setting.HeadroomBytes)
		}
		o.MinHeadroomBytes = 60_000 // an estimate below it: the action acts on it as on an exported floor
		if d := l.Decide([]env.Observation{o})[0]; d.Setting != want {
			t.Fatalf("pfc %d: estimated floor below the vendor's: %+v, want %+v", c.pfc, d.Setting, want)
		}
	}
}

// prefNet is a preference-conditioned network (logits) over this spec's
// features and the preference: action lat scores +3·p, action thr −3·p,
// every other 0, so p > 0 picks lat and p < 0 thr whatever the features.
func prefNet(t testing.TB, lat, thr int) *rl.Net {
	t.Helper()
	cat := env.DefaultCatalogue()
	n, err := rl.NewNet(rl.Arch{In: env.NumFeatures + 1, Out: cat.ECNLen(), Act: rl.Tanh})
	if err != nil {
		t.Fatal(err)
	}
	n.Kind = rl.OutputLogits
	ly := &n.Layers[0]
	ly.W[env.NumFeatures*ly.Out+lat] = 3
	ly.W[env.NumFeatures*ly.Out+thr] = -3
	return n
}

func TestConditionedTakesPreferenceAsInput(t *testing.T) {
	cat := env.DefaultCatalogue()
	lat, thr := cat.Absolute(2, 0, 2), cat.Absolute(10, 0, 0)
	net := prefNet(t, lat, thr)
	if _, err := NewLearned("plain", net, cat, 0); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d features", env.NumFeatures+1)) {
		t.Fatalf("a conditioned network taken as a plain one: err = %v", err)
	}
	l, err := NewConditioned("cond", net, cat, 0)
	if err != nil || !l.Conditioned() {
		t.Fatal(err)
	}
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}
	host, fabric := validObs(100e9, cur), validObs(100e9, cur)
	host.Peer, fabric.Peer = env.PeerHost, env.PeerSwitch
	for _, c := range []struct {
		p    float64
		want int
	}{{1, lat}, {0.25, lat}, {-0.25, thr}, {-1, thr}} {
		lp, err := l.WithPreference("cond,prefer", c.p)
		if err != nil {
			t.Fatal(err)
		}
		// Both ports: the preference is an input, not a host-port tie-break.
		for _, d := range lp.Decide([]env.Observation{host, fabric}) {
			if d.Action != c.want || !strings.Contains(d.Reason, "(model input)") {
				t.Fatalf("prefer %g: action %d (%s), want %d with the preference as model input", c.p, d.Action, d.Reason, c.want)
			}
		}
	}
	// Large batches take the column-wise path: same decisions.
	many := make([]env.Observation, 300)
	for i := range many {
		many[i] = host
	}
	lp, _ := l.WithPreference("cond,prefer", -1)
	for i, d := range lp.Decide(many) {
		if d.Action != thr {
			t.Fatalf("queue %d of 300: action %d, want %d", i, d.Action, thr)
		}
	}
	if f := host.Features; len(f) != env.NumFeatures || f[env.FeatValid] != 1 {
		t.Fatalf("Decide changed the observation's features: %v", f)
	}
}

func TestConditionedFromModel(t *testing.T) {
	cat := env.DefaultCatalogue()
	w, err := prefNet(t, cat.Absolute(2, 0, 2), cat.Absolute(10, 0, 0)).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	m := models.Model{Name: "pref", Algorithm: "ppo", ObsSpec: env.SpecVersion, ActSpec: "act-v2", Weights: w,
		Hyper: map[string]string{models.HyperPreferenceScale: "2"}}
	l, err := LearnedFromModel("model:pref", m)
	if err != nil || !l.Conditioned() {
		t.Fatalf("conditioned model: %v", err)
	}
	for _, bad := range []string{"0", "-1", "x", "+Inf"} {
		m.Hyper[models.HyperPreferenceScale] = bad
		if _, err := LearnedFromModel("model:pref", m); err == nil || !strings.Contains(err.Error(), "preference_scale") {
			t.Fatalf("preference_scale %q: err = %v", bad, err)
		}
	}
	// A plain network recorded as conditioned reads one input too few.
	if m.Weights, err = biasNet(t, rl.OutputLogits, 3, 0.1).MarshalBinary(); err != nil {
		t.Fatal(err)
	}
	m.Hyper[models.HyperPreferenceScale] = "2"
	if _, err := LearnedFromModel("model:pref", m); err == nil || !strings.Contains(err.Error(), "and the preference") {
		t.Fatalf("plain network recorded as conditioned: err = %v", err)
	}
}

// baseModel is the embedded base model and its policy (without the
// validated interval resolveBuiltin adds).
func baseModel(t *testing.T) (models.Model, *Learned) {
	t.Helper()
	m, err := builtin.Model()
	if err != nil {
		t.Fatal(err)
	}
	l, err := LearnedFromModel("builtin", m)
	if err != nil {
		t.Fatal(err)
	}
	return m, l
}

// A network whose weights are finite but overflow (±3e38) outputs NaN for
// every input: refused when the model is read (import's check, promote's
// vet, the agent's start), not run holding every queue at "lead 0.00".
func TestModelWithOverflowingWeightsRefused(t *testing.T) {
	m, _ := baseModel(t)
	net, err := nn.UnmarshalNet(m.Weights)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range net.Params() {
		for i := range p {
			p[i] = 3e38
			if i%2 == 1 {
				p[i] = -3e38
			}
		}
	}
	if m.Weights, err = net.MarshalBinary(); err != nil {
		t.Fatal(err)
	}
	if _, err := LearnedFromModel("huge", m); err == nil || !strings.Contains(err.Error(), "weights that overflow") {
		t.Fatalf("overflowing weights: %v", err)
	}
}
