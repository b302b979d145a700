package policy

import (
	"math"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
)

func TestPresetTable(t *testing.T) {
	want := map[string]env.Setting{ // at 100 Gb/s
		"dcqcn-paper":       {KminBytes: 12_500, KmaxBytes: 500_000, Pmax: 0.01},
		"hpcc":              {KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2},
		"sonic-default":     {KminBytes: 1_048_576, KmaxBytes: 2_097_152, Pmax: 0.05},
		"sonic-mellanox":    {KminBytes: 2_000_000, KmaxBytes: 10_000_000, Pmax: 0.05},
		"nvidia":            {KminBytes: 150_000, KmaxBytes: 1_500_000, Pmax: 0.1},
		"huawei-latency":    {KminBytes: 7_000, KmaxBytes: 500_000, Pmax: 0.3},
		"huawei-throughput": {KminBytes: 7_000, KmaxBytes: 750_000, Pmax: 0.1},
		"cisco":             {KminBytes: 150_000, KmaxBytes: 3_000_000, Pmax: 0.07},
	}
	names := PresetNames()
	if len(names) != len(want) {
		t.Fatalf("presets %v, want %d", names, len(want))
	}
	for _, n := range names {
		p, err := Preset(n)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Setting(100e9); got != want[n] {
			t.Errorf("%s at 100G = %+v, want %+v", n, got, want[n])
		}
		if p.Name() != "static:"+n || p.Source() == "" {
			t.Errorf("%s: name %q source %q", n, p.Name(), p.Source())
		}
		s100 := p.Setting(100e9)
		for _, rate := range []float64{25e9, 40e9, 100e9, 400e9} {
			s := p.Setting(rate)
			if s.KminBytes <= 0 || s.KminBytes > s.KmaxBytes || !(s.Pmax > 0 && s.Pmax <= 1) {
				t.Errorf("%s at %g: %+v breaks 0 < kmin <= kmax, pmax in (0,1]", n, rate, s)
			}
			if s.Pmax != s100.Pmax {
				t.Errorf("%s at %g: pmax %g, want %g at every rate", n, rate, s.Pmax, s100.Pmax)
			}
			if strings.HasPrefix(n, "huawei") && rate == 25e9 {
				continue // vendor states 25GE explicitly
			}
			f := rate / 100e9
			if math.Abs(float64(s.KmaxBytes)-f*float64(s100.KmaxBytes)) > 0.5 || math.Abs(float64(s.KminBytes)-f*float64(s100.KminBytes)) > 0.5 {
				t.Errorf("%s at %g: %+v is not %g x the 100G setting %+v", n, rate, s, f, s100)
			}
		}
	}
	// The DCQCN paper's own 40 Gb/s figures come back at 40 Gb/s.
	d, _ := Preset("dcqcn-paper")
	if s := d.Setting(40e9); s.KminBytes != 5_000 || s.KmaxBytes != 200_000 {
		t.Fatalf("dcqcn-paper at 40G = %+v, want 5KB/200KB", s)
	}
	// Huawei's explicit 25GE values.
	h, _ := Preset("huawei-latency")
	if s := h.Setting(25e9); s.KmaxBytes != 150_000 || s.KminBytes != 7_000 {
		t.Fatalf("huawei-latency at 25G = %+v, want 7KB/150KB", s)
	}
	h, _ = Preset("huawei-throughput")
	if s := h.Setting(25e9); s.KmaxBytes != 200_000 {
		t.Fatalf("huawei-throughput at 25G = %+v, want kmax 200KB", s)
	}
	if _, err := Preset("nope"); err == nil || !strings.Contains(err.Error(), "sonic-default") {
		t.Fatalf("unknown preset: err = %v, want the list of known ones", err)
	}
}

func TestStaticDecide(t *testing.T) {
	p, err := NewStatic("sonic-mellanox")
	if err != nil {
		t.Fatal(err)
	}
	obs := []env.Observation{
		{Key: env.QueueKey{Target: "a", Port: "Ethernet0", Queue: 3}, RateBps: 400e9, Current: env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 1, HeadroomBytes: 123}},
		{Key: env.QueueKey{Target: "a", Port: "Ethernet1", Queue: 3}, RateBps: 0, Current: env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 1}},
	}
	ds := p.Decide(obs)
	if len(ds) != 2 {
		t.Fatalf("%d decisions", len(ds))
	}
	want := env.Setting{KminBytes: 8_000_000, KmaxBytes: 40_000_000, Pmax: 0.05, HeadroomBytes: 123}
	if ds[0].Setting != want || ds[0].Confidence != 1 || ds[0].Reason != "preset sonic-mellanox" || ds[0].Action != -1 || ds[0].Key != obs[0].Key {
		t.Fatalf("decision %+v, want %+v at confidence 1", ds[0], want)
	}
	if ds[1].Setting != obs[1].Current || ds[1].Confidence != 0 || !strings.Contains(ds[1].Reason, "holding") {
		t.Fatalf("unknown rate: %+v, want hold", ds[1])
	}
}

// Every preset's Kmax is within half a grid step of a catalogue level, so a
// catalogue policy can cap the queue where any vendor does. (Kmin ratios
// and Pmax levels of act-v2 leave out the presets' early, steep ramps on
// purpose: see env.ActionSpecVersion.)
func TestPresetsNearCatalogue(t *testing.T) {
	c := env.DefaultCatalogue()
	kl, rl, pl := c.KmaxLevels(), c.KminRatios(), c.PmaxLevels()
	maxStep := func(levels []float64) float64 {
		m := 0.0
		for i := 1; i < len(levels); i++ {
			m = math.Max(m, math.Log(levels[i]/levels[i-1]))
		}
		return m
	}
	kf := make([]float64, len(kl))
	for i, v := range kl {
		kf[i] = float64(v)
	}
	for _, n := range PresetNames() {
		p, _ := Preset(n)
		s := p.Setting(100e9)
		i, j, l, ok := c.Grid(c.Nearest(s, 100e9))
		if !ok {
			t.Fatalf("%s: nearest is not a grid point", n)
		}
		if r := float64(s.KminBytes) / float64(s.KmaxBytes); !(r >= 0 && r <= 1) || rl[j] <= 0 || pl[l] <= 0 {
			t.Fatalf("%s: kmin ratio %g, nearest grid ratio %g, pmax %g", n, r, rl[j], pl[l])
		}
		for _, ax := range []struct {
			name       string
			got, level float64
			step       float64
		}{
			{"kmax", float64(s.KmaxBytes), kf[i], maxStep(kf)},
		} {
			if d := math.Abs(math.Log(ax.got / ax.level)); d > ax.step/2+1e-9 {
				t.Errorf("%s: %s %g is %.2f log-units from the nearest level %g (half step %.2f)", n, ax.name, ax.got, d, ax.level, ax.step/2)
			}
		}
	}
}
