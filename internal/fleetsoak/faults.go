package fleetsoak

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// cycles runs the fault cycles, the kinds in turn, each on the agent that
// has run longest, the loop running cfg.Settle between them.
func (h *harness) cycles(ctx context.Context) error {
	for c := range h.cfg.Cycles {
		kind := h.cfg.Kinds[c%len(h.cfg.Kinds)]
		var err error
		if kind == Leader {
			err = h.leaderFault(ctx)
		} else {
			err = h.agentFault(ctx, kind, h.oldest())
		}
		if err == nil {
			err = h.err()
		}
		if err != nil {
			return fmt.Errorf("cycle %d (%s): %w", c+1, kind, err)
		}
		h.cfg.Logf("fleetsoak: cycle %d/%d (%s) done", c+1, h.cfg.Cycles, kind)
		h.settle(ctx)
	}
	return nil
}

// oldest is the agent that has run longest.
func (h *harness) oldest() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	o := 0
	for i, a := range h.agents {
		if a.Started.Before(h.agents[o].Started) {
			o = i
		}
	}
	return o
}

// settle waits until every agent owns a switch again (placement moved
// some back to the member restarted; at most 30 s), then cfg.Settle.
func (h *harness) settle(ctx context.Context) {
	all := func() bool {
		for _, n := range h.names {
			if h.hist.ownedBy(n) == 0 {
				return false
			}
		}
		return true
	}
	if !h.until(ctx, 30*time.Second, all) {
		h.note("after 30 s some agent still owns no switch: %v", h.owned())
	}
	h.until(ctx, h.cfg.Settle, func() bool { return false })
}

func (h *harness) owned() map[string]int {
	out := map[string]int{}
	for _, n := range h.names {
		out[n] = h.hist.ownedBy(n)
	}
	return out
}

// agentFault kills, pauses or cuts agent i from etcd until every switch
// it owned has a new owner and the takeover delay (the Set timeout, 5 s)
// has passed, then restarts, resumes or reconnects it. A paused or cut
// agent must find its lease gone and join the fleet again by itself, the
// same process (fleet.Keep); one that ends instead, or has not joined
// again within 20 s, is noted, killed and restarted.
func (h *harness) agentFault(ctx context.Context, kind string, i int) error {
	h.mu.Lock()
	h.handling[i] = true
	a := h.agents[i]
	h.mu.Unlock()
	defer func() { h.mu.Lock(); delete(h.handling, i); h.mu.Unlock() }()
	name := h.names[i]
	had := h.keysOf(name, time.Now())
	f := fault{Kind: kind, Victim: name, At: time.Now()}
	switch kind {
	case Kill:
		a.Kill()
	case Pause:
		a.Signal(syscall.SIGSTOP)
	case Cut:
		h.proxies[i].Cut()
	default:
		return fmt.Errorf("unknown fault %q", kind)
	}
	moved := func() bool {
		for _, k := range had {
			if n, ok := h.hist.next(k.Switch, f.At); !ok || n.Member == name {
				return false
			}
		}
		return true
	}
	if !h.until(ctx, 4*h.cfg.TTL+30*time.Second, moved) {
		h.note("%s of %s: its switches did not all move in %v", kind, name, 4*h.cfg.TTL+30*time.Second)
	}
	h.until(ctx, 6*time.Second, func() bool { return false }) // the takeover delay
	f.Undone = time.Now()
	switch kind {
	case Pause:
		a.Signal(syscall.SIGCONT)
	case Cut:
		h.proxies[i].Restore()
	}
	h.mu.Lock()
	h.faults = append(h.faults, f)
	h.mu.Unlock()
	if kind != Kill {
		end := time.Now().Add(20 * time.Second)
		for !h.hist.joinedAfter(name, f.Undone) && !a.Exited() && time.Now().Before(end) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		switch {
		case a.Exited():
			h.note("%s of %s: the agent ended after its lease was gone instead of joining again (%v): %s; restarted", kind, name, a.Err(), lastLines(h.outs[i].Name(), 2))
		case !h.hist.joinedAfter(name, f.Undone):
			h.note("%s of %s: the agent had not joined again 20 s after its lease was gone: %s; killed and restarted", kind, name, lastLines(h.outs[i].Name(), 2))
			a.Kill()
		default:
			h.mu.Lock()
			h.rejoins++
			h.mu.Unlock()
			return nil
		}
	}
	return h.startAgent(i)
}

// keysOf lists the owner keys member holds at t.
func (h *harness) keysOf(member string, t time.Time) []ownerKey {
	var out []ownerKey
	for _, k := range h.hist.heldAt(t) {
		if k.Member == member {
			out = append(out, k)
		}
	}
	return out
}

// leaderFault stops etcd's Raft leader member, lets the other two elect a
// new one and the loop run, then restarts it.
func (h *harness) leaderFault(ctx context.Context) error {
	l := h.etcd.Leader()
	if l < 0 {
		return fmt.Errorf("etcd has no leader")
	}
	f := fault{Kind: Leader, Victim: fmt.Sprintf("etcd m%d", l), At: time.Now()}
	h.etcd.Stop(l)
	h.until(ctx, 3*time.Second+time.Duration(h.rng.Intn(2000))*time.Millisecond, func() bool { return false })
	f.Undone = time.Now()
	if err := h.etcd.Restart(l); err != nil {
		return err
	}
	h.mu.Lock()
	h.faults = append(h.faults, f)
	h.mu.Unlock()
	return nil
}
