package policy

import "github.com/ecntune/ecntune/env"

// Decision is a policy's answer for one queue.
type Decision struct {
	Key        env.QueueKey `json:"key"`
	Setting    env.Setting  `json:"setting"`
	Action     int          `json:"action"`     // catalogue index, -1 when not from the catalogue
	Confidence float64      `json:"confidence"` // 0..1
	Reason     string       `json:"reason"`     // one line an engineer reads in shadow mode
}

// Policy decides settings for a batch of queue observations, one Decision
// per observation, in the same order.
type Policy interface {
	Name() string
	Decide(obs []env.Observation) []Decision
}
