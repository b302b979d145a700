package simenv

import (
	"strings"
	"testing"
)

// pfcOverload: one sender at 100G line rate (DCQCN off, so only PFC holds
// it) into a receiver behind a 100 Mb/s link (so the held queue hardly drains
// while the headroom fills: the worst case), through a switch with a 1 MB
// buffer and 5 us links, for 20 ms: sustained overload that keeps
// PAUSE/RESUME cycling on one ingress.
func pfcOverload(headroom int64) Config {
	c := DefaultConfig()
	d := 5 * Microsecond
	c.Topology = Topology{Kind: "custom",
		Nodes: []Node{{Name: "sw0", Switch: true}, {Name: "rx"}, {Name: "tx"}},
		Links: []Link{{A: 0, B: 1, RateBps: 25e9, Delay: d}, {A: 0, B: 2, RateBps: 100e9, Delay: d}}}
	c.BufferBytes = 1_000_000
	c.DCQCN.Enabled = false
	c.PFC.HeadroomBytes = headroom
	c.Duration = 3 * Millisecond
	c.Workloads = []Workload{trace(TraceFlow{Src: 2, Dst: 1, Priority: 3, SizeBytes: 8_000_000})}
	return c
}

// worstInFlight bounds what can still arrive at an ingress after it decides
// to pause, in this simulator: both directions of the link are full
// (round-trip propagation at line rate), the PAUSE may wait behind one ACK on
// our egress and takes its own serialisation, and the peer finishes the data
// frame it has started. The headroom in use is this minus what the egress
// drains meanwhile.
func worstInFlight(c Config, rate float64, delay Time) int64 {
	wire := int64(c.MTU + c.HeaderBytes)
	return int64(2*rate*delay.Seconds()/8) + int64(c.AckBytes) + pfcFrameBytes + wire
}

func TestPFCHeadroom(t *testing.T) {
	c := pfcOverload(0)
	s := run(t, c)
	st := s.Stats()
	tel := s.Telemetry(0)
	in := tel.Ports[1] // the sender's ingress
	minHR := in.PG[3].MinHeadroomBytes
	peak := s.ports[s.sws[0].ports[1]].hdrmPeak
	worst := worstInFlight(c, 100e9, 5*Microsecond)
	t.Logf("computed headroom %d B, worst case in flight %d B, peak used %d B: PAUSE %d RESUME %d drops %d",
		minHR, worst, peak, st.PFCPauses, st.PFCResumes, st.Drops)
	if st.Drops != 0 {
		t.Errorf("computed headroom %d B: %d drops", minHR, st.Drops)
	}
	if st.PFCPauses < 10 {
		t.Errorf("only %d PAUSE frames: the overload did not exercise PFC", st.PFCPauses)
	}
	if in.PFC[3].PauseTx != st.PFCPauses || s.ports[s.hosts[1].port].pfc[3].PauseRx != st.PFCPauses {
		t.Errorf("PAUSE frames: %d in stats, %d sent on the port, %d received by the sender",
			st.PFCPauses, in.PFC[3].PauseTx, s.ports[s.hosts[1].port].pfc[3].PauseRx)
	}
	if in.PFC[3].PausingNs == 0 {
		t.Errorf("pausing time not counted")
	}
	if minHR < worst {
		t.Errorf("computed headroom %d B is below the worst case in flight %d B", minHR, worst)
	}
	if peak > worst {
		t.Errorf("peak headroom use %d B exceeds the derived worst case %d B", peak, worst)
	}
	// The worst case this overload produced is the peak headroom use; with
	// exactly that headroom it stays lossless, with one MTU less it drops.
	if d := run(t, pfcOverload(peak)).Stats().Drops; d != 0 {
		t.Errorf("headroom = peak use %d B: %d drops", peak, d)
	}
	short := peak - int64(c.MTU+c.HeaderBytes)
	st = run(t, pfcOverload(short)).Stats()
	t.Logf("headroom %d B (one MTU short of the peak): drops %d", short, st.Drops)
	if st.Drops == 0 {
		t.Errorf("headroom one MTU short of the worst case (%d B) lost nothing", short)
	}
}

// Two switches with no path between them (hosts on each): a workload
// across the parts could only be dropped as unroutable, which a lossless
// fabric reported as losses; it is refused, naming a host on each side.
// Each part may carry workloads of its own (the agent bench's pods).
func TestDisconnectedTopologyRefused(t *testing.T) {
	c := DefaultConfig()
	d := Microsecond
	c.Topology = Topology{Kind: "custom",
		Nodes: []Node{{Name: "swA", Switch: true}, {Name: "swB", Switch: true}, {Name: "a0"}, {Name: "a1"}, {Name: "b0"}, {Name: "b1"}},
		Links: []Link{{A: 0, B: 2, RateBps: 100e9, Delay: d}, {A: 0, B: 3, RateBps: 100e9, Delay: d}, {A: 1, B: 4, RateBps: 100e9, Delay: d}, {A: 1, B: 5, RateBps: 100e9, Delay: d}}}
	c.Duration = Millisecond
	incast := Workload{Kind: WorkloadIncast, Fanin: 1, SizeBytes: 10_000, Every: 500 * Microsecond, Priority: 3}
	for _, cc := range []struct {
		w    []Workload
		want string
	}{
		{[]Workload{incast}, "workloads[0]: hosts a0 and b0: not connected"},
		{[]Workload{trace(TraceFlow{Src: 2, Dst: 3, Priority: 3, SizeBytes: 1000}, TraceFlow{Src: 3, Dst: 5, Priority: 3, SizeBytes: 1000})}, "workloads[0]: flow 1 from a1 to b1: not connected"},
		{[]Workload{withHosts(incast, 2, 3), withHosts(incast, 4, 5)}, ""},
	} {
		c.Workloads = cc.w
		_, err := New(c)
		if cc.want == "" && err != nil || cc.want != "" && (err == nil || !strings.Contains(err.Error(), cc.want)) {
			t.Errorf("%+v: %v, want %q", cc.w, err, cc.want)
		}
	}
	c.Workloads = []Workload{incast}
	c.Topology.Links = append(c.Topology.Links, Link{A: 0, B: 1, RateBps: 100e9, Delay: d})
	if _, err := New(c); err != nil {
		t.Fatalf("joined: %v", err)
	}
}

func withHosts(w Workload, hosts ...int) Workload {
	w.Hosts = hosts
	return w
}
