package agent

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
)

// recObserver keeps the last snapshot it was given.
type recObserver struct{ last env.Snapshot }

func (o *recObserver) Observe(s env.Snapshot) []env.Observation {
	o.last = s
	return (&fakeObserver{metrics: map[env.QueueKey]env.Metrics{}}).Observe(s)
}
func (o *recObserver) Forget(string) {}

// A switch that exports its headroom but no floor gets the floor of its
// target's stated cable and mtu; without a cable the floor stays unknown.
func TestIngestComputesFloorFromCable(t *testing.T) {
	for _, c := range []struct {
		cable float64
		frame int
		want  int64
	}{{100, 9100, env.LosslessFloor(100e9, 100, 9100)}, {0, 0, 0}} {
		j, err := journal.OpenJournal(filepath.Join(t.TempDir(), "agent.db"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(config.ModeShadow)
		cfg.Targets[0].CableMeters, cfg.Targets[0].FrameBytes = c.cable, c.frame
		rec := &recObserver{}
		a, err := New(Options{Config: cfg, Policy: &fixedPolicy{s: target}, Model: "fixed@1", Observer: rec, Journal: j,
			Switches: []Switch{newFakeSwitch("leaf0", kA)}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		a.Ingest(env.Snapshot{Target: "leaf0", TimeNs: sec, Queues: []env.QueueSample{
			{Key: kA, RateBps: 100e9, Setting: target, Missing: env.TelHeadroom | env.TelXoff},
			{Key: kB, RateBps: 100e9, Setting: env.Setting{KminBytes: 1, KmaxBytes: 2, Pmax: 0.1}, Missing: env.TelHeadroom}, // no headroom shown
		}})
		j.Close()
		q, noHdrm := rec.last.Queues[0], rec.last.Queues[1]
		wantMissing := env.TelHeadroom | env.TelXoff
		if c.want > 0 {
			wantMissing = env.TelXoff
		}
		if q.MinHeadroomBytes != c.want || q.FloorEstimated != (c.want > 0) || q.Missing != wantMissing || noHdrm.MinHeadroomBytes != 0 || noHdrm.Missing != env.TelHeadroom {
			t.Fatalf("cable %gm: floor %d (missing %v), want %d (missing %v); a queue without headroom: floor %d, missing %v",
				c.cable, q.MinHeadroomBytes, q.Missing, c.want, wantMissing, noHdrm.MinHeadroomBytes, noHdrm.Missing)
		}
	}
	// 2 frames of 9100 B + a 64 B PAUSE + 2 x 500 ns of wire at 100G (12,500 B) + 394 quanta (25,216 B).
	if f := env.LosslessFloor(100e9, 100, 9100); f != 55_980 {
		t.Fatalf("floor at 100G, 100 m, 9100 B frames: %d B, want 55980", f)
	}
}

func TestConfigCable(t *testing.T) {
	c, err := config.Parse([]byte("targets: {sw0: {address: 'h:1', dialect: sonic, cable: 40m}, sw1: {address: 'h:2', cable: 0.3km, mtu: 4200}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range c.Targets {
		switch tc.Name {
		case "sw0":
			if tc.CableMeters != 40 || tc.FrameBytes != config.DefaultFrameBytes {
				t.Fatalf("sw0: %g m, %d B", tc.CableMeters, tc.FrameBytes)
			}
		case "sw1":
			if tc.CableMeters != 300 || tc.FrameBytes != 4218 { // mtu and Ethernet header and FCS
				t.Fatalf("sw1: %g m, %d B", tc.CableMeters, tc.FrameBytes)
			}
		}
	}
	for in, want := range map[string]string{
		"cable: 40":          `targets.sw0.cable: "40" has no unit`,
		"cable: -3m":         "want a length above 0",
		"cable: 40m, mtu: 9": "targets.sw0.mtu: 9: want the port MTU in bytes, 68 to 9216",
		"mtu: 9100":          "targets.sw0.mtu: only used with cable",
	} {
		_, err := config.Parse([]byte("targets: {sw0: {address: 'h:1', " + in + "}}\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", in, err, want)
		}
	}
}

// Counters beyond what the links carry leave the interval out (env) and
// the queue undecided; the agent says so once, with an example, and again
// when they are plausible (it showed only "undecided=8").
func TestIngestWarnsOfMalformedCounters(t *testing.T) {
	j, err := journal.OpenJournal(filepath.Join(t.TempDir(), "agent.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var log strings.Builder
	a, err := New(Options{Config: testConfig(config.ModeShadow), Policy: &fixedPolicy{s: target}, Model: "fixed@1",
		Observer: env.NewObserver(env.ObserverConfig{}), Journal: j,
		Switches: []Switch{newFakeSwitch("leaf0", kA)}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tx := uint64(0)
	for i, perMs := range []uint64{6_250_000, 6_250_000, 12_500_000 * 1000, 12_500_000 * 1000, 6_250_000} { // 50% of 100G, then 1000 times the line
		tx += perMs
		a.Ingest(env.Snapshot{Target: "leaf0", TimeNs: int64(i+1) * 1_000_000, Queues: []env.QueueSample{
			{Key: kA, RateBps: 100e9, Setting: target, TxBytes: tx, TxPkts: tx / 1000}}})
	}
	out := log.String()
	if n := strings.Count(out, "counters beyond what the links carry"); n != 1 || !strings.Contains(out, "leaf0/Ethernet0/q3: malformed counters") ||
		strings.Count(out, "counters plausible again") != 1 {
		t.Fatalf("log (%d warnings):\n%s", n, out)
	}
}
