package agent

import (
	"log/slog"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simswitch"
)

// openconfigFamily are the device profiles of the openconfig dialect.
var openconfigFamily = []string{"ecntune", "openconfig", "arista-eos", "nokia-srl"}

func deviceSim(t *testing.T, device string) (*simswitch.Server, string) {
	return startSim(t, e2eSim(poorECN), "", func(c *simswitch.Config) { c.Device = device })
}

// TestE2EDevicesShadow runs the shadow agent against simswitch imitating
// each device, the agent inferring the device from Capabilities: every
// controlled queue gets a recommendation within three intervals of the
// first, the reasons name what the device lacks, and /targets says which
// device was chosen and why.
func TestE2EDevicesShadow(t *testing.T) {
	for _, dev := range openconfigFamily {
		t.Run(dev, func(t *testing.T) {
			_, addr := deviceSim(t, dev)
			e := runE2E(t, config.ModeShadow, mustStatic(t, "hpcc"), []config.Target{target0(addr, config.DialectOpenConfig)}, e2eGuard())
			want := gnmipath.Devices[dev].Missing
			var recs []core.Recommendation
			waitFor(t, 20*time.Second, "a measured recommendation for every queue", func() bool {
				recs, _ = e.j.Recommendations("sw0", 0, 0)
				return len(queuesOf(recs)) == 4
			})
			e.stop(t)
			// Intervals (distinct decision times) until every queue had one.
			var times []int64
			seen := map[int64]bool{}
			for _, r := range recs {
				if !seen[r.TimeNs] {
					seen[r.TimeNs] = true
					times = append(times, r.TimeNs)
				}
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			covered := map[env.QueueKey]bool{}
			intervals := 0
			for _, ts := range times {
				intervals++
				for _, r := range recs {
					if r.TimeNs == ts && r.Valid {
						covered[r.Key] = true
					}
				}
				if len(covered) == 4 {
					break
				}
			}
			if intervals > 3 {
				t.Fatalf("%s: every queue had a recommendation only after %d intervals", dev, intervals)
			}
			last := recs[len(recs)-1]
			if want != 0 && !strings.Contains(last.Reason, "without "+want.String()) {
				t.Fatalf("%s: reason %q does not name what the device lacks (%s)", dev, last.Reason, want)
			}
			if want == 0 && strings.Contains(last.Reason, "without") {
				t.Fatalf("%s: reason %q names missing telemetry, but the device serves all", dev, last.Reason)
			}
			ti := e.a.Targets()
			if len(ti) != 1 || ti[0].Device != dev || !strings.Contains(ti[0].DeviceWhy, "Capabilities") {
				t.Fatalf("%s: /targets %+v", dev, ti)
			}
			if strings.Join(ti[0].Missing, ", ") != want.String() {
				t.Fatalf("%s: /targets missing %v, want %s", dev, ti[0].Missing, want)
			}
			rec := httptest.NewRecorder()
			e.a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
			if body := rec.Body.String(); want != 0 && !strings.Contains(body, "without "+want.String()) {
				t.Fatalf("%s: /healthz does not name what the switch lacks:\n%s", dev, body)
			}
			t.Logf("%s: %d recommendations, every queue measured and decided within %d intervals; without: %q", dev, len(recs), intervals, want)
		})
	}
}

// queuesOf are the queues with a recommendation made on a measured
// interval.
func queuesOf(recs []core.Recommendation) map[env.QueueKey]bool {
	m := map[env.QueueKey]bool{}
	for _, r := range recs {
		if r.Valid {
			m[r.Key] = true
		}
	}
	return m
}

// TestE2EDevicesClosedLoop applies, reads back and rolls back on every
// device of the openconfig family, naming the device in the target.
func TestE2EDevicesClosedLoop(t *testing.T) {
	for _, dev := range openconfigFamily {
		t.Run(dev, func(t *testing.T) {
			s, addr := deviceSim(t, dev)
			tc := target0(addr, config.DialectOpenConfig)
			tc.Device = dev
			e := runE2E(t, config.ModeClosedLoop, mustStatic(t, "hpcc"), []config.Target{tc}, e2eGuard())
			n := closedLoopOnDevice(t, e, s, 20*time.Second)
			t.Logf("%s: %d audit entries, all applied and read back", dev, n)
		})
	}
}

// e2eHPCC is static:hpcc's setting at 100 Gb/s, what the closed-loop
// device tests apply.
var e2eHPCC = simenv.ECN{KminBytes: 400_000, KmaxBytes: 1_600_000, Pmax: 0.2}

// closedLoopOnDevice drives a closed-loop run (static:hpcc) until it has
// applied and read back its changes and rolled back a degradation it is
// shown on port 0, then checks what a device must give: no Set refused
// (every value written is one the device's schema takes), no headroom Set
// refused, no audit entry failed or mismatched. It returns the number of
// audit entries.
func closedLoopOnDevice(t *testing.T, e *e2e, s *simswitch.Server, within time.Duration) int {
	t.Helper()
	e.obs.setAlter(func(o *env.Observation) {
		if o.Key.Port == "Ethernet0" && o.Valid && o.Current.KminBytes == e2eHPCC.KminBytes {
			o.Metrics.DropFrac = 0.01
		}
	})
	waitFor(t, within, "changes applied and a rollback on port 0", func() bool {
		es, _ := e.j.Entries("", 0)
		applied, rolled := 0, false
		for _, x := range es {
			if x.State == core.StateApplied && x.Got != nil {
				applied++
			}
			if x.Kind == core.KindRollback && x.State == core.StateApplied && x.Key.Port == "Ethernet0" {
				rolled = true
			}
		}
		return applied >= 4 && rolled
	})
	e.stop(t)
	for p := 1; p < 4; p++ {
		if got := simECN(t, s, "sw0", p, 3); got != e2eHPCC {
			t.Fatalf("port %d runs %+v, want %+v", p, got, e2eHPCC)
		}
	}
	if n := counterWith(e.a, "ecntune_agent_sets_total", "result", "error") + counterWith(e.a, "ecntune_agent_sets_total", "result", "readback-error"); n != 0 {
		t.Fatalf("%g Sets or read-backs failed: a value the device refuses was written", n)
	}
	if n := counterWith(e.a, "ecntune_agent_alarms_total", "rule", "headroom-refused"); n != 0 {
		t.Fatalf("%g headroom Sets refused", n)
	}
	es, _ := e.j.Entries("", 0)
	for _, x := range es {
		if x.State == core.StateMismatch || x.State == core.StateFailed {
			t.Fatalf("audit entry %+v", x)
		}
	}
	return len(es)
}

func counterWith(a *Agent, name, label, value string) float64 {
	mfs, _ := a.Instruments().Registry.Gather()
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					if m.Counter != nil {
						sum += m.Counter.GetValue()
					}
				}
			}
		}
	}
	return sum
}

// TestE2EOptionalGroupRefusedAlone points an agent that expects the
// idealised switch (device ecntune: PFC, buffer and headroom groups) at a
// plain openconfig server, which serves none of them: each refused group
// fails alone, is reported once, and the agent decides on what exists.
func TestE2EOptionalGroupRefusedAlone(t *testing.T) {
	_, addr := deviceSim(t, "openconfig")
	tc := target0(addr, config.DialectOpenConfig)
	tc.Device = "ecntune"
	logs := &syncBuffer{}
	e := runE2ELog(t, config.ModeShadow, mustStatic(t, "hpcc"), []config.Target{tc}, e2eGuard(), slog.New(slog.NewTextHandler(logs, nil)))
	waitFor(t, 20*time.Second, "measured recommendations for every queue", func() bool {
		recs, _ := e.j.Recommendations("sw0", 0, 0)
		return len(queuesOf(recs)) == 4
	})
	// A few more intervals: refusals must not repeat.
	ticks := counterSum(e.a, "ecntune_agent_intervals_total")
	waitFor(t, 10*time.Second, "three more intervals", func() bool { return counterSum(e.a, "ecntune_agent_intervals_total") >= ticks+3 })
	e.stop(t)
	out := logs.String()
	for _, g := range []string{"pfc", "shared-buffer", "pfc-config"} {
		if n := strings.Count(out, "group="+g+" "); n != 1 {
			t.Fatalf("group %s refused %d times in the log, want once:\n%s", g, n, out)
		}
	}
	ti := e.a.Targets()
	if len(ti[0].Refused) != 3 {
		t.Fatalf("refused groups %v", ti[0].Refused)
	}
	recs, _ := e.j.Recommendations("sw0", 0, 0)
	if r := recs[len(recs)-1]; !strings.Contains(r.Reason, "without") || !strings.Contains(r.Reason, "PFC frames") {
		t.Fatalf("reason %q does not say PFC frames are missing", r.Reason)
	}
}
