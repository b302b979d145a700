package core

import (
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

// AuditState is where an audited change stands.
type AuditState string

const (
	StateIntent      AuditState = "intent"      // written before the Set; no result yet
	StateApplied     AuditState = "applied"     // Set succeeded and read back as set
	StateFailed      AuditState = "failed"      // Set refused or not answered
	StateMismatch    AuditState = "mismatch"    // Set answered, read back differs
	StateDryRun      AuditState = "dry-run"     // --dry-run: never sent
	StateReconciled  AuditState = "reconciled"  // restart found it applied
	StateAbandoned   AuditState = "abandoned"   // restart found it not applied
	StateRolledBack  AuditState = "rolled-back" // restart found it half applied and restored Old
	StateUnreachable AuditState = "unreachable" // restart could not read the switch (retried later)
	// StateDamaged: a read found the stored record damaged (it fails its
	// seal or does not decode): nothing of it but its sequence number and
	// the damage is known (agent/journal; its JSON: journal.EntryJSON).
	StateDamaged AuditState = "damaged"
)

// Open says whether the entry still waits for its result (an intent, or
// unreachable at the last reconcile).
func (e AuditEntry) Open() bool { return e.State == StateIntent || e.State == StateUnreachable }

// CommitPending says whether the entry's Set, sent as a confirmed commit,
// may still be pending on the switch at nowNs (before RevertByNs): a read
// then shows a change the switch may yet revert, and says nothing of
// whether the commit was confirmed.
func (e AuditEntry) CommitPending(nowNs int64) bool { return e.RevertByNs > nowNs }

// MayLand says whether the entry's Set, if it went out, may still land on
// the switch at nowNs: before LandByNs (twice the writer's set timeout
// from the intent), a Set whose answer timed out or whose writer was
// killed can still be applied, so a read of the old setting decides
// nothing yet.
func (e AuditEntry) MayLand(nowNs int64) bool { return e.LandByNs > nowNs }

// AuditEntry is one write-ahead record of a change to one queue: the
// Change itself (its Reason led by every knob it changes, see AuditReason)
// and where it stands.
type AuditEntry struct {
	Seq    uint64 `json:"seq"`
	TimeNs int64  `json:"time_ns"` // when the intent was written
	Target string `json:"target"`
	Change
	Paths []string `json:"paths,omitempty"` // gNMI paths the Set writes
	Model string   `json:"model"`           // policy / model version behind the change
	Owner string   `json:"owner"`
	// Writer and Token: the fleet member that wrote the intent and the
	// fencing token it held for the switch (agent/fleet; none outside a
	// fleet). An entry a new owner took over keeps its writer's.
	Writer string `json:"writer,omitempty"`
	Token  int64  `json:"token,omitempty"`
	// Rev is the etcd revision at which a fleet's audit first recorded
	// the entry (its key's create revision; read from etcd, not stored
	// in the entry): a switch's entries in the fleet are in its order,
	// which etcd assigns and which does not depend on the members'
	// clocks. 0: not read from a fleet's audit.
	Rev      int64        `json:"rev,omitempty"`
	State    AuditState   `json:"state"`
	ResultNs int64        `json:"result_ns,omitempty"`
	Got      *env.Setting `json:"got,omitempty"` // read back
	Error    string       `json:"error,omitempty"`
	// RevertByNs: the Set goes as a confirmed commit (gNMI's commit
	// confirmed extension, target key commit-confirmed), and by this time
	// (unix ns, written with the intent) the switch has either had it
	// confirmed or reverted it; 0: not a confirmed commit. An open entry
	// is not judged before then (CommitPending, Reconcile).
	RevertByNs int64 `json:"revert_by_ns,omitempty"`
	// LandByNs: until this time (unix ns, written with the intent: twice
	// the writer's set timeout later) the Set may still land on the switch
	// when it went without an answer; an open entry showing the old
	// setting is not judged before then (MayLand, Reconcile). 0: entries
	// of older versions, judged at once.
	LandByNs int64 `json:"land_by_ns,omitempty"`
}

// Recommendation is what shadow mode stores per queue and interval.
type Recommendation struct {
	TimeNs      int64        `json:"time_ns"`
	Key         env.QueueKey `json:"key"`
	Policy      string       `json:"policy"`
	Current     env.Setting  `json:"current"`
	Recommended env.Setting  `json:"recommended"`
	Action      int          `json:"action"`
	Confidence  float64      `json:"confidence"`
	Reason      string       `json:"reason"`
	// Held is why the policy held without deciding (policy.Decision.Held).
	Held    policy.Hold `json:"held,omitempty"`
	Valid   bool        `json:"valid"`
	Metrics env.Metrics `json:"metrics"`
	Reward  float64     `json:"reward"`
	// RateBps and Missing are the port's speed and the telemetry its
	// switch lacks (for agent report's queue depths and gaps).
	RateBps float64       `json:"rate_bps,omitempty"`
	Missing env.Telemetry `json:"missing,omitempty"`
	// Guard is the guard's verdict: the rule it would reject the
	// recommendation with, "clamped:RULES" when it would adjust it, ""
	// when it would let it through as is (or nothing would change).
	Guard string `json:"guard,omitempty"`
	// Allowed is what the guard would set where it adjusts the
	// recommendation (a clamp, Pmax put on the switches' step, a safety
	// repair); nil otherwise.
	Allowed *env.Setting `json:"allowed,omitempty"`
	// Changes: the guard plans a change of the queue this interval, to
	// Allowed when set, else to Recommended (in shadow mode: would make).
	Changes bool `json:"changes,omitempty"`
	// Would is, in shadow mode (or while the closed loop is paused), what
	// the loop would run on the queue now when that differs from Current:
	// the last change the guard let through, which its later decisions,
	// min-hold and dwell start from, as a closed loop's would.
	Would *env.Setting `json:"would,omitempty"`
}

// WouldSet is the setting the loop would run on the queue after this
// interval: the change the guard plans now (as recommended, or as it
// adjusts it), else what it let through before (Would), else Current. A
// recommendation the guard lets through that changes nothing (the same
// setting once Pmax is on the switches' step) is no change: counting it
// as one made shadow mode's "would change" move back and forth between a
// recommended Pmax of 0.3% and the 1% the loop would run.
func (r *Recommendation) WouldSet() env.Setting {
	switch {
	case r.Changes:
		if r.Allowed != nil {
			return *r.Allowed
		}
		return r.Recommended
	case r.Would != nil:
		return *r.Would
	}
	return r.Current
}

// Observation rebuilds what the agent observed from a stored
// recommendation: enough for the dashboard's history.
func (r *Recommendation) Observation() env.Observation {
	return env.Observation{Key: r.Key, RateBps: r.RateBps, Current: r.Current, Metrics: r.Metrics, Valid: r.Valid,
		TimeNs: r.TimeNs, Missing: r.Missing}
}

// FlapIntervals is how recent a setting a queue left must be for a change
// back to it to count as a flap (env.FlapIntervals).
const FlapIntervals = env.FlapIntervals

// Flaps counts, per target, the applied changes of entries (in time
// order) that set a queue back to a setting it left within window
// nanoseconds (FlapIntervals control intervals): the churn an operator
// must not see (env.Churn).
func Flaps(entries []AuditEntry, windowNs int64) map[string]int {
	c := env.Churn{Window: windowNs}
	out := map[string]int{}
	for _, e := range entries {
		if !e.Took() {
			continue
		}
		if c.Change(e.Key, e.TimeNs, e.Old, e.New) {
			out[e.Target]++
		}
	}
	return out
}

// Took says whether the switch took the entry's change: applied, or found
// applied by a reconcile. The churn counts these alone, on the dashboard,
// /metrics and in eval alike: a dry run's, a failed or a mismatched Set
// changed nothing on the switch.
func (e AuditEntry) Took() bool { return e.State == StateApplied || e.State == StateReconciled }

// KindCounts are how many applied changes of a log were rollbacks (and
// read-back restores), safety repairs and fallbacks.
type KindCounts struct{ Rollbacks, Repairs, Fallbacks int }

// CountKinds counts the applied entries' rollbacks, repairs and fallbacks.
func CountKinds(entries []AuditEntry) KindCounts {
	var k KindCounts
	for _, e := range entries {
		if !e.Took() {
			continue
		}
		switch e.Kind {
		case KindRollback, KindReadBack:
			k.Rollbacks++
		case KindRepair:
			k.Repairs++
		case KindFallback:
			k.Fallbacks++
		}
	}
	return k
}
