package twin

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
)

// Report is a fit's account: the fabric built, each window's workload,
// every statistic observed and simulated with its error, the time each
// step took and what was assumed.
type Report struct {
	Fabric Fabric
	// IntervalNs is the agent's measured interval; TwinInterval the
	// twin's; Intervals the observed intervals.
	IntervalNs   int64
	TwinInterval simenv.Time
	Intervals    int
	Phases       []PhaseReport
	Rows         []StatRow
	// OtherSetting is the share of the observed host-port
	// queue-intervals that ran another ECN setting than the twin's (a
	// closed loop's changes; a scenario holds one setting): 0 when all
	// ran it.
	OtherSetting float64 `json:",omitempty"`
	// Runs is how many simulations the fit ran.
	Runs  int
	Times struct{ Topology, Search, Final time.Duration }
	Notes []string
	// Observed and Simulated are the per-interval figures both sides
	// drew, on the twin's time line (seconds).
	Observed, Simulated Series
}

// StatRow is one statistic of one window and role.
type StatRow struct {
	Window    int
	Role      string
	Name      string
	Observed  float64
	Simulated float64
	// Error is (simulated − observed) / max(|observed|, the statistic's
	// scale): 0.1 is 10% off, or a tenth of the scale for a figure near 0.
	Error float64
}

// addRows adds window i's rows.
func (r *Report) addRows(i int, obs, sim Stats) {
	errs := Errors(obs, sim)
	for _, role := range obs.Roles() {
		for _, d := range statDefs {
			r.Rows = append(r.Rows, StatRow{Window: i, Role: role, Name: d.Name, Observed: obs[role][d.Name],
				Simulated: sim[role][d.Name], Error: errs[role][d.Name]})
		}
	}
}

// MeanAbsError is the mean absolute error of the rows of a role ("" all).
func (r *Report) MeanAbsError(role string) float64 {
	s, n := 0.0, 0
	for _, row := range r.Rows {
		if role == "" || row.Role == role {
			s += math.Abs(row.Error)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// WriteText writes the report as an operator reads it.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	f := &r.Fabric
	fmt.Fprintf(&b, "fabric: %s\n", f.Describe())
	fmt.Fprintf(&b, "observed: %d intervals of %v; the twin's interval %v\n", r.Intervals, time.Duration(r.IntervalNs), r.TwinInterval.Duration())
	if w := r.SettingWarning(); w != "" {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	for i, p := range r.Phases {
		fmt.Fprintf(&b, "window %d (%s-%s, observed intervals %d-%d): %s; search loss %.3f, in the whole run %.3f (%d runs, %s)\n",
			i, durText(p.Start), durText(p.End), p.From, p.To-1, p.Workload, p.SearchLoss, p.FinalLoss, p.Runs, p.Time.Round(time.Second))
		if len(p.Untried) > 0 {
			fmt.Fprintf(&b, "  the budget ended before it tried %s: its fit and rivals speak for the kinds tried only (raise --runs or --budget)\n",
				strings.Join(p.Untried, ", "))
		}
		if len(p.Rivals) == 0 {
			tried := "no other kind of workload"
			if len(p.Untried) > 0 {
				tried = "no other kind tried"
			}
			fmt.Fprintf(&b, "  no rival: %s came within %.3f in loss, parameters counted (%gx its loss, or %g: the noise)\n",
				tried, rivalBound(p.penalised), RivalLossFactor, RivalNoiseLoss)
		}
		for _, rv := range p.Rivals {
			fmt.Fprintf(&b, "  rival: %s; search loss %.3f, parameters counted %.3f (+%.3f)\n", rv.Workload, rv.SearchLoss, rv.Penalised, rv.Excess)
		}
		if e := p.Edge; e != nil {
			fmt.Fprintf(&b, "  edge of its kind: %s; search loss %.3f, parameters counted %.3f (+%.3f)\n", e.Workload, e.SearchLoss, e.Penalised, e.Excess)
		}
	}
	fmt.Fprintf(&b, "times: topology %s, search %s, final run %s; %d simulations\n", r.Times.Topology.Round(time.Millisecond),
		r.Times.Search.Round(time.Second), r.Times.Final.Round(time.Millisecond), r.Runs)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "window\trole\tstatistic\tobserved\tsimulated\terror\t")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.4g\t%.4g\t%+.0f%%\t\n", row.Window, row.Role, row.Name, row.Observed, row.Simulated, 100*row.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nmean |error|: %.0f%%", 100*r.MeanAbsError(""))
	if r.Fabric.Kind != "star" {
		fmt.Fprintf(&b, " (host ports %.0f%%, fabric ports %.0f%%)", 100*r.MeanAbsError(RoleHost), 100*r.MeanAbsError(RoleFabric))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// SettingWarning says that some observed queue-intervals ran another ECN
// setting than the twin simulates ("" when none did).
func (r *Report) SettingWarning() string {
	if r.OtherSetting <= 0 {
		return ""
	}
	return fmt.Sprintf("%.0f%% of the observed host-port queue-intervals ran another ECN setting than the twin's %s (a closed loop changed it; "+
		"a scenario holds one setting, the one they ran most): the fit to those intervals is to counters another marking made", 100*r.OtherSetting, r.Fabric.ECN.Describe())
}

// Describe renders the fabric in one line.
func (f *Fabric) Describe() string {
	var topo string
	if f.Kind == "star" {
		topo = fmt.Sprintf("star of %d hosts at %s (switch %s)", f.Hosts, units.FormatRate(f.HostRateBps), strings.Join(f.LeafNames, ""))
	} else {
		topo = fmt.Sprintf("leaf-spine, %d leaves x %d spines, %d hosts a leaf at %s, %s leaf-spine links", f.Leaves, f.Spines,
			f.HostsPerLeaf, units.FormatRate(f.HostRateBps), units.FormatRate(f.FabricRateBps))
	}
	hdrm := "the lossless floor"
	if f.HeadroomBytes > 0 {
		hdrm = units.FormatBytes(f.HeadroomBytes) + " at 100G"
	}
	return fmt.Sprintf("%s; buffer %s, link delay %v, cable %gm, mtu %d, ECN %s at 100G, alpha %s, headroom %s, queue %d", topo,
		units.FormatBytes(f.BufferBytes), f.LinkDelay.Duration(), f.CableMeters, f.MTU, f.ECN.Describe(), env.FormatAlpha(f.Alpha), hdrm, f.Queue)
}

// Series are per-interval figures of a run: mean utilisation of host and
// fabric ports, mean queue watermark (reference BDPs), marked fraction of
// bytes and mean incast score.
type Series struct {
	Time                                      []float64
	HostUtil, FabricUtil, MaxQueue, Mark, Inc []float64
}

// seriesOf is tl's Series, its time in seconds from tl's first interval
// less one interval.
func seriesOf(tl Timeline) Series {
	var s Series
	x := tl.Series()
	t0 := int64(0)
	if len(tl.Times) > 0 {
		t0 = tl.Times[0] - tl.IntervalNs
	}
	for i, row := range x {
		s.Time = append(s.Time, float64(tl.Times[i]-t0)/1e9)
		s.HostUtil = append(s.HostUtil, row[0])
		s.FabricUtil = append(s.FabricUtil, row[1])
		s.MaxQueue = append(s.MaxQueue, row[2])
		s.Mark = append(s.Mark, row[3])
		s.Inc = append(s.Inc, row[4])
	}
	return s
}
