package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/simenv"
)

// A run whose first flow starts late (an ns-3 flow file at 2 s) gives its
// utilisation from that start too, and says the whole run's includes the
// idle lead-in.
func TestUtilisationFromTheFirstFlow(t *testing.T) {
	f := flow(0, 1_000_000, 2)
	f.Start, f.Finish = 2*simenv.Second, 2*simenv.Second+100*us
	st := simenv.Stats{Now: 2*simenv.Second + 10*simenv.Millisecond, Hosts: 2, HostTxBusy: 10 * simenv.Millisecond}
	s := Summarize([]simenv.FlowRecord{f}, st, time.Second)
	if s.FirstFlowS != 2 || s.UtilisationFromFirstFlow != 0.5 || s.Utilisation > 0.01 {
		t.Fatalf("first flow %g s, utilisation %g from it, %g in all", s.FirstFlowS, s.UtilisationFromFirstFlow, s.Utilisation)
	}
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "50.0% from the first flow's start at 2s (0.2% with the idle lead-in before it)") {
		t.Errorf("text:\n%s", b.String())
	}
	// A run whose traffic starts at once says nothing of it.
	f.Start = 0
	if s := Summarize([]simenv.FlowRecord{f}, st, time.Second); s.FirstFlowS != 0 || s.UtilisationFromFirstFlow != 0 {
		t.Errorf("no lead-in: %+v", s)
	}
}
