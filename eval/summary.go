package eval

import (
	"encoding/json"
	"io"
)

// Summary is what an eval concludes, beside its runs (WriteJSON): every
// policy's comparison with the best preset, static:best and the frontier
// of fixed settings, and every fixed setting that ran, as the frontier
// plot draws them. Scenarios are named as in WriteJSON, without the
// @DURATION the text tables add, unless two of them would share a name
// (one scenario at two durations).
type Summary struct {
	Comparisons   []Comparison   `json:"comparisons"`
	FixedSettings []FixedSetting `json:"fixed_settings"`
}

// FixedSetting is one fixed setting (a vendor preset or a catalogue grid
// point) on one scenario, as means over its seeds.
type FixedSetting struct {
	Scenario string `json:"scenario"`
	// Setting is its spec as the comparisons' frontier and at_goodput name
	// it: static:NAME, or for a catalogue grid point its setting at 100
	// Gb/s (scaled to each port's rate), "catalogue:kmin 50KB kmax 100KB
	// pmax 1% @100G".
	Setting          string  `json:"setting"`
	Seeds            int     `json:"seeds"`
	SmallP99         float64 `json:"small_flow_p99"`
	LargeGoodputGbps float64 `json:"large_flow_goodput_gbps"`
	// The large-flow goodput of either definition (Options.Goodput; the
	// one above is the one the comparisons read).
	LargeGoodputFinishedGbps float64 `json:"large_flow_goodput_finished_gbps"`
	LargeGoodputCensoredGbps float64 `json:"large_flow_goodput_censored_gbps"`
	// Drops sums the seeds' drops; PFCPauses and PFCPausedUs are means
	// per run.
	Drops       uint64  `json:"drops"`
	PFCPauses   float64 `json:"pfc_pauses"`
	PFCPausedUs float64 `json:"pfc_paused_us"`
	// OnFrontier: it dropped nothing, and no other fixed setting that
	// dropped nothing is as good on both axes and better on one (at least
	// its large-flow goodput at no higher small-flow p99): a point of the
	// frontier the frontier ratio is measured against (and the plot's
	// line runs through).
	OnFrontier bool `json:"on_frontier"`
}

// Summary computes r's Summary.
func (r *Result) Summary() Summary {
	s := Summary{Comparisons: r.comparisons(), FixedSettings: []FixedSetting{}}
	if s.Comparisons == nil {
		s.Comparisons = []Comparison{}
	}
	all := r.allRuns()
	base, labels := map[string]string{}, map[string]int{}
	for _, x := range all {
		if _, ok := base[x.Scenario]; !ok && x.baseName != "" {
			base[x.Scenario] = x.baseName
			labels[x.baseName]++
		}
	}
	rename := func(sc string) string {
		if b, ok := base[sc]; ok && labels[b] == 1 {
			return b
		}
		return sc
	}
	for i := range s.Comparisons {
		s.Comparisons[i].Scenario = rename(s.Comparisons[i].Scenario)
	}
	for _, sc := range r.Scenarios {
		byCand, order := group(all, sc, isFixed)
		first := len(s.FixedSettings)
		for _, c := range order {
			rs := byCand[c]
			f := FixedSetting{Scenario: rename(sc), Setting: c, Seeds: len(rs),
				SmallP99: SmallP99Mean(rs), LargeGoodputGbps: mean(rs, largeGoodput),
				LargeGoodputFinishedGbps: mean(rs, func(x Run) float64 { return x.LargeGoodputFinishedGbps }),
				LargeGoodputCensoredGbps: mean(rs, func(x Run) float64 { return x.LargeGoodputCensoredGbps }),
				PFCPauses:                mean(rs, func(x Run) float64 { return float64(x.PFCPauses) }),
				PFCPausedUs:              mean(rs, func(x Run) float64 { return x.PFCPausedUs })}
			for _, x := range rs {
				f.Drops += x.Drops
			}
			s.FixedSettings = append(s.FixedSettings, f)
		}
		pts := s.FixedSettings[first:]
		for i := range pts {
			p := &pts[i]
			p.OnFrontier = p.Drops == 0 && p.SmallP99 > 0
			for _, q := range pts {
				if q.Drops == 0 && q.SmallP99 > 0 && q.LargeGoodputGbps >= p.LargeGoodputGbps && q.SmallP99 <= p.SmallP99 &&
					(q.LargeGoodputGbps > p.LargeGoodputGbps || q.SmallP99 < p.SmallP99) {
					p.OnFrontier = false
					break
				}
			}
		}
	}
	return s
}

// WriteSummaryJSON writes r's Summary as one indented JSON object.
func (r *Result) WriteSummaryJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.Summary())
}
