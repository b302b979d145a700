package policy

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/policy/nn"
)

// DefaultQTemperature is the softmax temperature, in reward units, that
// turns the Q-value gap between a learned policy's two best actions into a
// confidence: a gap of one temperature already reads as a clear choice.
// Per-interval rewards are of order 1 (a full link scores 1), so a gap of
// 0.05 is worth one twentieth of a full link.
const DefaultQTemperature = 0.05

// Learned is a Policy over a trained network (nn.Net): one forward pass
// for the whole batch of queues, the best catalogue action per queue, its
// confidence, and a one-line reason. It is safe for concurrent use.
type Learned struct {
	name        string
	net         *nn.Net
	cat         env.Catalogue
	temperature float64
	pref        float64 // operator preference, see WithPreference
	prefNote    string  // ", prefer +0.5": the preference as reasons show it
	// prefInput: the network reads the preference as its last input (a
	// preference-conditioned model, models.HyperPreferenceScale) instead
	// of taking it as a tie-break over its scores.
	prefInput bool
	// validMin, validMax bound the decision interval (the span of the
	// counters an observation was measured over) the model was validated
	// for; 0, 0: no bound. Outside it a queue holds (WithValidInterval).
	validMin, validMax time.Duration
}

// WithValidInterval returns the policy bounded to decision intervals in
// [lo, hi]: an observation measured over a shorter or longer span of the
// switch's time holds its setting and says why, as a model's behaviour
// outside the intervals it was validated for is unknown (counters over 1 s
// average away what 500 µs windows show). lo = hi = 0 lifts the bound.
func (l *Learned) WithValidInterval(lo, hi time.Duration) (*Learned, error) {
	if lo < 0 || hi < lo || (hi == 0) != (lo == 0) {
		return nil, fmt.Errorf("learned policy %q: valid interval %v to %v: want 0 < lo <= hi (or both 0)", l.name, lo, hi)
	}
	c := *l
	c.validMin, c.validMax = lo, hi
	return &c, nil
}

// ValidInterval is the range of decision intervals the policy acts in
// (0, 0: any).
func (l *Learned) ValidInterval() (lo, hi time.Duration) { return l.validMin, l.validMax }

// outsideInterval says why o's interval is outside the validated range
// ("" when inside or unbounded).
func (l *Learned) outsideInterval(o *env.Observation) string {
	return outsideSpan(o.Metrics.IntervalNs, l.validMin, l.validMax, "the model")
}

// SpanJitter is the share by which counters' span may miss the validated
// decision intervals and still count as inside them: a switch sampling
// every T sends counters T plus its timer's jitter apart (real sonic-gnmi
// at its 1 s floor: 1.0004 s), which is the interval the model was
// validated for, not another.
const SpanJitter = 0.1

// outsideSpan says why counters measured over ns nanoseconds fall outside
// [lo, hi] widened by SpanJitter, the decision intervals what was validated
// for ("" when inside, unbounded (hi 0) or not measured).
func outsideSpan(ns int64, lo, hi time.Duration, what string) string {
	if hi == 0 || ns <= 0 {
		return ""
	}
	iv := time.Duration(ns)
	if float64(iv) >= float64(lo)*(1-SpanJitter) && float64(iv) <= float64(hi)*(1+SpanJitter) {
		return ""
	}
	return heldIntervalWhy + fmtSpan(iv) + ", outside the decision intervals " + what + " was validated for (" +
		fmtSpan(lo) + " to " + fmtSpan(hi) + ")"
}

// fmtSpan renders a duration shortly: 500µs, 1s, 1.5ms.
func fmtSpan(d time.Duration) string {
	switch {
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'g', 3, 64) + "s"
	case d >= time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'g', 3, 64) + "ms"
	}
	return strconv.FormatFloat(float64(d)/1e3, 'g', 3, 64) + "µs"
}

// NewLearned wraps net as a policy named name. The network must read
// env.NumFeatures features and give one output per action of cat (the
// zero Catalogue means env.DefaultCatalogue()), and its outputs must be
// Q-values or logits. temperature <= 0 means DefaultQTemperature.
func NewLearned(name string, net *nn.Net, cat env.Catalogue, temperature float64) (*Learned, error) {
	return newLearned(name, net, cat, temperature, false)
}

// NewConditioned is NewLearned for a network conditioned on the operator
// preference: it reads the observation's features and then the
// preference (one more input), and WithPreference sets that input.
func NewConditioned(name string, net *nn.Net, cat env.Catalogue, temperature float64) (*Learned, error) {
	return newLearned(name, net, cat, temperature, true)
}

func newLearned(name string, net *nn.Net, cat env.Catalogue, temperature float64, prefInput bool) (*Learned, error) {
	if net == nil {
		return nil, fmt.Errorf("learned policy %q: no network", name)
	}
	if cat.IsZero() {
		cat = env.DefaultCatalogue()
	}
	feats, extra := net.InDim(), ""
	if prefInput {
		feats, extra = feats-1, " (and the preference)"
	}
	if !readableDims(feats, env.ObsSpecFeatures, env.ReadableObsSpecs) || feats > env.NumFeatures {
		return nil, fmt.Errorf("learned policy %q: network reads %d features%s, observation spec %s has %d (an older spec it can read: %s)",
			name, feats, extra, env.SpecVersion, env.NumFeatures, dimsOf(env.ObsSpecFeatures, env.ReadableObsSpecs))
	}
	if !readableDims(net.OutDim(), env.ActionSpecLen, env.ReadableActionSpecs) || net.OutDim() > cat.Outputs() {
		return nil, fmt.Errorf("learned policy %q: network has %d outputs, action catalogue %s has %d actions (an older spec it can act on: %s)",
			name, net.OutDim(), env.ActionSpecVersion, cat.Outputs(), dimsOf(env.ActionSpecLen, env.ReadableActionSpecs))
	}
	if net.Kind != nn.OutputQ && net.Kind != nn.OutputLogits {
		return nil, fmt.Errorf("learned policy %q: network outputs %s, want q-values or logits", name, net.Kind)
	}
	if !(temperature > 0) || math.IsInf(temperature, 0) {
		temperature = DefaultQTemperature
	}
	return &Learned{name: name, net: net, cat: cat, temperature: temperature, prefInput: prefInput}, nil
}

// readableDims reports whether n is the size of one of specs.
func readableDims(n int, size func(string) int, specs []string) bool {
	for _, s := range specs {
		if size(s) == n {
			return true
		}
	}
	return false
}

// dimsOf lists specs with their sizes, e.g. "obs-v4 48, obs-v3 44".
func dimsOf(size func(string) int, specs []string) string {
	parts := make([]string, len(specs))
	for i, s := range specs {
		parts[i] = s + " " + strconv.Itoa(size(s))
	}
	return strings.Join(parts, ", ")
}

// PreferenceSpan is how far, at preference ±1, an action's score may lie
// below the network's best for the action to count as a near-tie: 3 nats
// of log-probability for a PPO actor (an action at least 1/20 as likely as
// the best), 3 temperatures of Q-value for DDQN (0.15 reward units at
// DefaultQTemperature). At preference p the span is |p| times this.
const PreferenceSpan = 3.0

// Preference is the operator preference the policy decides with (0
// unless set by WithPreference).
func (l *Learned) Preference() float64 { return l.pref }

// WithPreference returns a copy of the policy, named name, that leans
// toward throughput (p < 0) or latency (p > 0), p in [-1, 1]. The network
// scores every catalogue action; at p = 0 the policy takes the best. At
// p < 0 it takes, among the actions scored within |p|·PreferenceSpan of
// the best, the one that marks latest (highest Kmax, then Kmin, then the
// lowest Pmax); at p > 0 the one that marks earliest. A decision's
// confidence stays the network's own (the margin between its two best
// actions); its reason ends with the preference and, when the preference
// changed the choice, the network's own best and how far ahead it scored.
//
// The preference is not applied on fabric ports (a queue whose peer is
// known to be a switch): the throughput/latency trade-off lives at the
// ports that face hosts, while a looser transit queue only builds a
// queue that every flow crossing it waits in.
//
// Why the preference is a tie-break over the network's scores rather than
// a reward weight, and what it does to the built-in model (fabric ports
// included), are told in docs/model/LAB-NOTES.md; the measurements are in
// docs/model/obs-v2/preference-eval.txt (the obs-v2 model).
//
// A preference-conditioned model (NewConditioned; trained with
// train.Config.PreferenceScale; builtin:prefer=P runs the embedded one)
// was trained across preferences with the preference as an input: there
// p is that input, on every port, and the network's own best action is
// taken.
func (l *Learned) WithPreference(name string, p float64) (*Learned, error) {
	if err := CheckPreference(p); err != nil {
		return nil, fmt.Errorf("learned policy %q: %w", l.name, err)
	}
	c := *l
	c.name, c.pref = name, p
	c.prefNote = fmt.Sprintf(", prefer %+.2g", p)
	return &c, nil
}

// LearnedFromModel builds the policy of a registry model: it checks that
// the model speaks the observation and action specs of this build and
// decodes its weights (an rl policy blob).
func LearnedFromModel(name string, m models.Model) (*Learned, error) {
	if m.ObsSpec == env.SwitchSpecVersion {
		return nil, fmt.Errorf("model %s is a switch-level headroom model (%s/%s), not an ECN policy: run it beside one, as POLICY+headroom=model:%s",
			m.Ref(), m.ObsSpec, m.ActSpec, m.Name)
	}
	if err := models.CheckSpecIn(m, env.ReadableObsSpecs, env.ReadableActionSpecs); err != nil {
		return nil, err
	}
	net, err := nn.UnmarshalNet(m.Weights)
	if err != nil {
		return nil, fmt.Errorf("model %s: weights: %w", m.Ref(), err)
	}
	if err := probeFinite(net); err != nil {
		return nil, fmt.Errorf("model %s: weights: %w", m.Ref(), err)
	}
	cond := false
	if v, ok := m.Hyper[models.HyperPreferenceScale]; ok {
		if s, err := strconv.ParseFloat(v, 64); err != nil || !(s > 0) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("model %s: hyper-parameter %s = %q: want a number > 0", m.Ref(), models.HyperPreferenceScale, v)
		}
		cond = true
	}
	if want := env.ObsSpecFeatures(m.ObsSpec); cond && net.InDim() != want+1 {
		return nil, fmt.Errorf("model %s: network reads %d inputs, want the %d features of %s and the preference (%s)",
			m.Ref(), net.InDim(), want, m.ObsSpec, models.HyperPreferenceScale)
	}
	l, err := newLearned(name, net, env.Catalogue{}, 0, cond)
	if err != nil {
		return nil, err
	}
	lo, hi, err := ModelValidInterval(m)
	if err != nil {
		return nil, err
	}
	return l.WithValidInterval(lo, hi)
}

// probeFinite runs net on a few inputs (all 0, all 1, a spread in [-1, 1])
// and refuses outputs that are not finite: weights that are finite but
// huge (±3e38) overflow to NaN on every input, and argmax over NaN held
// every queue with a reason that said nothing of it.
func probeFinite(net *nn.Net) error {
	in := net.InDim()
	rows := make([][]float32, 3)
	for r := range rows {
		rows[r] = make([]float32, in)
		for i := range rows[r] {
			switch r {
			case 1:
				rows[r][i] = 1
			case 2:
				rows[r][i] = 2*float32((i*7919)%101)/100 - 1
			}
		}
	}
	out, err := net.Forward(rows)
	if err != nil {
		return err
	}
	for r, o := range out {
		for j, v := range o {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("the network outputs %v (output %d on probe input %d): weights that overflow, no decision can be read from it", v, j, r)
			}
		}
	}
	return nil
}

// ModelValidInterval is the range of decision intervals a model acts in:
// its record's hyper-parameter validated_interval ("100µs-50ms"), else an
// order of magnitude either side of the interval it was trained at
// (interval), else any (0, 0).
func ModelValidInterval(m models.Model) (lo, hi time.Duration, err error) {
	if v, ok := m.Hyper["validated_interval"]; ok {
		if lo, hi, err = ParseValidInterval(v); err != nil {
			return 0, 0, fmt.Errorf("model %s: %w", m.Ref(), err)
		}
		return lo, hi, nil
	}
	if v, ok := m.Hyper["interval"]; ok {
		d, err := units.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, 0, fmt.Errorf("model %s: interval %q: %v", m.Ref(), v, err)
		}
		return d / 10, d * 10, nil
	}
	return 0, 0, nil
}

// Name is the spec the policy was resolved from ("builtin", "model:NAME").
func (l *Learned) Name() string { return l.name }

// Net is the network (shared, not a copy: do not write its weights).
func (l *Learned) Net() *nn.Net { return l.net }

// Catalogue is the action catalogue the network's outputs index.
func (l *Learned) Catalogue() env.Catalogue { return l.cat }

// usable reports whether the policy can act on o, and why not.
func usable(o *env.Observation) string {
	switch {
	case !o.Valid:
		if o.Problem != "" {
			return o.Problem
		}
		return "interval not measured"
	case !env.KnownRate(o.RateBps):
		return "link rate " + strconv.FormatFloat(o.RateBps, 'g', -1, 64) + " is unknown"
	case len(o.Features) != env.NumFeatures:
		return fmt.Sprintf("observation has %d features, spec %s has %d", len(o.Features), env.SpecVersion, env.NumFeatures)
	}
	return ""
}

// Decide runs the network once over every usable observation and returns,
// per queue, the setting of the best action, its confidence in [0, 1] and
// a reason such as "kmax 1.6MB→800KB: score lead 0.31, util 93%, avg
// queue 525KB, ECN-marked 4%, PFC-paused 0%" (Glossary defines its terms). A queue whose interval was not measured (or
// whose rate is unknown) holds its setting with confidence 0.
func (l *Learned) Decide(obs []env.Observation) []Decision {
	out := make([]Decision, len(obs))
	rows := make([][]float32, 0, len(obs))
	idx := make([]int, 0, len(obs))
	for i := range obs {
		o := &obs[i]
		out[i] = Decision{Key: o.Key, Setting: o.Current, Action: env.ActionHold}
		why, held := usable(o), HoldUndecided
		if why == "" {
			why, held = l.outsideInterval(o), HoldInterval
		}
		if why != "" {
			out[i].Reason, out[i].Held = "hold: "+why, held
			continue
		}
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return out
	}
	in := l.net.InDim()
	if !l.prefInput {
		for _, i := range idx {
			rows = append(rows, obs[i].Features[:in]) // a model of an older spec reads a prefix
		}
	} else {
		flat := make([]float32, len(idx)*in)
		for r, i := range idx {
			row := flat[r*in : (r+1)*in]
			copy(row, obs[i].Features[:in-1])
			row[in-1] = float32(l.pref)
			rows = append(rows, row)
		}
	}
	// A large batch is cut into one chunk per core: queues are decided
	// independently, so the decisions are the same, in less wall time.
	chunks := 1
	if p := runtime.GOMAXPROCS(0); p > 1 && len(rows) >= 2*minParallelChunk {
		chunks = min(p, len(rows)/minParallelChunk)
	}
	if chunks == 1 {
		l.decideRows(obs, out, rows, idx)
		return out
	}
	var wg sync.WaitGroup
	per := (len(rows) + chunks - 1) / chunks
	for c0 := 0; c0 < len(rows); c0 += per {
		c1 := min(c0+per, len(rows))
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.decideRows(obs, out, rows[c0:c1], idx[c0:c1])
		}()
	}
	wg.Wait()
	return out
}

// minParallelChunk is the fewest queues a goroutine of Decide takes.
const minParallelChunk = 256

// decideRows decides the queues obs[idx[r]] whose features are rows[r],
// writing out[idx[r]].
func (l *Learned) decideRows(obs []env.Observation, out []Decision, rows [][]float32, idx []int) {
	k := l.net.OutDim()
	vals := make([]float32, len(rows)*k)
	if err := l.net.ForwardInto(vals, rows); err != nil {
		for _, i := range idx { // cannot happen: lengths were checked
			out[i].Reason, out[i].Held = "hold: "+err.Error(), HoldUndecided
		}
		return
	}
	// Every reason goes into one buffer, made one string at the end: one
	// allocation for the batch instead of one per queue.
	buf := make([]byte, 0, 128*len(idx))
	ends := make([]int, len(idx))
	// A network of act-v3 has two heads: ECN scores, then PFC scores.
	// Confidence, reasons and the preference speak of the ECN head.
	ecnK := min(k, l.cat.ECNLen())
	for r, i := range idx {
		o := &obs[i]
		row := vals[r*k : r*k+ecnK]
		pfc := 0
		if k > ecnK {
			pfc = nn.Argmax(vals[r*k+ecnK : (r+1)*k])
		}
		best := nn.Argmax(row)
		a := best
		if l.leansOn(o) {
			a, _ = l.lean(row, best, l.cat.Setting(best, o.RateBps, o.Current), o.RateBps, o.Current)
		}
		// floor 0 (unknown, or an estimate above the vendor's headroom):
		// a headroom action keeps the headroom
		set := l.cat.SettingFor(l.cat.Joint(a, pfc), o.RateBps, o.Current, o.ActionableFloor())
		d := &out[i]
		d.Action = l.cat.Joint(a, pfc)
		d.Setting = set
		d.Confidence = nn.Confidence(l.net.Kind, row, l.temperature)
		buf = l.appendReason(buf, o, d.Setting, row, a, best, d.Confidence)
		ends[r] = len(buf)
	}
	all := string(buf)
	start := 0
	for r, i := range idx {
		out[i].Reason = all[start:ends[r]]
		start = ends[r]
	}
}

// appendReason appends why action a (setting s) was chosen from the
// scores row whose best action is best (a differs from best only under a
// preference); conf is the decision's confidence (for logits, the margin
// the reason shows).
func (l *Learned) appendReason(b []byte, o *env.Observation, s env.Setting, row []float32, a, best int, conf float64) []byte {
	// strconv appends into the caller's buffer (not fmt): it is written
	// for every queue every interval.
	b = appendChanges(b, o.Current, s)
	margin, label := qMargin(row, a), "score lead"
	if l.net.Kind == nn.OutputLogits {
		margin, label = conf, "probability lead" // the confidence is this margin: computed once
	}
	b = appendMetrics(b, o, label, margin)
	return l.appendPreference(b, o, row, a, best)
}

// appendChanges appends every knob that changes from c to s ("kmin
// 400KB→500KB, pmax 1%→2%"), or "hold" and s when none does.
func appendChanges(b []byte, c, s env.Setting) []byte {
	changed := false
	knob := func(name string) {
		if changed {
			b = append(b, ", "...)
		}
		changed = true
		b = append(b, name...)
		b = append(b, ' ')
	}
	bytesChange := func(name string, from, to int64) {
		if from == to {
			return
		}
		var fb, tb [24]byte
		f, t := units.AppendBytes(fb[:0], from), units.AppendBytes(tb[:0], to)
		if string(f) == string(t) {
			return // equal as written
		}
		knob(name)
		b = append(b, f...)
		b = append(b, "→"...)
		b = append(b, t...)
	}
	bytesChange("kmin", c.KminBytes, s.KminBytes)
	bytesChange("kmax", c.KmaxBytes, s.KmaxBytes)
	if c.Pmax != s.Pmax {
		var fb, tb [24]byte
		f, t := env.AppendPmax(fb[:0], c.Pmax), env.AppendPmax(tb[:0], s.Pmax)
		if string(f) != string(t) {
			knob("pmax")
			b = append(b, f...)
			b = append(b, "→"...)
			b = append(b, t...)
		}
	}
	if s.HeadroomBytes > 0 {
		bytesChange("headroom", c.HeadroomBytes, s.HeadroomBytes)
	}
	if s.Alpha > 0 && s.Alpha != c.Alpha {
		knob("alpha")
		b = append(b, env.FormatAlpha(c.Alpha)...)
		b = append(b, "→"...)
		b = append(b, env.FormatAlpha(s.Alpha)...)
	}
	if !changed {
		b = append(b, "hold "...)
		b = append(b, s.Describe()...)
	}
	return b
}

// appendMetrics appends the margin (named label) and what o measured:
// ": score lead 0.31, util 93%, avg queue 525KB, ECN-marked 4%,
// PFC-paused 0%", the drops when any, and the port's role when known.
func appendMetrics(b []byte, o *env.Observation, label string, margin float64) []byte {
	m := o.Metrics
	b = append(b, ": "...)
	b = append(b, label...)
	b = append(b, ' ')
	b = strconv.AppendFloat(b, margin, 'f', 2, 64)
	b = append(b, ", util "...)
	b = appendShare(b, m.Util)
	b = append(b, ", avg queue "...)
	avg := m.AvgDelayNs * o.RateBps / 8e9
	if avg == 0 { // an observation made without delays: from the reference BDP
		avg = m.AvgQueueFrac * o.RateBps * env.DefaultRefRTT.Seconds() / 8
	}
	b = units.AppendBytes(b, int64(math.Round(avg)))
	b = append(b, ", ECN-marked "...)
	b = appendShare(b, m.MarkFrac)
	b = append(b, ", PFC-paused "...)
	b = appendShare(b, math.Max(m.PauseRxFrac, m.PauseTxFrac))
	if m.DropFrac > 0 {
		b = append(b, ", dropped "...)
		b = appendShare(b, m.DropFrac)
	}
	switch o.Peer {
	case env.PeerSwitch:
		b = append(b, ", fabric port"...)
	case env.PeerHost:
		b = append(b, ", host port"...)
	}
	return b
}

// appendShare appends a fraction as a percentage: whole from 10% up, two
// significant digits below ("93%", "4%", "0.52%", "0%").
func appendShare(b []byte, f float64) []byte {
	p := f * 100
	if p >= 10 {
		b = strconv.AppendFloat(b, p, 'f', 0, 64)
	} else {
		b = strconv.AppendFloat(b, p, 'g', 2, 64)
	}
	return append(b, '%')
}

// appendPreference appends the preference, whether it applied to o's
// queue, and when it changed the choice (a, not the network's best) what
// the network would have taken and how far ahead it scored.
func (l *Learned) appendPreference(b []byte, o *env.Observation, row []float32, a, best int) []byte {
	switch {
	case l.pref == 0:
	case l.prefInput:
		b = append(append(b, l.prefNote...), " (model input)"...)
	case !l.leansOn(o):
		b = append(append(b, l.prefNote...), " not applied (fabric port)"...)
	default:
		b = append(b, l.prefNote...)
		if a != best {
			bs := l.cat.Setting(best, o.RateBps, o.Current)
			unit := "nats"
			if l.net.Kind == nn.OutputQ {
				unit = "reward"
			}
			b = fmt.Appendf(b, " (model's best kmin %s kmax %s pmax %s, %.2g %s ahead)", units.FormatBytes(bs.KminBytes),
				units.FormatBytes(bs.KmaxBytes), env.FormatPmax(bs.Pmax), float64(row[best])-float64(row[a]), unit)
		}
	}
	return b
}

// CheckPreference reports whether p is a usable preference: a finite
// number in [-1, 1].
func CheckPreference(p float64) error {
	if !(p >= -1 && p <= 1) {
		return fmt.Errorf("preference %g: want a number in [-1, 1] (-1 favours throughput, 0 is the model's own choice, +1 latency)", p)
	}
	return nil
}

// leansOn reports whether the preference is a tie-break on o's queue:
// set, not a model input, and not a fabric port (see WithPreference).
func (l *Learned) leansOn(o *env.Observation) bool {
	return l.pref != 0 && !l.prefInput && o.Peer != env.PeerSwitch
}

// Conditioned reports whether the network reads the preference as an
// input (NewConditioned).
func (l *Learned) Conditioned() bool { return l.prefInput }

// lean applies the preference to the scores row whose best action is best
// (with setting bestSet): see WithPreference. It returns the chosen action
// and its setting.
func (l *Learned) lean(row []float32, best int, bestSet env.Setting, rate float64, cur env.Setting) (int, env.Setting) {
	scale := 1.0
	if l.net.Kind == nn.OutputQ {
		scale = l.temperature
	}
	floor := float64(row[best]) - math.Abs(l.pref)*PreferenceSpan*scale
	choice, cs := best, bestSet
	for a, v := range row {
		if !(float64(v) >= floor) || a == best { // NaN scores are never near-ties
			continue
		}
		s := l.cat.Setting(a, rate, cur)
		if c := compareLooseness(s, cs); (l.pref < 0 && c > 0) || (l.pref > 0 && c < 0) {
			choice, cs = a, s
		}
	}
	return choice, cs
}

// compareLooseness orders settings by how late they mark: Kmax, then Kmin,
// then the lower Pmax. It is > 0 when a marks later than b.
func compareLooseness(a, b env.Setting) int {
	if c := cmp.Compare(a.KmaxBytes, b.KmaxBytes); c != 0 {
		return c
	}
	if c := cmp.Compare(a.KminBytes, b.KminBytes); c != 0 {
		return c
	}
	return cmp.Compare(b.Pmax, a.Pmax)
}

// qMargin is the gap between the chosen Q-value and the best other one.
func qMargin(row []float32, a int) float64 {
	second := math.Inf(-1)
	for j, v := range row {
		if j != a && float64(v) > second {
			second = float64(v)
		}
	}
	if math.IsInf(second, -1) {
		return 0
	}
	return float64(row[a]) - second
}

// SplitPreference splits ":prefer=P" or ",prefer=P" (or a bare
// "prefer=P") off the argument of a learned policy's spec ("model:ARG",
// "builtin:ARG"): "NAME:prefer=-0.5" and "NAME,prefer=-0.5" → "NAME",
// -0.5, true. The colon form is builtin:prefer=P's, and the one a
// schedule entry can hold (a comma separates its entries); a model name
// or reference never holds a colon or a comma. A malformed option or a P
// outside [-1, 1] is an error.
func SplitPreference(arg string) (rest string, p float64, set bool, err error) {
	rest, opt, found := strings.Cut(arg, ",")
	if !found {
		rest, opt, found = strings.Cut(arg, ":")
	}
	if !found && strings.HasPrefix(arg, PreferOption) {
		rest, opt, found = "", arg, true
	}
	if !found {
		return arg, 0, false, nil
	}
	v, ok := strings.CutPrefix(opt, PreferOption)
	if !ok {
		return "", 0, false, fmt.Errorf("option %q: want prefer=P with P in [-1, 1]", opt)
	}
	p, err = strconv.ParseFloat(v, 64)
	if err != nil {
		return "", 0, false, fmt.Errorf("prefer=%s: not a number (want P in [-1, 1]: -1 favours throughput, +1 latency)", v)
	}
	if err := CheckPreference(p); err != nil {
		return "", 0, false, err
	}
	if strings.ContainsAny(rest, ",:") {
		return "", 0, false, fmt.Errorf("%q: one prefer=P option, after the name (NAME:prefer=P)", arg)
	}
	return rest, p, true, nil
}

// withPreference applies a spec's preference option to l.
func withPreference(l *Learned, name string, p float64, set bool) (Policy, error) {
	if !set {
		return l, nil
	}
	return l.WithPreference(name, p)
}

// resolveModel loads a model: spec's model through r.Models.
func resolveModel(r Resolver, sp Spec) (Policy, error) {
	if r.Models == nil {
		return nil, specErr(&sp, errNoModels)
	}
	m, err := r.Models(sp.Model)
	if err != nil {
		return nil, specErr(&sp, err)
	}
	l, err := LearnedFromModel(ModelPrefix+sp.Model, m)
	if err != nil {
		return nil, specErr(&sp, err)
	}
	p, err := withPreference(l, ModelPrefix+sp.Arg, sp.Preference, sp.Prefer)
	if err != nil {
		return nil, specErr(&sp, err)
	}
	return p, nil
}

// resolveBuiltin is the pretrained model embedded in the binary, of a
// "builtin", "builtin:prefer=P" or "builtin:400g" spec. With a preference
// other than 0 it is the embedded preference model
// (builtin.PreferenceModel), which reads P as an input, not the tie-break
// over the base model's scores; builtin:400g is builtin.HighRateModel.
func resolveBuiltin(_ Resolver, sp Spec) (Policy, error) {
	load, name := builtin.Model, BuiltinSpec
	switch {
	case sp.HighRate:
		load, name = builtin.HighRateModel, HighRateSpec
	case sp.Prefer && sp.Preference != 0:
		load = builtin.PreferenceModel
	}
	m, err := load()
	if err != nil {
		return nil, specErr(&sp, err)
	}
	l, err := LearnedFromModel(name, m)
	if err == nil {
		l, err = l.WithValidInterval(builtin.ValidatedIntervalMin, builtin.ValidatedIntervalMax)
	}
	if err != nil {
		return nil, specErr(&sp, err)
	}
	p, err := withPreference(l, BuiltinPrefix+sp.Arg, sp.Preference, sp.Prefer)
	if err != nil {
		return nil, specErr(&sp, err)
	}
	return p, nil
}
