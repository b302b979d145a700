package simswitch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecntune/ecntune/gnmipath"
	"github.com/ecntune/ecntune/simenv"
)

// Engine is what the server needs of a simulation; *simenv.Sim satisfies it.
// Only the runner goroutine calls it.
type Engine interface {
	Now() simenv.Time
	RunUntil(t simenv.Time)
	Switches() []simenv.SwitchInfo
	LosslessPriorities() []int
	Telemetry(sw int) simenv.SwitchTelemetry
	SetECN(q simenv.QueueRef, e simenv.ECN) error
	SetHeadroom(pg simenv.PGRef, bytes int64) error
	SetAlpha(pg simenv.PGRef, alpha float64) error
	Flows() []simenv.FlowRecord
	Stats() simenv.Stats
}

var _ Engine = (*simenv.Sim)(nil)

// window accumulates max and time-weighted average queue length of every
// queue of one switch since the last consuming read.
type window struct {
	max    [][simenv.NumQueues]int64
	integ  [][simenv.NumQueues]float64 // bytes * ps
	span   simenv.Time
	filled bool
}

// published is what the runner last produced for one switch.
type published struct {
	tel   simenv.SwitchTelemetry // counters as of the last step (raw max/avg of that step)
	items []gnmipath.Item        // encoded config leaves of the current tree
	tree  gnmipath.Tree          // current config (immutable once published)
	ver   uint64                 // changes with tree
}

// hub wakes waiters when something is published.
type hub struct {
	mu sync.Mutex
	ch chan struct{}
}

func newHub() *hub { return &hub{ch: make(chan struct{})} }

func (h *hub) wait() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ch
}

func (h *hub) notify() {
	h.mu.Lock()
	close(h.ch)
	h.ch = make(chan struct{})
	h.mu.Unlock()
}

// runner owns the Engine: one goroutine advances it paced to the wall
// clock, publishes telemetry, and runs commands (Sets, ground-truth reads)
// between steps.
type runner struct {
	eng    Engine
	d      gnmipath.Dialect
	dev    *gnmipath.Device
	setLog *setLog // nil: no set log
	// fences are the fencing tokens Sets carried, per switch; writing is
	// the fence of the Set committing now (runner goroutine only), for
	// the set log.
	fences  fenceBook
	writing gnmipath.Fence
	// commits are the confirmed commits under way, per switch, and
	// applied the changes the last commitSet made (runner goroutine
	// only; commit.go).
	commits   map[int]*pendingCommit
	applied   []change
	sonic     []sonicDB // device sonic: each switch's CONFIG_DB (guarded by mu)
	infos     []simenv.SwitchInfo
	lossless  []int
	encoders  []*gnmipath.Encoder
	lldp      [][]gnmipath.Item // LLDP neighbour leaves per switch (the topology does not change)
	ports     []map[string]bool // interface names per switch
	timescale float64
	step      time.Duration
	lockstep  bool // time advances only by advance (Config.Lockstep)

	cmds chan func()

	mu   sync.Mutex // guards pub and win
	pub  []published
	win  []window
	lag  simenv.Time
	now  simenv.Time
	cfgV uint64

	steps   *hub // after every step
	configs *hub // after every config change

	// end is the scenario's end (simenv.Config.Duration) when its
	// traffic does not loop, 0 otherwise; ended is set (and onEnd called,
	// once, on the runner goroutine) when simulated time reaches it.
	end   simenv.Time
	ended atomic.Bool
	onEnd func(at simenv.Time)

	stopped atomic.Bool
	done    chan struct{}
}

func newRunner(eng Engine, dev *gnmipath.Device, timescale float64, step time.Duration, xonBytes int64) *runner {
	d := dev.Dialect
	r := &runner{eng: eng, d: d, dev: dev, timescale: timescale, step: step, cmds: make(chan func()),
		steps: newHub(), configs: newHub(), done: make(chan struct{})}
	r.infos = eng.Switches()
	r.lossless = eng.LosslessPriorities()
	r.now = eng.Now()
	for i, info := range r.infos {
		tel := eng.Telemetry(i)
		layout := snapshot(info, &tel, r.lossless)
		r.encoders = append(r.encoders, gnmipath.NewDeviceEncoder(dev, &layout))
		lldp := LLDPItems(d, info)
		if dev.NoLLDPCapabilities {
			lldp = slices.DeleteFunc(lldp, func(it gnmipath.Item) bool { return it.Leaf.Field == gnmipath.LLDPCapEnabled })
		}
		r.lldp = append(r.lldp, lldp)
		ports := make(map[string]bool, len(info.Ports))
		for _, p := range info.Ports {
			ports[p.Name] = true
		}
		r.ports = append(r.ports, ports)
		tree := initialConfig(d, info, &tel, r.lossless, xonBytes)
		r.pub = append(r.pub, published{tel: tel, tree: tree, items: gnmipath.ConfigItemsFor(dev, tree)})
		r.win = append(r.win, window{max: make([][simenv.NumQueues]int64, len(info.Ports)),
			integ: make([][simenv.NumQueues]float64, len(info.Ports))})
	}
	return r
}

// simStepFor is the simulated time one wall step stands for.
func (r *runner) simStepFor(wall time.Duration) simenv.Time { return Simulated(wall, r.timescale) }

// Simulated is the simulated time wall stands for at timescale (wall
// seconds per simulated second; below 1, faster than real time); past the
// simulator's clock (about 106 days) it is the largest simulated time.
func Simulated(wall time.Duration, timescale float64) simenv.Time {
	t := float64(simenv.FromDuration(wall)) / timescale
	if t >= math.MaxInt64 {
		return math.MaxInt64
	}
	return simenv.Time(t)
}

// MinTimescale is the smallest timescale CheckTimescale accepts: an hour
// of wall time at it is the most simulated time the simulator counts.
var MinTimescale = float64(simenv.FromDuration(time.Hour)) / math.MaxInt64

// CheckTimescale says what is wrong with a timescale (wall seconds per
// simulated second), nil if nothing: it must be finite, > 0, and at least
// MinTimescale. The flags that take one (simswitch's and demo's
// --timescale) put their name in front of the error.
func CheckTimescale(timescale float64) error {
	if !(timescale > 0) || math.IsInf(timescale, 0) {
		return fmt.Errorf("must be a finite number > 0 (wall seconds per simulated second)")
	}
	if timescale < MinTimescale {
		return fmt.Errorf("below the smallest timescale %.2g: an hour of wall time would be more simulated time than the simulator's clock holds (%.0f days); "+
			"a loaded fabric simulates slower than real time anyway: give 1 or more (the default 1000 keeps pace with a small fabric)",
			MinTimescale, simenv.Time(math.MaxInt64).Seconds()/86400)
	}
	return nil
}

// PaceNote warns of a timescale below 1 (faster than real time), which a
// loaded fabric does not keep up with; "" from 1 up.
func PaceNote(timescale float64) string {
	if timescale >= 1 {
		return ""
	}
	return fmt.Sprintf("timescale %g asks for %.3g simulated seconds per wall second; a loaded fabric simulates slower than real time, "+
		"so the simulation will fall behind (the status says by how much): give 1 or more to keep pace", timescale, 1/timescale)
}

func (r *runner) run(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(r.step)
	defer tick.Stop()
	tickC := tick.C
	if r.lockstep {
		tickC = nil // only advance moves time
	}
	wall0 := time.Now()
	sim0 := r.eng.Now()
	maxChunk := max(4*min(r.simStepFor(r.step), math.MaxInt64/4), 1)
	for {
		select {
		case <-ctx.Done():
			r.stopped.Store(true)
			return
		case f := <-r.cmds:
			f()
		case <-tickC:
			target := sim0 + min(r.simStepFor(time.Since(wall0)), math.MaxInt64-sim0)
			r.catchUp(ctx, target, maxChunk)
		}
	}
}

// sliceMax is the most simulated time one RunUntil of the wall-clock loop
// covers (simenv.Sim.RunFunc's chunk): a step at a small timescale stands
// for seconds of fabric, minutes of CPU in one RunUntil.
const sliceMax = 100 * simenv.Microsecond

// catchUp runs the simulation towards target, at most maxChunk of it, in
// slices of at most sliceMax, and publishes where it got with the lag
// left (runner goroutine only). It stops early when ctx ends or a step of
// wall time has gone by, so that a stop, a Set and the next publish wait
// for one slice at most, not for the chunk.
func (r *runner) catchUp(ctx context.Context, target, maxChunk simenv.Time) {
	now := r.eng.Now()
	if target <= now {
		return
	}
	next := target
	if next-now > maxChunk {
		next = now + maxChunk
	}
	stop := time.Now().Add(r.step)
	for now < next {
		r.eng.RunUntil(min(now+sliceMax, next))
		now = r.eng.Now()
		if ctx.Err() != nil || time.Now().After(stop) {
			break
		}
	}
	r.publishStep(max(target-now, 0))
	r.checkEnd()
}

// checkEnd marks the scenario ended once simulated time reaches its end
// (runner goroutine only).
func (r *runner) checkEnd() {
	if r.end > 0 && !r.ended.Load() && r.eng.Now() >= r.end {
		r.ended.Store(true)
		if r.onEnd != nil {
			r.onEnd(r.eng.Now())
		}
	}
}

// advance runs the simulation to target in the steps the wall-clock loop
// would take (each published), on the runner goroutine (lockstep).
func (r *runner) advance(target simenv.Time) {
	chunk := max(4*r.simStepFor(r.step), 1)
	for now := r.eng.Now(); now < target; now = r.eng.Now() {
		r.eng.RunUntil(min(now+chunk, target))
		r.publishStep(0)
		r.checkEnd()
	}
}

func (r *runner) publishStep(lag simenv.Time) {
	tels := make([]simenv.SwitchTelemetry, len(r.infos))
	for i := range r.infos {
		tels[i] = r.eng.Telemetry(i)
	}
	r.mu.Lock()
	for i, tel := range tels {
		w := &r.win[i]
		span := tel.Time - r.pub[i].tel.Time
		for p := range tel.Ports {
			if p >= len(w.max) {
				break
			}
			for q := 0; q < simenv.NumQueues; q++ {
				c := tel.Ports[p].Queues[q]
				if !w.filled || c.MaxBytes > w.max[p][q] {
					w.max[p][q] = c.MaxBytes
				}
				w.integ[p][q] += c.AvgBytes * float64(span)
			}
		}
		w.span += span
		w.filled = true
		r.pub[i].tel = tel
	}
	r.now = r.eng.Now()
	if lag >= 0 { // negative: a publish between steps, lag unchanged
		r.lag = lag
	}
	r.mu.Unlock()
	r.steps.notify()
}

// telemetry returns switch sw's latest telemetry with max/avg queue figures
// covering the time since the last consuming read; consume starts a new
// window (read-and-clear, as switch watermarks are).
func (r *runner) telemetry(sw int, consume bool) (simenv.SwitchTelemetry, gnmipath.Tree, []gnmipath.Item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pub[sw]
	tel := p.tel
	tel.Ports = append([]simenv.PortTelemetry(nil), p.tel.Ports...)
	w := &r.win[sw]
	for pi := range tel.Ports {
		if !w.filled || pi >= len(w.max) {
			// nothing since the last read: the window is the present
			for q := 0; q < simenv.NumQueues; q++ {
				c := &tel.Ports[pi].Queues[q]
				c.MaxBytes, c.AvgBytes = c.CurBytes, float64(c.CurBytes)
			}
			continue
		}
		for q := 0; q < simenv.NumQueues; q++ {
			c := &tel.Ports[pi].Queues[q]
			c.MaxBytes = max(w.max[pi][q], c.CurBytes)
			if w.span > 0 {
				c.AvgBytes = w.integ[pi][q] / float64(w.span)
			} else {
				c.AvgBytes = float64(c.CurBytes)
			}
		}
	}
	if consume {
		for pi := range w.max {
			w.max[pi] = [simenv.NumQueues]int64{}
			w.integ[pi] = [simenv.NumQueues]float64{}
		}
		w.span, w.filled = 0, false
	}
	return tel, p.tree, p.items
}

func (r *runner) status() (now, lag simenv.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now, r.lag
}

var errStopped = errors.New("simulation stopped")

// do runs f on the runner goroutine between steps and waits for it.
func (r *runner) do(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case r.cmds <- func() { f(); close(done) }:
	case <-r.done:
		return errStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-r.done:
		return errStopped
	}
}

// commitTree publishes a new config tree for sw (runner goroutine only).
func (r *runner) commitTree(sw int, t gnmipath.Tree) {
	items := gnmipath.ConfigItemsFor(r.dev, t)
	r.mu.Lock()
	r.pub[sw].tree = t
	r.pub[sw].items = items
	r.cfgV++
	r.pub[sw].ver = r.cfgV
	r.mu.Unlock()
	r.configs.notify()
}
