package env

import (
	"math"
	"testing"
)

func TestSettingScaledTo(t *testing.T) {
	s := Setting{KminBytes: 12_500, KmaxBytes: 500_000, Pmax: 0.01, HeadroomBytes: 90_000}
	for _, c := range []struct {
		rate float64
		want Setting
	}{
		{100e9, s},
		{40e9, Setting{KminBytes: 5_000, KmaxBytes: 200_000, Pmax: 0.01, HeadroomBytes: 90_000}},
		{25e9, Setting{KminBytes: 3_125, KmaxBytes: 125_000, Pmax: 0.01, HeadroomBytes: 90_000}},
		{10e9, Setting{KminBytes: 1_250, KmaxBytes: 50_000, Pmax: 0.01, HeadroomBytes: 90_000}},
		{1e9, Setting{KminBytes: 125, KmaxBytes: 5_000, Pmax: 0.01, HeadroomBytes: 90_000}},
		{0, s}, {-1, s}, {math.NaN(), s}, {math.Inf(1), s}, {math.Inf(-1), s},
	} {
		if got := s.ScaledTo(c.rate); got != c.want {
			t.Errorf("ScaledTo(%g) = %+v, want %+v", c.rate, got, c.want)
		}
	}
	// Half bytes round away from zero, as units.ScaleBytes does.
	if got := (Setting{KminBytes: 1, KmaxBytes: 3}).ScaledTo(50e9); got.KminBytes != 1 || got.KmaxBytes != 2 {
		t.Errorf("ScaledTo(50G) of 1/3 B = %+v, want 1/2 B", got)
	}
}
