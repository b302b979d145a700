package simenv

// Sim is one simulated fabric. It is not safe for concurrent use; it does no
// I/O and reads no clock: time advances only through RunUntil.
type Sim struct {
	cfg Config
}

// New builds a simulation from cfg. It fails with a message naming the field
// when cfg is inconsistent.
func New(cfg Config) (*Sim, error) { panic("TODO engine") }

// Config returns the configuration the simulation was built from.
func (s *Sim) Config() Config { return s.cfg }

// Now is the current simulated time.
func (s *Sim) Now() Time { panic("TODO engine") }

// RunUntil processes every event up to and including time t.
func (s *Sim) RunUntil(t Time) { panic("TODO engine") }

// Run runs to Config.Duration, or until the fabric is idle with no more
// traffic to come, whichever is first.
func (s *Sim) Run() { panic("TODO engine") }

// Idle reports whether no flow is active and no workload will start another.
func (s *Sim) Idle() bool { panic("TODO engine") }

// Switches describes every switch, in index order.
func (s *Sim) Switches() []SwitchInfo { panic("TODO engine") }

// Hosts returns the node ids of the hosts.
func (s *Sim) Hosts() []int { panic("TODO engine") }

// LosslessPriorities returns the priorities carrying lossless data.
func (s *Sim) LosslessPriorities() []int { panic("TODO engine") }

// Telemetry returns what switch sw exports now, and starts a new watermark
// window for its max/avg queue figures.
func (s *Sim) Telemetry(sw int) SwitchTelemetry { panic("TODO engine") }

// ECN returns the current setting of an egress queue.
func (s *Sim) ECN(q QueueRef) ECN { panic("TODO engine") }

// SetECN changes an egress queue's marking setting, effective at once.
func (s *Sim) SetECN(q QueueRef, e ECN) error { panic("TODO engine") }

// SetHeadroom changes an ingress PG's headroom.
func (s *Sim) SetHeadroom(pg PGRef, bytes int64) error { panic("TODO engine") }

// SetAlpha changes an ingress PG's dynamic-threshold factor.
func (s *Sim) SetAlpha(pg PGRef, alpha float64) error { panic("TODO engine") }

// Stats returns run-wide totals.
func (s *Sim) Stats() Stats { panic("TODO engine") }

// Flows returns every flow started so far, finished or not, in start order.
func (s *Sim) Flows() []FlowRecord { panic("TODO engine") }

// Collectives returns every completed collective iteration.
func (s *Sim) Collectives() []CollectiveRecord { panic("TODO engine") }
