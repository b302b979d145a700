package env

// Metrics are the interval figures of one queue, decoded from two
// consecutive QueueSamples. They are what a human reads; Features are what
// a policy reads.
type Metrics struct {
	IntervalNs   int64   `json:"interval_ns"`
	Util         float64 `json:"util"`           // tx bytes / (rate * interval)
	MarkFrac     float64 `json:"mark_frac"`      // ECN-marked bytes / tx bytes
	AvgQueueFrac float64 `json:"avg_queue_frac"` // avg queue / BDP reference
	MaxQueueFrac float64 `json:"max_queue_frac"` // max queue / BDP reference
	PauseRxFrac  float64 `json:"pause_rx_frac"`  // fraction of the interval the queue was paused
	PauseTxFrac  float64 `json:"pause_tx_frac"`  // PFC frames sent on the port, normalised
	DropFrac     float64 `json:"drop_frac"`      // dropped bytes / (tx + dropped bytes)
	Reset        bool    `json:"reset"`          // counters went backwards: interval discarded
}

// Observation is one queue's view for a policy at one decision point.
type Observation struct {
	Key              QueueKey `json:"key"`
	RateBps          float64  `json:"rate_bps"`
	Current          Setting  `json:"current"`
	XoffBytes        int64    `json:"xoff_bytes,omitempty"`
	MinHeadroomBytes int64    `json:"min_headroom_bytes,omitempty"`
	Metrics          Metrics  `json:"metrics"`
	// Features is the normalised vector a learned policy reads; its layout
	// is fixed by SpecVersion.
	Features []float32 `json:"features"`
	// Valid is false when the interval could not be measured (first sample,
	// counter reset, zero interval): policies should hold.
	Valid bool `json:"valid"`
}
