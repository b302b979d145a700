package policy

import (
	"fmt"
	"strconv"

	"github.com/ecntune/ecntune/env"
)

// Decision is a policy's answer for one queue.
type Decision struct {
	Key        env.QueueKey `json:"key"`
	Setting    env.Setting  `json:"setting"`
	Action     int          `json:"action"`     // catalogue index, -1 when not from the catalogue
	Confidence float64      `json:"confidence"` // 0..1
	Reason     string       `json:"reason"`     // one line an engineer reads in shadow mode
	// Held says why the policy could not decide and kept the setting (0:
	// it decided, keeping the setting or not). Wrappers (schedules, roles,
	// preferences, headroom and alpha rules) pass it on with the decision,
	// so no one reads the reason to learn it.
	Held Hold `json:"held,omitempty"`
}

// Hold is why a policy held a queue's setting without deciding.
type Hold uint8

// Holds.
const (
	// HoldNone: the policy decided.
	HoldNone Hold = iota
	// HoldUndecided: it could not decide the queue (too little telemetry,
	// no policy for the queue's role, an invalid observation).
	HoldUndecided
	// HoldInterval: the counters span an interval outside the decision
	// intervals the policy was validated for.
	HoldInterval
	// HoldIdle: the queue carried (almost) no traffic, so its interval
	// says nothing about its setting (the agent's guardrails.idle-util).
	HoldIdle
)

// String names the hold.
func (h Hold) String() string {
	switch h {
	case HoldNone:
		return "none"
	case HoldUndecided:
		return "undecided"
	case HoldInterval:
		return "interval"
	case HoldIdle:
		return "idle"
	}
	return "hold(" + strconv.Itoa(int(h)) + ")"
}

// MarshalText writes the hold's name, so that JSON records read "interval".
func (h Hold) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads a name MarshalText wrote.
func (h *Hold) UnmarshalText(b []byte) error {
	for _, c := range []Hold{HoldNone, HoldUndecided, HoldInterval, HoldIdle} {
		if string(b) == c.String() {
			*h = c
			return nil
		}
	}
	return fmt.Errorf("hold %q: want none, undecided, interval or idle", b)
}

// Policy decides settings for a batch of queue observations, one Decision
// per observation, in the same order.
type Policy interface {
	Name() string
	Decide(obs []env.Observation) []Decision
}
