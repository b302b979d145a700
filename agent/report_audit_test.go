package agent

import (
	"os"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
)

// A closed loop without store-recommendations stores no interval, but its
// audit log holds every change: agent report draws that and says what is
// missing, instead of refusing.
func TestWriteReportOfTheAuditLogAlone(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.obs.metrics[kA] = env.Metrics{IntervalNs: sec, Util: 0.9, MarkFrac: 0.2, MaxDelayNs: 8_000, AvgDelayNs: 2_000}
	for range 5 {
		r.interval(t)
	}
	dir := t.TempDir()
	rf, err := web.WriteReport(r.j, dir, web.ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rf.Intervals != 0 || rf.Changes == 0 || len(rf.Pictures) != 0 || !strings.Contains(rf.Missing, "store-recommendations: true") {
		t.Fatalf("report %+v", rf)
	}
	html, err := os.ReadFile(rf.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"audited changes from", "Missing:", "<td>tune</td>"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
}
