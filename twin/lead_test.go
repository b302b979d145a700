package twin

import (
	"io/fs"
	"math"
	"testing"

	"github.com/ecntune/ecntune/scenarios/cdf"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
)

// The lead-in is the time a family's traffic takes to reach LeadShare of
// its utilisation from empty: longer at a lower rate, bounded by MaxLead,
// a whole number of intervals.
func TestLeadFor(t *testing.T) {
	for _, fam := range Families {
		data, err := fs.ReadFile(cdf.Files, fam+".txt")
		if err != nil {
			t.Fatal(err)
		}
		pts, err := scenario.ParseCDF(data, fam)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cappedMean(pts, math.Inf(1)), simenv.CDFMean(pts); math.Abs(got-want) > 1e-6*want {
			t.Errorf("%s: uncapped mean %g, the CDF's %g", fam, got, want)
		}
		if got := cappedMean(pts, 0); got != 0 {
			t.Errorf("%s: mean capped at 0 = %g", fam, got)
		}
		if a, b := cappedMean(pts, 1e5), cappedMean(pts, 1e6); !(a < b) {
			t.Errorf("%s: capped mean not rising with the cap: %g, %g", fam, a, b)
		}
	}
	iv := 200 * simenv.Microsecond
	at := func(rate float64) simenv.Time {
		l, err := leadFor(rate, iv)
		if err != nil {
			t.Fatal(err)
		}
		if l%iv != 0 || l < 2*iv || l > MaxLead {
			t.Errorf("lead-in %v at %g b/s: want whole intervals of %v within [2 intervals, %v]", l.Duration(), rate, iv.Duration(), MaxLead.Duration())
		}
		return l
	}
	// Web search at 100 Gb/s, measured: about 90% of its later utilisation after 2 ms.
	if l100 := at(100e9); l100 < 2*simenv.Millisecond || l100 > 5*simenv.Millisecond {
		t.Errorf("lead-in at 100 Gb/s %v, want 2-5 ms", l100.Duration())
	}
	if l25, l100, l400 := at(25e9), at(100e9), at(400e9); !(l25 > l100 && l100 > l400) {
		t.Errorf("lead-ins at 25, 100, 400 Gb/s: %v, %v, %v: want shorter at a higher rate", l25.Duration(), l100.Duration(), l400.Duration())
	}
	if _, err := leadFor(0, iv); err == nil {
		t.Error("a fabric at 0 b/s has a lead-in")
	}
}
