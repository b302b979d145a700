package twin

import (
	"fmt"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/export"
)

// Measure runs cfg for its duration and reads every switch's counters
// every interval, as a switch exports them (export.Snapshot) of the
// queues (priorities) given, without the telemetry the observed switches
// lack (missing, as env.Telemetry.Mask takes it away), through an
// env.Observer: the samples of every measured queue-interval, as the
// agent would have stored them.
func Measure(cfg simenv.Config, interval simenv.Time, queues []int, missing env.Telemetry) ([]Sample, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("twin: interval %v: want above 0", interval)
	}
	sim, err := simenv.New(cfg)
	if err != nil {
		return nil, err
	}
	obs := env.NewObserver(env.ObserverConfig{})
	infos := sim.Switches()
	var out []Sample
	read := func() {
		for _, sw := range infos {
			snap := export.Snapshot(sim.Telemetry(sw.Index), sw, queues)
			for i := range snap.Queues {
				missing.Mask(&snap.Queues[i])
			}
			for _, o := range obs.Observe(snap) {
				if o.Valid {
					out = append(out, Sample{TimeNs: o.TimeNs, Key: o.Key, RateBps: o.RateBps, Peer: o.Peer, Metrics: o.Metrics})
				}
			}
		}
	}
	read()
	for t := interval; t <= cfg.Duration; t += interval {
		sim.RunUntil(t)
		read()
	}
	return out, nil
}
