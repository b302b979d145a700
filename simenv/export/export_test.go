package export

import (
	"testing"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
)

func TestSnapshot(t *testing.T) {
	info := simenv.SwitchInfo{Index: 0, Name: "sw0", BufferBytes: 32_000_000, Ports: []simenv.PortInfo{
		{Index: 0, Name: "Ethernet0", RateBps: 100e9, PeerSwitch: true}, {Index: 1, Name: "Ethernet1", RateBps: 25e9}}}
	tel := simenv.SwitchTelemetry{Switch: 0, Name: "sw0", Time: 1500 * simenv.Microsecond, BufferBytes: 32_000_000,
		Ports: make([]simenv.PortTelemetry, 2)}
	p := &tel.Ports[1]
	p.Queues[3] = simenv.QueueCounters{TxPkts: 10, TxBytes: 10480, MarkedPkts: 2, MarkedBytes: 2096, DropPkts: 1, DropBytes: 1048,
		CurBytes: 3000, MaxBytes: 9000, AvgBytes: 2500.5, ECN: simenv.ECN{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2}}
	p.PFC[3] = simenv.PFCCounters{PauseTx: 4, PauseRx: 5, PausedNs: 6000}
	p.PG[3] = simenv.PGState{Lossless: true, HeadroomBytes: 50_000, MinHeadroomBytes: 40_000, XoffBytes: 700_000}
	p.Queues[4].TxBytes = 99 // priority 4 is not asked for

	s := Snapshot(tel, info, []int{3, 9, -1})
	if s.Target != "sw0" || s.TimeNs != 1_500_000 || len(s.Queues) != 2 {
		t.Fatalf("snapshot target=%q time=%d queues=%d, want sw0 1500000 2", s.Target, s.TimeNs, len(s.Queues))
	}
	q := s.Queues[1]
	want := env.QueueSample{Key: env.QueueKey{Target: "sw0", Port: "Ethernet1", Queue: 3}, RateBps: 25e9, Peer: env.PeerHost,
		TxPkts: 10, TxBytes: 10480, MarkedPkts: 2, MarkedBytes: 2096, DropPkts: 1, DropBytes: 1048,
		CurQueueBytes: 3000, MaxQueueBytes: 9000, AvgQueueBytes: 2500.5, PauseTx: 4, PauseRx: 5, PausedNs: 6000,
		Setting:   env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.2, HeadroomBytes: 50_000},
		XoffBytes: 700_000, MinHeadroomBytes: 40_000, BufferBytes: 32_000_000}
	if q != want {
		t.Fatalf("sample\n got %+v\nwant %+v", q, want)
	}
	if s.Queues[0].Key.Port != "Ethernet0" || s.Queues[0].RateBps != 100e9 || s.Queues[0].Peer != env.PeerSwitch {
		t.Fatalf("first sample %+v (peer %q), want Ethernet0 at 100G facing a switch", s.Queues[0].Key, s.Queues[0].Peer)
	}
	// Mismatched port lists do not panic.
	info.Ports = info.Ports[:1]
	if got := len(Snapshot(tel, info, []int{3}).Queues); got != 1 {
		t.Fatalf("with one described port: %d samples, want 1", got)
	}
}
