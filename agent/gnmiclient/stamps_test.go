package gnmiclient

import (
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
)

// A port's speed, sampled beside the counters and stamped by a cache-based
// server with the time it last changed (an hour ago), neither paces the
// samples nor moves the stream's clock: every port reads its 50 Gb/s over
// one sample (it was taken for counters: 'the switch's clock moved by
// -1h', then '+1h', every sample, and every port read util 0.000 over
// 1h0m2.9s).
func TestOldPortSpeedStampIsNoCounters(t *testing.T) {
	sample := 200 * time.Millisecond
	snaps, latest, said := observeStamps(t, &stampSwitch{sample: sample, oldSpeed: true}, 3*time.Second)
	if s := strings.Join(said, "\n"); strings.Contains(s, "clock moved") || strings.Contains(s, "off the stream's time") {
		t.Errorf("the speeds' stamps judged as the counters': %s", s)
	}
	checkHalfLoad(t, snaps, latest, sample)
}

// A switch that stamps each port's counters with the time it read them,
// 1 ms after the previous port's, makes one snapshot a sample, in which
// every port reads its 50 Gb/s over one sample (each later stamp began a
// new sample: 57 snapshots in 3 s of 15 samples, Ethernet1-3 read util
// 0.000 over 1 ms, Ethernet4 invalid).
func TestStaggeredStampsOneSnapshotASample(t *testing.T) {
	sample := 200 * time.Millisecond
	snaps, latest, said := observeStamps(t, &stampSwitch{sample: sample, step: time.Millisecond}, 3*time.Second)
	if s := strings.Join(said, "\n"); strings.Contains(s, "clock moved") || strings.Contains(s, "off the stream's time") {
		t.Errorf("staggered stamps judged wrong: %s", s)
	}
	checkHalfLoad(t, snaps, latest, sample)
}

// checkHalfLoad checks the snapshots of 3 s of stampSwitch samples: about
// one a sample, and every port's newest observation valid at ~50% of its
// 100 Gb/s over about one sample.
func checkHalfLoad(t *testing.T, snaps int, latest map[string]env.Observation, sample time.Duration) {
	t.Helper()
	if want := int(3 * time.Second / sample); snaps < want-3 || snaps > want+2 {
		t.Errorf("%d snapshots in 3 s of %s samples, want about %d (one a sample)", snaps, sample, want)
	}
	for _, p := range stampPorts {
		o, iv := latest[p], time.Duration(latest[p].Metrics.IntervalNs)
		if !o.Valid || o.Metrics.Util < 0.45 || o.Metrics.Util > 0.55 || iv < sample*8/10 || iv > sample*12/10 {
			t.Errorf("%s carries 50 Gb/s on 100 Gb/s: its newest observation reads util %.3f over %s (valid %v), want ~0.5 over ~%s",
				p, o.Metrics.Util, iv, o.Valid, sample)
		}
	}
}
