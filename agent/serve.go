package agent

import (
	"context"
	"sync"

	"github.com/ecntune/ecntune/env"
)

// An agent serves a target when it subscribes to its telemetry, decides
// for its queues and counts it in its health: every target it has, or, in
// a fleet, the switches its member owns (in the take-over delay too, so
// that telemetry is warm by the first write). A switch given up is
// unsubscribed and forgotten by the guard; its next owner has its memory.

// ownerGate is a Gate that says which targets are this agent's
// (agent/fleet.Node), and can say when that changes.
type ownerGate interface {
	Owns(target string) bool
	OnChange(func())
}

// serves says whether the agent serves target n now.
func (a *Agent) serves(n string) bool {
	og, ok := a.o.Gate.(ownerGate)
	return !ok || og.Owns(n)
}

// targetErr is a switch's telemetry error, for the Run loop.
type targetErr struct {
	target string
	err    error
}

// subscriptions runs one Subscribe per served target (Run's goroutine
// only, but for the goroutines it starts).
type subscriptions struct {
	a      *Agent
	ctx    context.Context
	snaps  chan env.Snapshot
	errs   chan targetErr
	wg     sync.WaitGroup
	cancel map[string]context.CancelFunc
	state  map[string]bool // served or not, as last synced
}

func (a *Agent) newSubscriptions(ctx context.Context) *subscriptions {
	return &subscriptions{a: a, ctx: ctx, snaps: make(chan env.Snapshot, 64), errs: make(chan targetErr, 64),
		cancel: map[string]context.CancelFunc{}, state: map[string]bool{}}
}

// sync starts the Subscribes of targets served now and stops those of
// targets given up; a target not served from the start leaves the guard
// and the health at once (New counts every target in). It returns whether
// anything changed.
func (s *subscriptions) sync() bool {
	changed := false
	for _, n := range s.a.names {
		want := s.a.serves(n)
		was, known := s.state[n]
		if known && was == want {
			continue
		}
		s.state[n] = want
		if want {
			s.start(n)
		} else if stop, on := s.cancel[n]; on {
			stop()
			delete(s.cancel, n)
		}
		s.a.served(n, want, known)
		changed = true
	}
	return changed
}

func (s *subscriptions) start(n string) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.cancel[n] = cancel
	sw := s.a.switches[n]
	e := make(chan error, 16)
	s.wg.Add(2)
	go func() { defer s.wg.Done(); sw.Subscribe(ctx, s.snaps, e) }()
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-e:
				select {
				case s.errs <- targetErr{n, err}:
				default:
				}
			}
		}
	}()
}

// stop ends every Subscribe and waits for them.
func (s *subscriptions) stop() {
	for _, c := range s.cancel {
		c()
	}
	s.wg.Wait()
}

// served records that the agent serves target n (or does not): staleness
// counts from now; a target not served leaves the health and the guard,
// its newest observations and recommendations dropped. change: it was the
// other way before (worth a log line).
func (a *Agent) served(n string, on, change bool) {
	now := a.o.Clock()
	a.mu.Lock()
	if a.unserved == nil {
		a.unserved = map[string]bool{}
	}
	a.lastSeen[n] = now
	delete(a.heard, n)
	if on {
		delete(a.unserved, n)
	} else {
		a.unserved[n] = true
		for k := range a.latest {
			if k.Target == n {
				delete(a.latest, k)
			}
		}
		for k := range a.recs {
			if k.Target == n {
				delete(a.recs, k)
			}
		}
	}
	a.mu.Unlock()
	if !on {
		a.core.Guard().ForgetTarget(n)
	}
	switch {
	case !change || a.o.Gate == nil:
	case on:
		a.log.Info("fleet: switch served: subscribed", "target", n)
	default:
		a.log.Info("fleet: switch given up: unsubscribed", "target", n)
	}
}
