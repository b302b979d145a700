package twin

import (
	"fmt"
	"io/fs"
	"maps"
	"math"
	"slices"

	"github.com/ecntune/ecntune/scenarios/cdf"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// Where the observation begins. A simulation starts on an empty fabric,
// and its utilisation and queues ramp up as flows gather: under a
// heavy-tailed flow-size family the long flows take milliseconds to
// accumulate (a 60% web search star at 100 Gb/s reaches 90% of its later
// utilisation after about 2 ms; a 25 Gb/s Hadoop leaf-spine after about
// 4). An agent started with the fabric's traffic (a lab, a test, our own
// pipeline) observes that ramp too; an agent started on a production
// fabric observes traffic that has long been running. Fitted as if it
// began from empty, the steady observation of a 50% web search star was
// read as 66% (and a 50% Hadoop one as web search at 71%): the ramp's
// low intervals had to be made up by more load. So the fit asks which
// start explains the first window better (chooseLead): the coarse grid of
// the first window is simulated both from empty and after a lead-in of
// the same traffic (leadFor); with a lead-in the twin's run keeps it,
// before the observed time line (Scenario.Lead).

// LeadShare is how much of its steady utilisation a lead-in lets the
// traffic reach: the share of the mean flow's bytes a flow sent at half
// the host rate has sent by the lead-in's end (flows arrive at a steady
// rate, so utilisation ramps as E[min(S, t·r)] / E[S]).
const (
	LeadShare = 0.95
	MaxLead   = 8 * simenv.Millisecond
	// MinRampGap is how much less than observed the first third's
	// utilisation of a simulation from empty may be and the twin still
	// start from empty (chooseLead).
	MinRampGap = 0.1
)

// leadFor is the lead-in for the fabric: the shortest whole number of
// twin intervals after which every flow family's traffic reaches
// LeadShare of its steady utilisation, at least two intervals and at most
// MaxLead.
func leadFor(hostRateBps float64, iv simenv.Time) (simenv.Time, error) {
	if hostRateBps <= 0 || iv <= 0 {
		return 0, fmt.Errorf("twin: lead-in of a fabric at %g b/s, interval %v", hostRateBps, iv)
	}
	r := hostRateBps / 8 / 2 // bytes a second of a flow at half the host rate
	need := 2
	for _, fam := range Families {
		data, err := fs.ReadFile(cdf.Files, fam+".txt")
		if err != nil {
			return 0, err
		}
		pts, err := scenario.ParseCDF(data, fam)
		if err != nil {
			return 0, err
		}
		mean := simenv.CDFMean(pts)
		k := need
		for ; simenv.Time(k)*iv < MaxLead; k++ {
			if cappedMean(pts, float64(simenv.Time(k)*iv)/float64(simenv.Second)*r) >= LeadShare*mean {
				break
			}
		}
		need = max(need, k)
	}
	return min(simenv.Time(need)*iv, (MaxLead/iv)*iv), nil
}

// cappedMean is E[min(S, c)] of a piecewise-linear flow-size CDF (the
// sizes uniform between its points, as CDFMean counts them).
func cappedMean(cdf []simenv.CDFPoint, c float64) float64 {
	m := 0.0
	for i := 1; i < len(cdf); i++ {
		a, b := cdf[i-1].Bytes, cdf[i].Bytes
		p := (cdf[i].Percent - cdf[i-1].Percent) / 100
		switch {
		case c >= b:
			m += p * (a + b) / 2
		case c <= a || b <= a:
			m += p * math.Min(c, a)
		default:
			f := (c - a) / (b - a) // the part of the segment below c
			m += p * (f*(a+c)/2 + (1-f)*c)
		}
	}
	return m
}

// chooseLead sets ft.lead: the lead-in (leadFor) when the first window w
// is better explained as observed on traffic already running than from
// its start, and returns the candidates it tried under the start chosen
// (the window's search goes on from them). The first window's flows grid
// (each flow family at three loads) is simulated from empty; its best's
// ramp, the mean host utilisation of the first third of the window over
// the whole window's (rampRatio: about 0.6-0.8 under web search at 100
// Gb/s), is set against the observed one. Where the observation ramps
// as much, or no more than MinRampGap less, the twin starts from empty
// (an observation from the traffic's start, or traffic that hardly
// ramps: Hadoop at 400 Gb/s, 0.95 against 0.95). Otherwise the flows
// grid runs again after the lead-in, and the lead-in is kept where the
// observed ramp is nearer its best's and that best comes closer to the
// observation (a lower loss) than anything tried from empty, incasts and
// collectives beside the flows included (tried from empty only then: a
// window that begins with a collective does not ramp from empty; the
// all-reduce of val-allreduce-shift, observed from its start, read as
// running traffic on the flows grids alone, got an 8 ms lead-in and a
// window loss of 3.2 where it had been 0.55). A collective beside flows
// observed on running traffic is therefore fitted from empty (its flows'
// ramp unmodelled). The choice and its evidence go into the report's
// notes.
func (ft *fitter) chooseLead(w Window) []scored {
	obs := observed{Compute(ft.tl.Samples(w.From, w.To)), Noise(ft.tl.Samples(w.From, w.To))}
	span := min(simenv.Time(ft.twinIndex(w.To)-ft.twinIndex(w.From))*ft.iv, searchIntervals*ft.iv)
	span = max(span, 5*ft.iv)
	grid := func(l simenv.Time) *search {
		s := &search{ft: ft, obs: obs, from: l, to: l + span, deadline: ft.deadline, loss: math.Inf(1),
			byKind: map[string]scored{}, refined: map[string]scored{}}
		s.flows()
		return s
	}
	series := ft.tl.Series()
	var u []float64
	for i := w.From; i < w.To && ft.twinIndex(i)-ft.twinIndex(w.From) < int(span/ft.iv); i++ {
		u = append(u, series[i][0])
	}
	want := rampRatio(u)
	empty := grid(0)
	flows := empty.tried
	ramp0 := empty.ramp
	says := fmt.Sprintf("the first third's mean host utilisation over the window's: observed %.2f, the best flows from empty %s %.2f (loss %.3f)",
		want, empty.best.Describe(), ramp0, empty.loss)
	note := func(n string) {
		ft.notes = append(ft.notes, n)
		ft.o.Log("%s", n)
	}
	fromEmpty := "the observation began with its traffic, or the start does not matter: the twin starts on an empty fabric ("
	if want-ramp0 <= MinRampGap {
		note(fromEmpty + says + ")")
		return flows
	}
	lead, err := leadFor(ft.f.HostRateBps, ft.iv)
	if err != nil {
		note(fromEmpty + says + "; no lead-in: " + err.Error() + ")")
		return flows
	}
	led := grid(lead)
	ramp1 := led.ramp
	says += fmt.Sprintf(", after a lead-in of %s %s %.2f (loss %.3f)", durText(lead), led.best.Describe(), ramp1, led.loss)
	if math.Abs(want-ramp1) >= math.Abs(want-ramp0) || led.loss >= empty.loss {
		note(fromEmpty + says + ")")
		return flows
	}
	empty.extras()
	if empty.loss <= led.loss {
		// The flows alone go on: the search tries its extras beside its
		// refined flows, as where this was not asked (beside the grid's
		// best, they led val-allreduce-shift's search elsewhere: loss
		// 1.62 against 0.73).
		note(fmt.Sprintf("the observation began with its traffic: the twin starts on an empty fabric (%s; from empty %s comes closer, loss %.3f)",
			says, empty.best.Describe(), empty.loss))
		return flows
	}
	ft.lead = lead
	note(fmt.Sprintf("the observation began on traffic already running: the twin runs a lead-in of %s before it (%s; from empty with incasts and collectives at best %.3f)",
		durText(lead), says, empty.loss))
	return led.tried
}

// rampRatio is the mean of the first third of u over the mean of u (1
// when u is too short to tell or idle).
func rampRatio(u []float64) float64 {
	if len(u) < 6 {
		return 1
	}
	all, first := mean(u), mean(u[:len(u)/3])
	if all <= 0 {
		return 1
	}
	return first / all
}

// pooledRamp is the mean over the seeds of a pooled run (measure: each
// seed's intervals seedTimeOffset apart) of rampRatio of its host
// utilisation; 1 when it has none.
func pooledRamp(kept []Sample) float64 {
	bySeed := map[int64][]Sample{}
	for _, x := range kept {
		bySeed[x.TimeNs/seedTimeOffset] = append(bySeed[x.TimeNs/seedTimeOffset], x)
	}
	if len(bySeed) == 0 {
		return 1
	}
	sum := 0.0
	for _, k := range slices.Sorted(maps.Keys(bySeed)) { // one order: the same sum every run
		ss := bySeed[k]
		var u []float64
		for _, row := range NewTimeline(ss).Series() {
			u = append(u, row[0])
		}
		sum += rampRatio(u)
	}
	return sum / float64(len(bySeed))
}
