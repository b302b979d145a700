// Package export turns what a simulated switch exports (simenv's
// telemetry) into env's vocabulary: the Snapshot a gNMI switch's counters
// decode to. The training environment (simenv/gym) and the simulated
// switches (simswitch) both read the simulator through it, so neither needs
// the other.
package export

import (
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
)

// Snapshot turns one switch's simulator telemetry into a Snapshot holding
// one QueueSample per port and priority in priorities (priorities outside
// 0..7 are skipped), in port order then priority order. TimeNs is the
// simulated time in nanoseconds. The PFC figures and the PG state (XOFF,
// headroom) are those of the same port and priority. Ports missing from
// either t or info are skipped.
func Snapshot(t simenv.SwitchTelemetry, info simenv.SwitchInfo, priorities []int) env.Snapshot {
	name := info.Name
	if name == "" {
		name = t.Name
	}
	s := env.Snapshot{Target: name, TimeNs: t.Time.Ns()}
	nports := min(len(t.Ports), len(info.Ports))
	s.Queues = make([]env.QueueSample, 0, nports*len(priorities))
	for p := 0; p < nports; p++ {
		port := &t.Ports[p]
		pi := info.Ports[p]
		for _, pr := range priorities {
			if pr < 0 || pr >= simenv.NumQueues {
				continue
			}
			peer := env.PeerHost
			if pi.PeerSwitch {
				peer = env.PeerSwitch
			}
			q := &port.Queues[pr]
			pfc := &port.PFC[pr]
			pg := &port.PG[pr]
			s.Queues = append(s.Queues, env.QueueSample{
				Key:           env.QueueKey{Target: name, Port: pi.Name, Queue: pr},
				RateBps:       pi.RateBps,
				Peer:          peer,
				TxPkts:        q.TxPkts,
				TxBytes:       q.TxBytes,
				MarkedPkts:    q.MarkedPkts,
				MarkedBytes:   q.MarkedBytes,
				DropPkts:      q.DropPkts,
				DropBytes:     q.DropBytes,
				CurQueueBytes: q.CurBytes,
				MaxQueueBytes: q.MaxBytes,
				AvgQueueBytes: q.AvgBytes,
				PauseTx:       pfc.PauseTx,
				PauseRx:       pfc.PauseRx,
				PausedNs:      pfc.PausedNs,
				Setting: env.Setting{KminBytes: q.ECN.KminBytes, KmaxBytes: q.ECN.KmaxBytes, Pmax: q.ECN.Pmax,
					HeadroomBytes: pg.HeadroomBytes, Alpha: pg.Alpha},
				XoffBytes:        pg.XoffBytes,
				MinHeadroomBytes: pg.MinHeadroomBytes,
				BufferBytes:      t.BufferBytes,
			})
		}
	}
	return s
}
