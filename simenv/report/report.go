package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
)

// Stat is the distribution of FCT slowdowns of the finished flows of one
// bucket. Percentiles use the nearest-rank method on the sorted values: the
// p-th percentile of n values is the ceil(p/100 × n)-th smallest. All fields
// are 0 when N is 0.
type Stat struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
}

// Bucket bounds in bytes (KB = 1000 B): a flow of s bytes is in the first
// bucket whose upper bound is above s.
const (
	bound10KB  = 10_000
	bound100KB = 100_000
	bound1MB   = 1_000_000
)

// Bucket names, as the JSON keys and the table rows show them.
const (
	BucketUnder10KB = "<10KB"
	Bucket10To100KB = "10KB-100KB"
	Bucket100KBTo1M = "100KB-1MB"
	BucketOver1MB   = ">=1MB"
	BucketAll       = "all"
)

// FCTSlowdown holds one Stat per flow-size bucket, and one over all flows.
type FCTSlowdown struct {
	Under10KB   Stat `json:"<10KB"`
	From10KB    Stat `json:"10KB-100KB"`
	From100KB   Stat `json:"100KB-1MB"`
	From1MB     Stat `json:">=1MB"`
	AllFinished Stat `json:"all"`
}

// Buckets lists the buckets in size order, "all" last.
func (f FCTSlowdown) Buckets() []struct {
	Name string
	Stat Stat
} {
	return []struct {
		Name string
		Stat Stat
	}{{BucketUnder10KB, f.Under10KB}, {Bucket10To100KB, f.From10KB}, {Bucket100KBTo1M, f.From100KB},
		{BucketOver1MB, f.From1MB}, {BucketAll, f.AllFinished}}
}

// Summary is what a run amounts to.
type Summary struct {
	// Scenario and Seed say what ran; Summarize leaves them for the caller.
	Scenario string `json:"scenario,omitempty"`
	Seed     uint64 `json:"seed"`

	Flows       int         `json:"flows"` // flows started
	Finished    int         `json:"finished"`
	Unfinished  int         `json:"unfinished"`
	FCTSlowdown FCTSlowdown `json:"fct_slowdown"`
	// Utilisation is the average busy fraction of the host uplinks over
	// the whole run.
	Utilisation float64 `json:"utilisation"`
	// FirstFlowS is when the first flow started, when that is a lead-in
	// of at least 1% of the run, and UtilisationFromFirstFlow the
	// utilisation from then on (an ns-3 flow file starts at 2 s, say).
	FirstFlowS               float64 `json:"first_flow_s,omitempty"`
	UtilisationFromFirstFlow float64 `json:"utilisation_from_first_flow,omitempty"`
	// GoodputGbps is the payload received by all hosts per simulated
	// second, and GoodputFromFirstFlowGbps per second from the first
	// flow's start (set with FirstFlowS).
	GoodputGbps              float64 `json:"goodput_gbps"`
	GoodputFromFirstFlowGbps float64 `json:"goodput_from_first_flow_gbps,omitempty"`
	ECNMarked                uint64  `json:"ecn_marked"`
	PFCPauses                uint64  `json:"pfc_pauses"`
	PFCResumes               uint64  `json:"pfc_resumes"`
	Drops                    uint64  `json:"drops"`
	DropBytes                uint64  `json:"drop_bytes"`
	RetxBytes                uint64  `json:"retx_bytes"`
	Events                   uint64  `json:"events"`
	PacketHops               uint64  `json:"packet_hops"`
	SimTimeS                 float64 `json:"sim_time_s"`
	WallS                    float64 `json:"wall_s"`
	PacketHopsPerWall        float64 `json:"packet_hops_per_wall_s"`
	// Collectives are the run's allreduce and alltoall workloads (see
	// Collectives); Summarize leaves them for the caller, who knows the
	// scenario's workloads.
	Collectives []Collective `json:"collectives,omitempty"`
	// ECN is the marking setting the lossless queues started with, per
	// port rate (ECNInEffect fills it).
	ECN []ECNAtRate `json:"ecn,omitempty"`
	// ECNOff: the switches marked nothing, whatever ECN says
	// (simenv.Config.ECNOff, an HPCC config's ENABLE_QCN 0).
	ECNOff bool `json:"ecn_off,omitempty"`
}

// ECNAtRate is the ECN setting of the lossless queues of ports of one
// rate.
type ECNAtRate struct {
	RateBps   float64 `json:"rate_bps"`
	KminBytes int64   `json:"kmin_bytes"`
	KmaxBytes int64   `json:"kmax_bytes"`
	Pmax      float64 `json:"pmax"`
	Queues    int     `json:"queues"`
}

// ECNInEffect lists the ECN settings of sim's lossless queues now, one per
// port rate and setting, by rate.
func ECNInEffect(sim *simenv.Sim) []ECNAtRate {
	type key struct {
		rate float64
		e    simenv.ECN
	}
	n := map[key]int{}
	var order []key
	for _, sw := range sim.Switches() {
		for _, p := range sw.Ports {
			for _, q := range sim.LosslessPriorities() {
				k := key{p.RateBps, sim.ECN(simenv.QueueRef{Switch: sw.Index, Port: p.Index, Queue: q})}
				if n[k] == 0 {
					order = append(order, k)
				}
				n[k]++
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].rate < order[j].rate })
	out := make([]ECNAtRate, len(order))
	for i, k := range order {
		out[i] = ECNAtRate{RateBps: k.rate, KminBytes: k.e.KminBytes, KmaxBytes: k.e.KmaxBytes, Pmax: k.e.Pmax, Queues: n[k]}
	}
	return out
}

// Summarize computes the summary of a run from its flows, its totals and
// the wall time it took.
func Summarize(flows []simenv.FlowRecord, st simenv.Stats, wall time.Duration) Summary {
	s := Summary{
		Flows:     len(flows),
		ECNMarked: st.ECNMarked, PFCPauses: st.PFCPauses, PFCResumes: st.PFCResumes,
		Drops: st.Drops, DropBytes: st.DropBytes, RetxBytes: st.RetxBytes,
		Events: st.Events, PacketHops: st.PacketHops,
		SimTimeS: st.Now.Seconds(), WallS: wall.Seconds(),
	}
	var buckets [4][]float64
	var all []float64
	for _, f := range flows {
		if f.Finish == 0 {
			s.Unfinished++
			continue
		}
		sd := f.Slowdown()
		all = append(all, sd)
		buckets[bucketOf(f.SizeBytes)] = append(buckets[bucketOf(f.SizeBytes)], sd)
	}
	s.Finished = len(all)
	s.FCTSlowdown = FCTSlowdown{stat(buckets[0]), stat(buckets[1]), stat(buckets[2]), stat(buckets[3]), stat(all)}
	if st.Now > 0 {
		if st.Hosts > 0 {
			s.Utilisation = float64(st.HostTxBusy) / (float64(st.Hosts) * float64(st.Now))
			s.SetFirstFlow(flows, st)
		}
		s.GoodputGbps = float64(st.HostRxBytes) * 8 / st.Now.Seconds() / 1e9
	}
	if wall > 0 {
		s.PacketHopsPerWall = float64(st.PacketHops) / wall.Seconds()
	}
	return s
}

// SetFirstFlow sets FirstFlowS, UtilisationFromFirstFlow and
// GoodputFromFirstFlowGbps from flows (FromFirstFlow).
func (s *Summary) SetFirstFlow(flows []simenv.FlowRecord, st simenv.Stats) {
	s.FirstFlowS, s.UtilisationFromFirstFlow = FromFirstFlow(flows, st)
	s.GoodputFromFirstFlowGbps = 0
	if s.FirstFlowS > 0 {
		s.GoodputFromFirstFlowGbps = float64(st.HostRxBytes) * 8 / (st.Now.Seconds() - s.FirstFlowS) / 1e9
	}
}

// FromFirstFlow is the start of the run's first flow (seconds) and the
// hosts' utilisation from then on (both 0 when the first flow starts in
// the run's first 1%, or no flow ran): flows are all the run's, since the
// busy time is the whole run's.
func FromFirstFlow(flows []simenv.FlowRecord, st simenv.Stats) (firstS, util float64) {
	if st.Now <= 0 || st.Hosts <= 0 {
		return 0, 0
	}
	if first := firstStart(flows); first >= st.Now/100 && first < st.Now {
		return first.Seconds(), float64(st.HostTxBusy) / (float64(st.Hosts) * float64(st.Now-first))
	}
	return 0, 0
}

// firstStart is the earliest start of flows (0 for none).
func firstStart(flows []simenv.FlowRecord) simenv.Time {
	var first simenv.Time
	for i, f := range flows {
		if i == 0 || f.Start < first {
			first = f.Start
		}
	}
	return first
}

func bucketOf(size int64) int {
	switch {
	case size < bound10KB:
		return 0
	case size < bound100KB:
		return 1
	case size < bound1MB:
		return 2
	}
	return 3
}

// stat sorts v in place and summarises it.
func stat(v []float64) Stat {
	if len(v) == 0 {
		return Stat{}
	}
	sort.Float64s(v)
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return Stat{N: len(v), P50: Percentile(v, 50), P95: Percentile(v, 95), P99: Percentile(v, 99), Mean: sum / float64(len(v))}
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted,
// a non-empty ascending slice: its ceil(p/100 × n)-th smallest value.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	// Rank in integer arithmetic where possible, so that 95% of 20 is 19,
	// not 19.000000000000004 rounded up to 20.
	rank := int(math.Ceil(p*float64(n)/100 - 1e-9))
	rank = max(1, min(n, rank))
	return sorted[rank-1]
}

// WriteJSON writes the summary as one indented JSON object (bucket names are
// written as they are, not HTML-escaped).
func (s Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteText writes the summary as an aligned table for people.
func (s Summary) WriteText(w io.Writer) error {
	if s.Scenario != "" {
		if _, err := fmt.Fprintf(w, "scenario %s, seed %d\n\n", s.Scenario, s.Seed); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "FCT slowdown\tflows\tp50\tp95\tp99\tmean\t\n")
	for _, b := range s.FCTSlowdown.Buckets() {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n", b.Name, b.Stat.N, b.Stat.P50, b.Stat.P95, b.Stat.P99, b.Stat.Mean)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nflows\t%d started, %d finished, %d unfinished", s.Flows, s.Finished, s.Unfinished)
	if s.Unfinished > 0 {
		fmt.Fprint(tw, " (left out of the FCT slowdowns above)")
	}
	fmt.Fprintln(tw)
	ecn := s.ECN
	if s.ECNOff {
		fmt.Fprintf(tw, "ECN off\tswitches mark nothing (ENABLE_QCN 0), whatever the queues' thresholds\n")
		ecn = nil
	}
	for i, e := range ecn {
		head := ""
		if i == 0 {
			head = "ECN in effect"
		}
		fmt.Fprintf(tw, "%s\tat %s: kmin %s kmax %s pmax %s (%d lossless queues)\n", head, units.FormatRate(e.RateBps),
			units.FormatBytes(e.KminBytes), units.FormatBytes(e.KmaxBytes), strconv.FormatFloat(100*e.Pmax, 'g', 3, 64)+"%", e.Queues)
	}
	if s.FirstFlowS > 0 {
		fmt.Fprintf(tw, "host-link utilisation\t%.1f%% from the first flow's start at %v (%.1f%% with the idle lead-in before it)\n",
			100*s.UtilisationFromFirstFlow, time.Duration(s.FirstFlowS*1e9).Round(time.Microsecond), 100*s.Utilisation)
	} else {
		fmt.Fprintf(tw, "host-link utilisation\t%.1f%%\n", 100*s.Utilisation)
	}
	if s.FirstFlowS > 0 {
		fmt.Fprintf(tw, "goodput\t%.2f Gb/s from the first flow's start (%.2f Gb/s with the idle lead-in)\n", s.GoodputFromFirstFlowGbps, s.GoodputGbps)
	} else {
		fmt.Fprintf(tw, "goodput\t%.2f Gb/s\n", s.GoodputGbps)
	}
	fmt.Fprintf(tw, "ECN-marked packets\t%d\n", s.ECNMarked)
	fmt.Fprintf(tw, "PFC pauses\t%d (%d resumes)\n", s.PFCPauses, s.PFCResumes)
	fmt.Fprintf(tw, "drops\t%d packets, %s\n", s.Drops, units.FormatBytes(int64(s.DropBytes)))
	fmt.Fprintf(tw, "retransmitted\t%s\n", units.FormatBytes(int64(s.RetxBytes)))
	fmt.Fprintf(tw, "events\t%d\n", s.Events)
	fmt.Fprintf(tw, "packet-hops\t%d\n", s.PacketHops)
	fmt.Fprintf(tw, "simulated time\t%.6g ms\n", s.SimTimeS*1e3)
	fmt.Fprintf(tw, "wall time\t%.3f s (%.3g M packet-hops/s)\n", s.WallS, s.PacketHopsPerWall/1e6)
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeCollectives(w, s.Collectives)
}
