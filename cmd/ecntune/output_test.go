package main

import (
	"testing"

	"github.com/ecntune/ecntune/env"
)

// The CLI's setting columns (history, pending, approve, the rollback plan)
// show alpha when the queue has one, as agent report does: an alpha
// change printed the same setting on both sides of the arrow.
func TestFmtSettingShowsAlpha(t *testing.T) {
	s := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 52_376}
	for _, c := range []struct {
		alpha float64
		want  string
	}{
		{0, "400KB/1.6MB/20% headroom 52.38KB"},
		{0.5, "400KB/1.6MB/20% headroom 52.38KB alpha 1/2"},
		{2, "400KB/1.6MB/20% headroom 52.38KB alpha 2"},
		{1.0 / 64, "400KB/1.6MB/20% headroom 52.38KB alpha 1/64"},
	} {
		x := s
		x.Alpha = c.alpha
		if got := fmtSetting(x); got != c.want {
			t.Errorf("alpha %g: %q, want %q", c.alpha, got, c.want)
		}
	}
}
