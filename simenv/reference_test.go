package simenv_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
)

const refDir = "../../shared/reference/ns3-hpcc"

func loadRef(t testing.TB, name string) simenv.Config {
	t.Helper()
	p := filepath.Join(refDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference data not found at %s", p)
	}
	c, err := scenario.LoadHPCCConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFatTreeSpeedProbe(t *testing.T) {
	c := loadRef(t, "config_fat_ws30_dcqcn.txt")
	s, err := simenv.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	s.Run()
	w := time.Since(t0)
	st := s.Stats()
	t.Logf("wall %v sim %v hops %d (%.2f M/s) events %d finished %d/%d drops %d pauses %d marks %d",
		w, st.Now, st.PacketHops, float64(st.PacketHops)/w.Seconds()/1e6, st.Events, st.FlowsFinished, st.FlowsStarted, st.Drops, st.PFCPauses, st.ECNMarked)
}
