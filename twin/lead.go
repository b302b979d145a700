package twin

import (
	"fmt"
	"io/fs"
	"math"

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
// start explains the first window better: the flows grid of the first
// window is simulated both from empty and after a lead-in of the same
// traffic (leadFor), and the lower loss decides; with a lead-in the
// twin's run keeps it, before the observed time line (Scenario.Lead).

// LeadShare is how much of its steady utilisation a lead-in lets the
// traffic reach: the share of the mean flow's bytes a flow sent at half
// the host rate has sent by the lead-in's end (flows arrive at a steady
// rate, so utilisation ramps as E[min(S, t·r)] / E[S]).
const (
	LeadShare = 0.95
	MaxLead   = 8 * simenv.Millisecond
	// MinRampGap is how much lower the first third's utilisation must be
	// from empty than after the lead-in for the start to matter.
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
// was observed on traffic already running, 0 when it was observed from
// the traffic's start. The flows grid of the window is simulated from
// empty and after the lead-in, and the best of each (by loss) is run again
// to compare its ramp with the observed one: the mean host utilisation
// over the first third of the window over that of the whole window
// (rampRatio; about 0.6 from empty under web search at 100 Gb/s, about 1
// on running traffic). The start whose ramp is nearer the observed one
// wins (the grid's losses alone told a ramp from none by 0.38 against
// 0.42 on a 50% web search star observed from its start: the utilisation
// statistics of the whole window hide where in it the traffic was low).
// Where the two ramps differ by no more than MinRampGap the traffic
// ramps too fast to matter (Hadoop at 100 Gb/s: 0.87 against 0.91) and
// the twin starts from empty, as before. The choice and its evidence go
// into the report's notes.
func (ft *fitter) chooseLead(w Window) {
	lead, err := leadFor(ft.f.HostRateBps, ft.iv)
	if err != nil {
		ft.o.Log("no lead-in: %v", err)
		return
	}
	obs := observed{Compute(ft.tl.Samples(w.From, w.To)), Noise(ft.tl.Samples(w.From, w.To))}
	span := min(simenv.Time(ft.twinIndex(w.To)-ft.twinIndex(w.From))*ft.iv, searchIntervals*ft.iv)
	span = max(span, 5*ft.iv)
	// The observed intervals the span covers.
	m := w.From
	for m < w.To && ft.twinIndex(m)-ft.twinIndex(w.From) < int(span/ft.iv) {
		m++
	}
	series := ft.tl.Series()
	var u []float64
	for i := w.From; i < m; i++ {
		u = append(u, series[i][0])
	}
	want := rampRatio(u)
	var ramp [2]float64
	var best [2]Workload
	for k, l := range []simenv.Time{0, lead} {
		s := &search{ft: ft, obs: obs, from: l, to: l + span, deadline: ft.deadline, loss: math.Inf(1),
			byKind: map[string]scored{}, refined: map[string]scored{}}
		s.flows()
		best[k] = s.best
		ramp[k] = ft.simRamp(s.best, l, l+span)
	}
	from := fmt.Sprintf("the first third's mean host utilisation over the window's: observed %.2f; simulated from empty %.2f (%s), after a lead-in of %s %.2f (%s)",
		want, ramp[0], best[0].Describe(), durText(lead), ramp[1], best[1].Describe())
	if ramp[1]-ramp[0] > MinRampGap && math.Abs(want-ramp[1]) < math.Abs(want-ramp[0]) {
		ft.lead = lead
		ft.notes = append(ft.notes, "the observation began on traffic already running: the twin runs a lead-in of "+durText(lead)+" before it ("+from+")")
	} else {
		ft.notes = append(ft.notes, "the observation began with its traffic: the twin starts on an empty fabric as it did ("+from+")")
	}
	ft.o.Log("%s", ft.notes[len(ft.notes)-1])
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

// simRamp is rampRatio of w simulated as the first window over [from, to)
// (after a lead-in of from), each of the search's seeds' series in turn,
// their mean; 1 when it cannot run.
func (ft *fitter) simRamp(w Workload, from, to simenv.Time) float64 {
	s := ft.scenario([]Phase{{Start: 0, End: to, Workload: w}})
	s.Duration = to
	cfg, err := s.Config()
	if err != nil {
		return 1
	}
	sum, n := 0.0, 0
	for k := range ft.o.Seeds {
		kept, ok := ft.measure(cfg, w, from, ft.o.Seed+uint64(k), 1)
		if !ok {
			continue
		}
		var u []float64
		for _, row := range NewTimeline(kept).Series() {
			u = append(u, row[0])
		}
		sum += rampRatio(u)
		n++
	}
	if n == 0 {
		return 1
	}
	return sum / float64(n)
}
