package agent

import (
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
)

// agent report draws what a closed loop stored: heatmaps, a chart per
// busiest queue and the audit log; an empty db or an unknown target is a
// named error.
func TestWriteReport(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	store := true
	r.a.cfg.StoreRecommendations = &store // a closed loop stores them only when told
	dir := t.TempDir()
	if _, err := web.WriteReport(r.j, dir, web.ReportOptions{}); !errors.Is(err, web.ErrNothingStored) {
		t.Fatalf("empty db: %v", err)
	}
	r.obs.metrics[kA] = env.Metrics{IntervalNs: sec, Util: 0.9, MarkFrac: 0.2, MaxDelayNs: 8_000, AvgDelayNs: 2_000}
	for range 5 {
		r.interval(t)
	}
	rf, err := web.WriteReport(r.j, t.TempDir(), web.ReportOptions{Intervals: 4, Queues: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rf.Intervals != 4 || rf.Skipped != 1 || rf.Queues != 2 || len(rf.Pictures) != 5 {
		t.Errorf("report of the last 4 intervals %+v", rf)
	}
	rf, err = web.WriteReport(r.j, dir, web.ReportOptions{Queues: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Two queues asked for, one busy: the idle one gets no chart.
	if rf.Intervals != 5 || rf.Skipped != 0 || rf.Changes == 0 || len(rf.Pictures) != 5 {
		t.Errorf("report %+v", rf)
	}
	for _, p := range rf.Pictures {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		f.Close()
	}
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"5 control intervals", `src="fabric-depth.png"`,
		`src="queue-1.png"`, "Queue leaf0 " + kA.Port + " q3", "<td>tune</td>"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if _, err := web.WriteReport(r.j, dir, web.ReportOptions{Target: "leaf9"}); !errors.Is(err, web.ErrNothingStored) || !strings.Contains(err.Error(), "leaf9") {
		t.Errorf("unknown target: %v", err)
	}
}
