package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ecntune/ecntune/env"
)

// Lockstep drives an agent in step with a simulation whose time moves only
// when the caller says (simswitch's Config.Lockstep), so that a run is the
// same whatever the machine's load: the caller advances simulated time,
// Await ingests telemetry until every switch has reported that time, and
// Step runs one control interval, whose Sets take effect before the caller
// advances again. Ingest and Tick run on the caller's goroutine, as in Run.
type Lockstep struct {
	a      *Agent
	snaps  chan env.Snapshot
	cancel context.CancelFunc
	wg     sync.WaitGroup
	newest map[string]int64 // newest snapshot time per target (ns)
}

// StartLockstep subscribes to every switch. The agent's Clock should read
// the simulation's time.
func (a *Agent) StartLockstep(ctx context.Context) *Lockstep {
	ctx, cancel := context.WithCancel(ctx)
	l := &Lockstep{a: a, snaps: make(chan env.Snapshot, 64), cancel: cancel, newest: map[string]int64{}}
	a.watchPeers() // as Run does: LLDP discovery (fabric-ports: lldp) and the fabric records
	for _, n := range a.names {
		sw := a.switches[n]
		errs := make(chan error, 16)
		l.wg.Add(2)
		go func() { defer l.wg.Done(); sw.Subscribe(ctx, l.snaps, errs) }()
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case err := <-errs:
					a.log.Warn("telemetry", "target", sw.Name(), "err", err)
				}
			}
		}()
	}
	return l
}

// Await ingests snapshots until every switch has reported telemetry of
// time timeNs (a notification timestamp) or later; it fails naming the
// switches still behind after timeout.
func (l *Lockstep) Await(ctx context.Context, timeNs int64, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !l.caughtUp(timeNs) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("lockstep: no telemetry of time %d within %s from %s", timeNs, timeout, strings.Join(l.behind(timeNs), ", "))
		case s := <-l.snaps:
			l.a.Ingest(s)
			if s.TimeNs > l.newest[s.Target] {
				l.newest[s.Target] = s.TimeNs
			}
		}
	}
	return nil
}

func (l *Lockstep) caughtUp(timeNs int64) bool { return len(l.behind(timeNs)) == 0 }

// behind lists the switches whose newest telemetry is older than timeNs.
func (l *Lockstep) behind(timeNs int64) []string {
	var out []string
	for _, n := range l.a.names {
		if l.newest[n] < timeNs {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Step runs one control interval (Tick, with the targets' state polled).
func (l *Lockstep) Step(ctx context.Context) error {
	l.a.pollTargets()
	return l.a.Tick(ctx)
}

// Stop ends the subscriptions and waits for them.
func (l *Lockstep) Stop() {
	l.cancel()
	l.wg.Wait()
}
