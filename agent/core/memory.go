package core

import (
	"sort"

	"github.com/ecntune/ecntune/env"
)

// QueueMemory is what the guard remembers of one queue beyond what the
// switch reports: when it last changed it (min-hold), what it set (to tell
// another writer from its own change), the last known good setting, the
// probation of the last change (with the KPIs before it) and another
// writer's hold. The agent keeps it in its database, written with the
// audit entry of the change, and gives it back to a new guard at start, so
// that no guardrail is lost across restarts. A restored probation window
// starts its count again (longer, never shorter, than before the restart).
type QueueMemory struct {
	Key          env.QueueKey `json:"key"`
	Changed      bool         `json:"changed,omitempty"`
	LastChangeNs int64        `json:"last_change_ns,omitempty"`
	// LastNotApplied: the change at LastChangeNs was not applied (its
	// Set failed, or was not sent); min-hold still paces the retry.
	LastNotApplied bool         `json:"last_not_applied,omitempty"`
	LastGood       env.Setting  `json:"last_good"`
	Expect         *env.Setting `json:"expect,omitempty"`
	YieldNs        int64        `json:"yield_ns,omitempty"`
	Probation      *Probation   `json:"probation,omitempty"`
	// RetryBlocked is the setting last rolled back, not tuned to again
	// before RetryUntilNs (GuardConfig.RollbackRetryAfter).
	RetryBlocked *env.Setting `json:"retry_blocked,omitempty"`
	RetryUntilNs int64        `json:"retry_until_ns,omitempty"`
	// RetryFrom is the setting the rolled-back change started from: a
	// tune that goes further from it than RetryBlocked is barred too.
	RetryFrom *env.Setting `json:"retry_from,omitempty"`
	// Tightened: the agent's last change of the queue marked earlier
	// (GuardConfig.DwellLoosen).
	Tightened bool `json:"tightened,omitempty"`
	// Settled: the queue's traffic has run past the intervals in which an
	// unsure tightening goes through (GuardConfig.TightenUnsureFor).
	Settled bool `json:"settled,omitempty"`
	// RefusedN counts the queue's tunes in a row that read back
	// otherwise; no tune before RefusedUntilNs (RefusedTunes of them).
	RefusedN       int   `json:"refused_n,omitempty"`
	RefusedUntilNs int64 `json:"refused_until_ns,omitempty"`
	// XoffWiden: how many times the queue's XOFF margin was widened by
	// repairs of the agent's own settings (MaxXoffWiden).
	XoffWiden int `json:"xoff_widen,omitempty"`
}

// Probation is a change under watch: from and to, and the KPIs measured
// before it (means, standard deviations and how many intervals; a memory
// written before N was kept counts as one interval).
type Probation struct {
	From       env.Setting `json:"from"`
	To         env.Setting `json:"to"`
	Drop       float64     `json:"drop"`
	DropSD     float64     `json:"drop_sd,omitempty"`
	Pause      float64     `json:"pause"`
	Reward     float64     `json:"reward"`
	PauseSD    float64     `json:"pause_sd,omitempty"`
	RewardSD   float64     `json:"reward_sd,omitempty"`
	N          int         `json:"n,omitempty"`
	HaveReward bool        `json:"have_reward,omitempty"`
	HaveBase   bool        `json:"have_base,omitempty"`
	// RewardTerms: which terms Reward holds ("throughput", "queueing";
	// "" every term, as every memory before the split).
	RewardTerms string `json:"reward_terms,omitempty"`
}

// memory is q's QueueMemory.
func (q *queueState) memory() QueueMemory {
	m := QueueMemory{Key: q.key, Changed: q.changed, LastChangeNs: q.lastChangeNs, LastNotApplied: q.lastNotApplied, LastGood: q.lastGood, YieldNs: q.yieldNs,
		Tightened: q.tightened, Settled: q.settled, RefusedN: q.refusedN, RefusedUntilNs: q.refusedUntilNs,
		XoffWiden: q.xoffWiden}
	if q.expectSet {
		e := q.expect
		m.Expect = &e
	}
	if q.onProbation {
		b := q.probationBase
		m.Probation = &Probation{From: q.probationFrom, To: q.probationTo, Drop: b.drop.mean, DropSD: b.drop.sd(), Pause: b.pause.mean, Reward: b.reward.mean,
			PauseSD: b.pause.sd(), RewardSD: b.reward.sd(), N: b.pause.n, HaveReward: b.haveReward, HaveBase: b.ok,
			RewardTerms: b.part.String()}
	}
	if q.retryUntilNs > 0 {
		r, f := q.retryBlocked, q.retryFrom
		m.RetryBlocked, m.RetryUntilNs, m.RetryFrom = &r, q.retryUntilNs, &f
	}
	return m
}

// Memories returns the memory of every queue whose memory changed since
// the last call (sorted by key), and forgets that they changed.
func (g *Guard) Memories() []QueueMemory {
	var out []QueueMemory
	for k := range g.dirty {
		if q := g.queues[k]; q != nil {
			out = append(out, q.memory())
		}
	}
	clear(g.dirty)
	sort.Slice(out, func(i, j int) bool { return env.QueueKeyLess(out[i].Key, out[j].Key) })
	return out
}

// Memory is the memory of queue k now.
func (g *Guard) Memory(k env.QueueKey) QueueMemory { return g.queue(k).memory() }

// Restore gives the guard back what it remembered of a queue (from
// Memories, through the agent's database). The setting the switch has is
// learnt from the next observation as usual.
func (g *Guard) Restore(m QueueMemory) {
	q := g.queue(m.Key)
	q.changed, q.lastChangeNs, q.lastGood, q.yieldNs = m.Changed, m.LastChangeNs, m.LastGood, m.YieldNs
	q.lastNotApplied = m.LastNotApplied
	q.tightened, q.settled = m.Tightened, m.Settled
	q.refusedN, q.refusedUntilNs = m.RefusedN, m.RefusedUntilNs
	q.xoffWiden = min(max(m.XoffWiden, 0), MaxXoffWiden)
	if m.Expect != nil {
		q.expect, q.expectSet = *m.Expect, true
	}
	if p := m.Probation; p != nil {
		q.onProbation, q.probationFrom, q.probationTo = true, p.From, p.To
		n := max(p.N, 1)
		q.probationBase = base{ok: p.HaveBase, drop: momentsOf(n, p.Drop, p.DropSD), pause: momentsOf(n, p.Pause, p.PauseSD),
			reward: momentsOf(n, p.Reward, p.RewardSD), haveReward: p.HaveReward, part: parseRewardPart(p.RewardTerms)}
		q.probationWatch = watch{haveReward: true}
	}
	if m.RetryBlocked != nil {
		q.retryBlocked, q.retryUntilNs = *m.RetryBlocked, m.RetryUntilNs
		q.retryFrom = *m.RetryBlocked // an older memory: only the setting itself is barred
		if m.RetryFrom != nil {
			q.retryFrom = *m.RetryFrom
		}
	}
}

// touch marks q's memory as changed.
func (g *Guard) touch(q *queueState) {
	if g.dirty == nil {
		g.dirty = map[env.QueueKey]bool{}
	}
	g.dirty[q.key] = true
}
