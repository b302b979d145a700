package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ecntune/ecntune/simenv"
)

// ns3HopsPerSec is the speed of ns-3 HPCC on the fat-tree WebSearch 30% run
// on this kind of machine (one core), from the reference README.
const ns3HopsPerSec = 0.42e6

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
	Input         string  `json:"input"`
	Seed          uint64  `json:"seed"`
	SimTimeS      float64 `json:"sim_time_s"`
	ActiveSimS    float64 `json:"active_sim_time_s"` // from the first flow's start
	WallS         float64 `json:"wall_s"`
	PacketHops    uint64  `json:"packet_hops"`
	Events        uint64  `json:"events"`
	HopsPerSec    float64 `json:"packet_hops_per_s"`
	VsNS3         float64 `json:"speed_vs_ns3"`
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
			results[i] = simOne(c, o.Input, func(d simenv.Time) {
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
func simOne(c simenv.Config, input string, advance func(simenv.Time)) SimRun {
	s, _ := simenv.New(c) // checked by NewSim
	t0 := time.Now()
	var last simenv.Time
	s.RunFunc(func(now simenv.Time) {
		advance(now - last)
		last = now
	})
	wall := time.Since(t0)
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
	r.VsNS3 = r.HopsPerSec / ns3HopsPerSec
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
	fmt.Fprintln(tw, "seed\tsim time\twall\tpacket-hops\tM hops/s\tx ns-3\twall/sim s\tevents/hop\tfinished\t")
	for _, r := range r.Runs {
		fmt.Fprintf(tw, "%d\t%.3f ms\t%.2f s\t%d\t%.2f\t%.1f\t%.0f\t%.2f\t%d/%d\t\n", r.Seed, r.ActiveSimS*1e3, r.WallS,
			r.PacketHops, r.HopsPerSec/1e6, r.VsNS3, r.WallPerSimSec, float64(r.Events)/float64(max(r.PacketHops, 1)), r.Finished, r.Flows)
	}
	tw.Flush()
	_, err := fmt.Fprintf(w, "%s: %d run(s), %d at a time on %d cores: %.2f s wall, aggregate %.2f M packet-hops/s (%.1fx ns-3's one-core speed); peak RSS %.0f MB\n",
		r.Input, len(r.Runs), r.Parallel, r.Cores, r.TotalWallS, r.AggregateHopsPerS/1e6,
		r.AggregateHopsPerS/ns3HopsPerSec, float64(r.PeakRSSBytes)/1e6)
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
