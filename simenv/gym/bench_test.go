package gym

import (
	"testing"

	"github.com/ecntune/ecntune/simenv"
)

// BenchmarkEpisode plays a 2 ms episode of a two-leaf fabric under
// incasts and web-search-like flows holding every queue, without and with
// the critic's ground truth (Options.Truth): what the truth adds to a
// training episode.
func BenchmarkEpisode(b *testing.B) {
	cfg := leafSpineSmallIncast()
	cfg.Duration = 2 * simenv.Millisecond
	cfg.Workloads = append(cfg.Workloads, simenv.Workload{Kind: simenv.WorkloadCDF, Priority: 3, Load: 0.5,
		CDF: []simenv.CDFPoint{{Bytes: 1000, Percent: 0}, {Bytes: 20_000, Percent: 60}, {Bytes: 2_000_000, Percent: 100}}})
	for _, truth := range []bool{false, true} {
		name := "counters"
		if truth {
			name = "truth"
		}
		b.Run(name, func(b *testing.B) {
			e, err := New(cfg, Options{Interval: 100 * simenv.Microsecond, Truth: truth})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				obs, err := e.Reset(3)
				if err != nil {
					b.Fatal(err)
				}
				hold := make([]int, len(obs))
				for done := false; !done; {
					if _, _, done, _, err = e.Step(hold); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
