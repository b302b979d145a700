package policy

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
)

func TestHeadroomWrapper(t *testing.T) {
	p, err := Resolver{}.Lookup("static:hpcc+headroom=floor*1.5")
	if err != nil {
		t.Fatal(err)
	}
	o := validObs(100e9, env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 200_000})
	o.MinHeadroomBytes = 40_000
	unknown := o
	unknown.MinHeadroomBytes = 0
	ds := p.Decide([]env.Observation{o, unknown})
	if ds[0].Setting.HeadroomBytes != 60_000 || ds[1].Setting.HeadroomBytes != 200_000 || !strings.Contains(ds[0].Reason, "headroom 60KB (1.5 × the lossless floor 40KB)") || p.Name() != "static:hpcc+headroom=floor*1.5" {
		t.Errorf("decisions %+v", ds)
	}
	for _, bad := range []string{"static:hpcc+headroom=half", "static:hpcc+headroom=floor*0.5", "nope+headroom=floor"} {
		if _, err := (Resolver{}).Lookup(bad); err == nil || !strings.Contains(err.Error(), "") {
			t.Errorf("%s accepted", bad)
		}
	}
}

// A floor ecntune estimated (from a cable length and MTU) above the
// headroom the switch already runs is no reason to raise it: the vendor
// sized it by a tighter rule. Below the switch's headroom it is used as a
// floor is.
func TestHeadroomEstimatedFloor(t *testing.T) {
	p, err := Lookup("static:hpcc+headroom=floor")
	if err != nil {
		t.Fatal(err)
	}
	cur := env.Setting{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2, HeadroomBytes: 37_936}
	tight := validObs(100e9, cur)
	tight.MinHeadroomBytes, tight.FloorEstimated = 44_141, true
	roomy := tight
	roomy.Current.HeadroomBytes = 90_000
	ds := p.Decide([]env.Observation{tight, roomy})
	if ds[0].Setting.HeadroomBytes != 37_936 || strings.Contains(ds[0].Reason, "floor") {
		t.Errorf("below the estimate: %+v, want the switch's 37936 kept", ds[0])
	}
	if ds[1].Setting.HeadroomBytes != 44_141 {
		t.Errorf("above the estimate: %+v, want the estimate", ds[1])
	}
}
