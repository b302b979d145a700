package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ecntune/ecntune/internal/cputime"
	"github.com/ecntune/ecntune/simenv"
)

// ns3HopsPerSec is the speed of ns-3 HPCC on the fat-tree WebSearch 30% run
// on this kind of machine (one core), from the reference README; the ratio
// to it is given for that run only (ns3Reference), since speed in
// packet-hops per second depends on the scenario.
const (
	ns3HopsPerSec = 0.42e6
	ns3Reference  = "config_fat_ws30_dcqcn.txt"
)

// isNS3Reference says whether input is the run ns-3's speed was measured on.
func isNS3Reference(input string) bool { return filepath.Base(input) == ns3Reference }

// SimOptions are the options of "ecntune bench sim".
type SimOptions struct {
	Config simenv.Config
	Input  string // the file Config came from, for the report
	// Runs independent runs, Parallel of them at once (one Sim per
	// goroutine).
	Runs, Parallel int
	// Reseed gives run i the seed Seed+i; otherwise every run keeps
	// Config's seed.
	Reseed bool
	Seed   uint64
	// Progress, when set, is called as the runs advance with the
	// simulated time done over all runs and the total, in microseconds
	// (from several goroutines, one call at a time).
	Progress func(done, total int64)
}

// SimRun is one run's measurement.
type SimRun struct {
	Input      string  `json:"input"`
	Seed       uint64  `json:"seed"`
	SimTimeS   float64 `json:"sim_time_s"`
	ActiveSimS float64 `json:"active_sim_time_s"` // from the first flow's start
	WallS      float64 `json:"wall_s"`
	// CPUS is the process's CPU time over the run (every thread, the
	// garbage collector included): the run's own with --parallel 1,
	// steadier than wall time on a loaded machine; 0 with runs at once.
	CPUS          float64 `json:"cpu_s,omitempty"`
	PacketHops    uint64  `json:"packet_hops"`
	Events        uint64  `json:"events"`
	HopsPerSec    float64 `json:"packet_hops_per_s"`
	HopsPerCPUSec float64 `json:"packet_hops_per_cpu_s,omitempty"`
	VsNS3         float64 `json:"speed_vs_ns3,omitempty"` // on the reference run only
	WallPerSimSec float64 `json:"wall_s_per_sim_s"`
	Flows         int     `json:"flows"`
	Finished      int     `json:"finished"`
}

// SimReport is what "ecntune bench sim" reports. The JSON keys are in
// alphabetical order, as the command has always printed them.
type SimReport struct {
	AggregateHopsPerS float64  `json:"aggregate_packet_hops_per_s"`
	Cores             int      `json:"cores"`
	Parallel          int      `json:"parallel"`
	PeakRSSBytes      uint64   `json:"peak_rss_bytes"`
	Runs              []SimRun `json:"runs"`
	TotalWallS        float64  `json:"total_wall_s"`

	Input string `json:"-"`
}

// Sim is a checked simulator measurement, ready to run.
type Sim struct{ o SimOptions }

// NewSim checks the options: the run counts and the configuration (errors
// name the input).
func NewSim(o SimOptions) (*Sim, error) {
	if o.Runs < 1 || o.Parallel < 1 {
		return nil, fmt.Errorf("--runs and --parallel must be at least 1")
	}
	if _, err := simenv.New(o.Config); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Input, err)
	}
	return &Sim{o}, nil
}

// Run runs the simulations and reports their speed and the process's peak
// resident memory.
func (b *Sim) Run() *SimReport {
	o := b.o
	results := make([]SimRun, o.Runs)
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var done int64
	total := int64(o.Runs) * int64(o.Config.Duration/simenv.Microsecond)
	t0 := time.Now()
	for i := 0; i < o.Runs; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			c := o.Config
			if o.Reseed {
				c.Seed = o.Seed + uint64(i)
			}
			results[i] = simOne(c, o.Input, o.Parallel == 1, func(d simenv.Time) {
				if o.Progress != nil {
					mu.Lock()
					done += int64(d / simenv.Microsecond)
					o.Progress(done, total)
					mu.Unlock()
				}
			})
		}(i)
	}
	wg.Wait()
	wall := time.Since(t0)
	var hops uint64
	for _, r := range results {
		hops += r.PacketHops
	}
	return &SimReport{Runs: results, Parallel: o.Parallel, TotalWallS: wall.Seconds(),
		AggregateHopsPerS: float64(hops) / wall.Seconds(), PeakRSSBytes: peakRSSBytes(), Cores: runtime.NumCPU(), Input: o.Input}
}

// simOne runs one simulation, telling advance how much simulated time
// each step covered.
func simOne(c simenv.Config, input string, alone bool, advance func(simenv.Time)) SimRun {
	s, _ := simenv.New(c) // checked by NewSim
	cpu0 := cputime.Process()
	t0 := time.Now()
	var last simenv.Time
	s.RunFunc(func(now simenv.Time) {
		advance(now - last)
		last = now
	})
	wall := time.Since(t0)
	cpu := cputime.Process() - cpu0
	st := s.Stats()
	flows := s.Flows()
	first := st.Now
	finished := 0
	for _, f := range flows {
		first = min(first, f.Start)
		if f.Finish != 0 {
			finished++
		}
	}
	active := (st.Now - first).Seconds()
	r := SimRun{Input: input, Seed: c.Seed, SimTimeS: st.Now.Seconds(), ActiveSimS: active, WallS: wall.Seconds(),
		PacketHops: st.PacketHops, Events: st.Events, Flows: len(flows), Finished: finished}
	r.HopsPerSec = float64(st.PacketHops) / wall.Seconds()
	if alone && cpu > 0 {
		r.CPUS = cpu.Seconds()
		r.HopsPerCPUSec = float64(st.PacketHops) / cpu.Seconds()
	}
	if isNS3Reference(input) {
		// ns-3 runs on one core: against its speed, the run's own CPU
		// time where it is known (a loaded machine slows wall time)
		r.VsNS3 = r.HopsPerSec / ns3HopsPerSec
		if r.HopsPerCPUSec > 0 {
			r.VsNS3 = r.HopsPerCPUSec / ns3HopsPerSec
		}
	}
	if active > 0 {
		r.WallPerSimSec = wall.Seconds() / active
	}
	return r
}

// WriteJSON writes the report as one JSON object.
func (r *SimReport) WriteJSON(w io.Writer) error { return json.NewEncoder(w).Encode(r) }

// WriteText writes a table of the runs and a summary line.
func (r *SimReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "seed\tsim time\twall\tcpu\tpacket-hops\tM hops/s\tM hops/cpu s\tx ns-3\twall/sim s\tevents/hop\tfinished\t")
	dash := func(v float64, format string) string {
		if v <= 0 {
			return "–"
		}
		return fmt.Sprintf(format, v)
	}
	for _, r := range r.Runs {
		fmt.Fprintf(tw, "%d\t%.3f ms\t%.2f s\t%s\t%d\t%.2f\t%s\t%s\t%.0f\t%.2f\t%d/%d\t\n", r.Seed, r.ActiveSimS*1e3, r.WallS, dash(r.CPUS, "%.2f s"),
			r.PacketHops, r.HopsPerSec/1e6, dash(r.HopsPerCPUSec/1e6, "%.2f"), dash(r.VsNS3, "%.1f"), r.WallPerSimSec, float64(r.Events)/float64(max(r.PacketHops, 1)), r.Finished, r.Flows)
	}
	tw.Flush()
	_, err := fmt.Fprintf(w, "%s: %d run(s), %d at a time on %d cores: %.2f s wall, aggregate %.2f M packet-hops/s; peak RSS %.0f MB\n",
		r.Input, len(r.Runs), r.Parallel, r.Cores, r.TotalWallS, r.AggregateHopsPerS/1e6, float64(r.PeakRSSBytes)/1e6)
	if err != nil {
		return err
	}
	if len(r.Runs) > 1 && r.Parallel == 1 {
		var per []float64
		for _, x := range r.Runs {
			per = append(per, x.HopsPerCPUSec)
		}
		slices.Sort(per)
		fmt.Fprintf(w, "per CPU second over the %d runs: median %.2f M packet-hops/s (%.2f-%.2f)\n", len(per), median(per)/1e6, per[0]/1e6, per[len(per)-1]/1e6)
	}
	if isNS3Reference(r.Input) {
		_, err = fmt.Fprintf(w, "x ns-3: against ns-3 HPCC's %.2f M packet-hops/s on one core on this run, per CPU second with --parallel 1 (per wall second otherwise)\n", ns3HopsPerSec/1e6)
	} else {
		_, err = fmt.Fprintf(w, "x ns-3: only on the run ns-3's speed was measured on (--hpcc-config .../%s): packet-hops per second depend on the scenario\n", ns3Reference)
	}
	return err
}

// peakRSSBytes reads the process's peak resident set (VmHWM) on Linux, and
// falls back to the Go runtime's view elsewhere.
func peakRSSBytes() uint64 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
				fields := strings.Fields(rest)
				if len(fields) >= 1 {
					if kb, err := strconv.ParseUint(fields[0], 10, 64); err == nil {
						return kb * 1024
					}
				}
			}
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Sys
}

// median is the middle of sorted xs, the mean of the two middle ones for
// an even count (the upper one was given: with 2 runs, the best).
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
