package policy

import (
	"fmt"
	"math"
	"strings"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
)

// AdaptiveConfig tunes the adaptive baseline. Zero fields take defaults.
type AdaptiveConfig struct {
	// Catalogue gives the grid the search moves on (default
	// env.DefaultCatalogue()).
	Catalogue env.Catalogue
	// Reward scores intervals (nil: env.DefaultRewardWeights()).
	Reward *env.RewardWeights
	// Settle is the number of measured intervals averaged before a setting
	// is judged (default 2).
	Settle int
	// ProbeEvery is the number of intervals to hold once a full round over
	// the axes brought no gain, before probing again (default 20); it
	// doubles with every further round without gain, up to 32 times
	// (640 intervals), and starts over when a move is kept.
	ProbeEvery int
	// MinGain is the mean reward gain a move must bring to be kept
	// (default 0.002); the gain must also exceed ProbeSignificance
	// standard errors of the difference of the two means.
	MinGain float64
	// MinUtil: an interval with utilisation below it and no mark, pause or
	// drop is idle and says nothing about the setting; it is not counted
	// (default 0.05; negative counts every interval).
	MinUtil float64
}

// DefaultAdaptiveConfig returns the defaults.
func DefaultAdaptiveConfig() AdaptiveConfig {
	w := env.DefaultRewardWeights()
	return AdaptiveConfig{Catalogue: env.DefaultCatalogue(), Reward: &w, Settle: 2, ProbeEvery: 20, MinGain: 0.002, MinUtil: 0.05}
}

// axes of the search, in the order they are probed, as catalogue moves.
var adaptiveAxes = [...]struct {
	name     string
	up, down int
}{
	{"kmax", env.ActionKmaxUp, env.ActionKmaxDown},
	{"kmin", env.ActionKminUp, env.ActionKminDown},
	{"pmax", env.ActionPmaxUp, env.ActionPmaxDown},
}

type adaptPhase int

const (
	phaseMeasure adaptPhase = iota // measuring the held setting
	phaseProbe                     // measuring a probed neighbour
)

type adaptState struct {
	held     env.Setting // best known setting
	expect   env.Setting // what the queue should be at now
	phase    adaptPhase
	sum      float64 // rewards at the setting being measured
	sumSq    float64
	n        int
	peak     float64 // peak queue bytes over the measured intervals
	marked   bool    // ECN marks or pause in a measured interval
	baseline float64 // mean reward of held
	baseSD   float64 // its standard deviation, over baseN intervals
	baseN    int
	axis     int
	dir      int          // +1 raise, -1 lower
	climbed  bool         // a move on this axis was kept since the axis was chosen
	flipped  bool         // the other direction of this axis was tried already
	noGain   int          // consecutive axes left without a kept move
	wait     int          // measured intervals to hold before the next probe
	rounds   int          // full rounds without gain in a row (ProbeEvery backoff)
	xoffs    env.LowWater // the PG's XOFF over the last xoffMemory intervals
}

// xoffMemory is how many intervals of XOFF the search remembers: it never
// probes Kmax above env.KmaxXoffShare of the lowest of them (a dynamic
// threshold moves with buffer use).
const xoffMemory = 8

// ProbeSignificance: a probe's gain is kept only beyond this many standard
// errors of the difference of the means (the reward of one interval moves
// with the traffic alone).
const ProbeSignificance = 2.0

// stdErrs says how many standard errors se a difference d is.
func stdErrs(d, se float64) string {
	if se == 0 {
		return "no spread"
	}
	return fmt.Sprintf("%.1f standard errors", d/se)
}

// ProbeMinBack is how many intervals a probe is measured before the search
// steps back from it for lack of gain (a gain beyond ProbeSignificance
// standard errors is kept after Settle): past env.FlapIntervals, so that
// giving a probe up is not a flap.
const ProbeMinBack = env.FlapIntervals + 1

// maxBackoff caps the doubling of ProbeEvery: 2^5.
const maxBackoff = 5

// measure adds one measured interval of m with reward r.
func (st *adaptState) measure(m env.Metrics, rateBps, r float64) {
	st.sum += r
	st.sumSq += r * r
	st.n++
	st.peak = math.Max(st.peak, peakBytes(m, rateBps))
	st.marked = st.marked || m.MarkFrac > 0 || m.PauseRxFrac > 0 || m.DropFrac > 0
}

// restart clears the measurement (at a new setting).
func (st *adaptState) restart() {
	st.sum, st.sumSq, st.n, st.peak, st.marked = 0, 0, 0, 0, false
}

// sd is the standard deviation of the measured rewards.
func (st *adaptState) sd() float64 {
	if st.n < 2 {
		return 0
	}
	m := st.sum / float64(st.n)
	return math.Sqrt(math.Max(0, (st.sumSq-float64(st.n)*m*m)/float64(st.n-1)))
}

// peakBytes is the interval's peak queue in bytes (from the peak delay,
// else from the peak in reference BDPs).
func peakBytes(m env.Metrics, rateBps float64) float64 {
	if m.MaxDelayNs > 0 {
		return m.MaxDelayNs * rateBps / 8e9
	}
	return m.MaxQueueFrac * rateBps / 8 * env.DefaultRefRTT.Seconds()
}

// Adaptive is a non-learned baseline: a per-queue step search on the
// reward, in the manner of switch vendors' dynamic-ECN schemes. Each queue
// holds a setting and measures its mean reward over Settle intervals; it
// then moves one catalogue step along one axis (Kmax, Kmin, Pmax), measures
// again, keeps the move and keeps going the same way if the reward rose by
// more than MinGain, else steps back and tries the other direction, then
// the next axis. After a full round of axes without gain it holds for
// ProbeEvery intervals, then probes again (the traffic may have changed).
// State is per QueueKey; decisions are deterministic. Not safe for
// concurrent use.
type Adaptive struct {
	cfg    AdaptiveConfig
	w      env.RewardWeights
	queues map[env.QueueKey]*adaptState
}

// NewAdaptive returns an adaptive policy with no state.
func NewAdaptive(cfg AdaptiveConfig) *Adaptive {
	def := DefaultAdaptiveConfig()
	if cfg.Catalogue.IsZero() {
		cfg.Catalogue = def.Catalogue
	}
	if cfg.Reward == nil || cfg.Reward.Validate() != nil {
		cfg.Reward = def.Reward
	}
	if cfg.Settle <= 0 {
		cfg.Settle = def.Settle
	}
	if cfg.ProbeEvery <= 0 {
		cfg.ProbeEvery = def.ProbeEvery
	}
	if !(cfg.MinGain >= 0) || math.IsInf(cfg.MinGain, 0) {
		cfg.MinGain = def.MinGain
	}
	if cfg.MinUtil == 0 || math.IsNaN(cfg.MinUtil) {
		cfg.MinUtil = def.MinUtil
	}
	return &Adaptive{cfg: cfg, w: *cfg.Reward, queues: make(map[env.QueueKey]*adaptState)}
}

// Name is "adaptive".
func (a *Adaptive) Name() string { return AdaptiveSpec }

// Config returns the configuration in force.
func (a *Adaptive) Config() AdaptiveConfig { return a.cfg }

// Forget drops the state of every queue of target.
func (a *Adaptive) Forget(target string) {
	for k := range a.queues {
		if k.Target == target {
			delete(a.queues, k)
		}
	}
}

// Held returns the best known setting of a queue (ok false if unknown).
func (a *Adaptive) Held(k env.QueueKey) (env.Setting, bool) {
	st, ok := a.queues[k]
	if !ok {
		return env.Setting{}, false
	}
	return st.held, true
}

func sameECN(x, y env.Setting) bool {
	return x.KminBytes == y.KminBytes && x.KmaxBytes == y.KmaxBytes && x.Pmax == y.Pmax
}

// Decide returns one decision per observation.
func (a *Adaptive) Decide(obs []env.Observation) []Decision {
	out := make([]Decision, len(obs))
	for i := range obs {
		out[i] = a.decide(&obs[i])
		if !sameECN(out[i].Setting, obs[i].Current) {
			out[i].Reason = namingEveryKnob(obs[i].Current, out[i].Setting, out[i].Reason)
		}
	}
	return out
}

// namingEveryKnob is reason led by every knob the move from c to s
// changes, unless it names them all already: a probe names its axis, and
// a Kmax probe may drag Kmin along.
func namingEveryKnob(c, s env.Setting, reason string) string {
	d := env.DescribeChange(c, s)
	for _, part := range strings.Split(d, ", ") {
		if !strings.Contains(reason, part) {
			return d + ": " + reason
		}
	}
	return reason
}

func (a *Adaptive) hold(o *env.Observation, st *adaptState, conf float64, reason string) Decision {
	s := o.Current
	if st != nil {
		s = st.expect
		s.HeadroomBytes = o.Current.HeadroomBytes
	}
	return Decision{Key: o.Key, Setting: s, Action: env.ActionHold, Confidence: conf, Reason: reason}
}

func (a *Adaptive) decide(o *env.Observation) Decision {
	st := a.queues[o.Key]
	if !o.Valid {
		why := o.Problem
		if why == "" {
			why = "interval not measured"
		}
		return a.hold(o, st, 1, "holding: "+why)
	}
	if !env.KnownRate(o.RateBps) {
		return a.hold(o, st, 0, fmt.Sprintf("holding: link rate %g is unknown", o.RateBps))
	}
	if st == nil {
		st = &adaptState{held: o.Current, expect: o.Current, dir: 1}
		a.queues[o.Key] = st
	} else if !sameECN(o.Current, st.expect) {
		// Someone else (an operator, a guard's clamp, a rollback) changed
		// the queue: start over from what it has now.
		was := st.expect
		*st = adaptState{held: o.Current, expect: o.Current, dir: 1}
		return a.hold(o, st, 1, fmt.Sprintf("setting changed outside the search (expected %s, found %s): re-measuring",
			was.Describe(), o.Current.Describe()))
	}
	if m := o.Metrics; m.Util < a.cfg.MinUtil && m.MarkFrac == 0 && m.PauseRxFrac == 0 && m.PauseTxFrac == 0 && m.DropFrac == 0 {
		return a.hold(o, st, 1, fmt.Sprintf("idle (util %.3f): holding %s", m.Util, st.expect.Describe()))
	}
	st.xoffs.N = xoffMemory
	st.xoffs.Note(o.XoffBytes)
	r := env.Reward(o.Metrics, a.w)
	st.measure(o.Metrics, o.RateBps, r)
	if st.n < a.cfg.Settle {
		what := "measuring"
		if st.phase == phaseProbe {
			what = "probing"
		}
		return a.hold(o, st, 1, fmt.Sprintf("%s %s: %d/%d intervals, reward %.3f", what, st.expect.Describe(), st.n, a.cfg.Settle, st.sum/float64(st.n)))
	}
	mean := st.sum / float64(st.n)
	if st.phase == phaseMeasure {
		st.baseline, st.baseSD, st.baseN = mean, st.sd(), st.n
		if st.wait > 0 {
			st.wait--
			st.window(mean, o)
			return a.hold(o, st, 1, fmt.Sprintf("holding %s: reward %.3f, no gain found, next probe in %d intervals",
				st.held.Describe(), mean, st.wait+1))
		}
		return a.probe(o, st, fmt.Sprintf("baseline reward %.3f", mean))
	}

	return a.judge(o, st, mean)
}

// judge decides on the probe st measured (mean reward): keep it and probe
// on, wait for more intervals, or step back to the held setting.
func (a *Adaptive) judge(o *env.Observation, st *adaptState, mean float64) Decision {
	// Judge the probe.
	ai := st.axis
	ax := adaptiveAxes[ai]
	gain := mean - st.baseline
	verb := "raise"
	if st.dir < 0 {
		verb = "cut"
	}
	from, to := st.held, st.expect
	se := math.Sqrt(st.baseSD*st.baseSD/float64(max(st.baseN, 1)) + st.sd()*st.sd()/float64(st.n))
	if gain > a.cfg.MinGain && gain > ProbeSignificance*se {
		st.held, st.baseline, st.baseSD, st.baseN = to, mean, st.sd(), st.n
		st.climbed, st.noGain, st.rounds = true, 0, 0
		return a.probe(o, st, fmt.Sprintf("%s %s→%s: reward %+.3f after last %s", ax.name, axisValue(ai, from), axisValue(ai, to), gain, verb))
	}
	if worse := gain < -a.cfg.MinGain && gain < -ProbeSignificance*se; st.n < ProbeMinBack && !worse {
		// No evidence of a gain, nor of a loss, yet: a probe is given up
		// only after ProbeMinBack intervals (a setting left and returned
		// to sooner is a flap, and fewer intervals tell little from the
		// noise); a significant loss steps back at once.
		return a.hold(o, st, 1, fmt.Sprintf("probing %s: %d/%d intervals, reward %+.3f (%s)", st.expect.Describe(),
			st.n, ProbeMinBack, gain, stdErrs(gain, se)))
	}
	// No gain: step back to the held setting.
	switch {
	case st.climbed || st.flipped:
		a.nextAxis(st)
	default:
		st.dir, st.flipped = -st.dir, true
	}
	st.expect, st.phase = st.held, phaseMeasure
	st.restart()
	d := a.hold(o, st, 1, fmt.Sprintf("%s %s→%s: reward %+.3f after last %s (%s), stepping back", ax.name, axisValue(ai, to),
		axisValue(ai, from), gain, verb, stdErrs(gain, se)))
	d.Action = -1 // back to the held setting, which may be off the grid
	return d
}

// nextAxis moves the search to the next axis, counting axes without gain;
// a full round without gain starts a wait of ProbeEvery intervals.
func (a *Adaptive) nextAxis(st *adaptState) {
	if !st.climbed {
		st.noGain++
	}
	st.axis = (st.axis + 1) % len(adaptiveAxes)
	st.climbed, st.flipped = false, false
	if st.noGain >= len(adaptiveAxes) {
		st.noGain = 0
		st.wait = a.cfg.ProbeEvery << min(st.rounds, maxBackoff)
		st.rounds++
	}
}

// window keeps measuring the held setting over a running window of the
// last Settle-1 intervals' mean, the peak and marks of the newest only.
func (st *adaptState) window(mean float64, o *env.Observation) {
	n := st.n - 1
	sd := st.sd()
	st.restart()
	if n > 0 {
		st.n, st.sum = n, mean*float64(n)
		st.sumSq = sd*sd*float64(n-1) + float64(n)*mean*mean
	}
	st.peak = peakBytes(o.Metrics, o.RateBps)
	m := o.Metrics
	st.marked = m.MarkFrac > 0 || m.PauseRxFrac > 0 || m.DropFrac > 0
}

// probe moves one step from the held setting along the current axis and
// direction, skipping directions and axes at the edge of the grid.
func (a *Adaptive) probe(o *env.Observation, st *adaptState, why string) Decision {
	cat := a.cfg.Catalogue
	for tries := 0; tries < 2*len(adaptiveAxes); tries++ {
		ax := adaptiveAxes[st.axis]
		act := ax.up
		if st.dir < 0 {
			act = ax.down
		}
		to := onAxis(st.axis, st.held, cat.Setting(act, o.RateBps, st.held))
		if x := st.xoffs.Low(o.XoffBytes); x > 0 && to.KmaxBytes > int64(float64(x)*env.KmaxXoffShare) && to.KmaxBytes > st.held.KmaxBytes {
			to = st.held // never probe Kmax into the PG's XOFF: that edge of the grid
		}
		if !sameECN(to, st.held) && !st.marked && st.peak < float64(min(to.KminBytes, st.held.KminBytes)) {
			// The queue neither marks nor reaches either Kmin: no ECN
			// setting acts on it, and a probe would measure the traffic.
			st.window(st.sum/float64(st.n), o)
			return a.hold(o, st, 1, fmt.Sprintf("%s; ECN not in play (peak %s below kmin %s, no marks or pause): holding %s",
				why, units.FormatBytes(int64(st.peak)), units.FormatBytes(min(to.KminBytes, st.held.KminBytes)), st.held.Describe()))
		}
		if !sameECN(to, st.held) {
			st.expect, st.phase = to, phaseProbe
			st.restart()
			to.HeadroomBytes = o.Current.HeadroomBytes
			conf := 0.6
			reason := fmt.Sprintf("%s; probing %s %s→%s", why, ax.name, axisValue(st.axis, st.held), axisValue(st.axis, to))
			if st.climbed {
				conf = 0.8
			}
			return Decision{Key: o.Key, Setting: to, Action: act, Confidence: conf, Reason: reason}
		}
		// At the edge: try the other way, then the next axis.
		if st.flipped || st.climbed {
			a.nextAxis(st)
			if st.wait > 0 {
				st.expect, st.phase = st.held, phaseMeasure
				st.restart()
				return a.hold(o, st, 1, why+"; no move left to try, holding")
			}
		} else {
			st.dir, st.flipped = -st.dir, true
		}
	}
	st.expect, st.phase = st.held, phaseMeasure
	st.restart()
	return a.hold(o, st, 1, why+"; grid has no neighbour to try, holding")
}

// onAxis is held moved along one axis only, to moved's value there: the
// catalogue move snaps the whole setting to its grid, and the other knobs
// (a scenario's Pmax of 20%, a Kmin off the grid) must stay as they are,
// or each probe would drag them to the grid a guard's max-step at a time.
// Kmin follows moved's when held's would not stay below the new Kmax.
func onAxis(axis int, held, moved env.Setting) env.Setting {
	to := held
	switch adaptiveAxes[axis].name {
	case "kmax":
		to.KmaxBytes = moved.KmaxBytes
		if to.KminBytes >= to.KmaxBytes {
			to.KminBytes = moved.KminBytes
		}
	case "kmin":
		to.KminBytes = moved.KminBytes
	default:
		to.Pmax = moved.Pmax
	}
	if to.KminBytes >= to.KmaxBytes {
		return held
	}
	return to
}

func axisValue(axis int, s env.Setting) string {
	switch adaptiveAxes[axis].name {
	case "kmax":
		return units.FormatBytes(s.KmaxBytes)
	case "kmin":
		return units.FormatBytes(s.KminBytes)
	}
	return env.FormatPmax(s.Pmax)
}
