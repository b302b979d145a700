package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
)

// AgentResult is what "ecntune bench agent" reports.
type AgentResult struct {
	Switches       int     `json:"switches"`
	PortsPerSwitch [2]int  `json:"ports_per_switch_min_max"`
	Ports          int     `json:"ports"`
	QueuesPerPort  int     `json:"lossless_queues_per_port"`
	Queues         int     `json:"queues"`
	QueuesObsMin   int     `json:"queues_observed_min"`
	QueuesObsMean  float64 `json:"queues_observed_mean"`
	// HeldForInterval counts the measured decisions the policy held
	// because the counters' interval (the interval over the timescale) is
	// outside the one it was validated for: its time is then its hold
	// path's, and the verdict says so.
	HeldForInterval int `json:"held_for_interval,omitempty"`
	decisionsSeen   int
	Hosts           int     `json:"hosts"`
	Mode            string  `json:"mode"`
	Policy          string  `json:"policy"`
	Encoding        string  `json:"encoding"`
	IntervalS       float64 `json:"interval_s"`
	Intervals       int     `json:"intervals"`
	WallS           float64 `json:"wall_s"`
	Timescale       float64 `json:"timescale"`
	SimAdvancedUs   float64 `json:"sim_advanced_us"`
	SimLagUs        float64 `json:"sim_lag_us"`

	AgentCPUPerIntervalMs   float64 `json:"agent_cpu_per_interval_ms"`
	AgentCPUPer1000QMs      float64 `json:"agent_cpu_per_interval_per_1000_queues_ms"`
	TicksPerInterval        float64 `json:"control_intervals_per_interval"`
	QueueSamples            int64   `json:"queue_samples"`
	SamplesPerQueueInterval float64 `json:"samples_per_queue_per_interval"`
	AgentCores              float64 `json:"agent_cores"`
	CoresFor10k             float64 `json:"cores_for_10000_queues"`
	SwitchCPUPerIntervalMs  float64 `json:"switch_side_cpu_per_interval_ms"`

	HeapBaseBytes   uint64  `json:"heap_before_agent_bytes"`
	HeapLiveBytes   uint64  `json:"heap_live_bytes"`
	HeapPer1000QB   float64 `json:"heap_per_1000_queues_bytes"`
	DecisionMsMean  float64 `json:"decision_ms_mean"`
	DecisionMsMax   float64 `json:"decision_ms_max"`
	DecideMsMean    float64 `json:"policy_decide_ms_mean"`
	Sets            int     `json:"sets"`
	SetErrors       int     `json:"set_errors"`
	QueuesPerSet    float64 `json:"queues_per_set"`
	SetP50Ms        float64 `json:"set_p50_ms"`
	SetP99Ms        float64 `json:"set_p99_ms"`
	SetMaxMs        float64 `json:"set_max_ms"`
	ReadP50Ms       float64 `json:"readback_get_p50_ms"`
	ReadP99Ms       float64 `json:"readback_get_p99_ms"`
	QueuesApplied   int     `json:"queues_applied"`
	ChangeBudget    int     `json:"change_budget"`
	Recommendations int     `json:"shadow_recommendations"`
	Verdict         string  `json:"verdict"`
}

// newAgentResult starts the result with the options and the fabric the
// child serves.
func newAgentResult(o AgentOptions, policyName string, h fabricHello, heapBase uint64) *AgentResult {
	res := &AgentResult{Switches: len(h.Switches), QueuesPerPort: len(h.Lossless), Hosts: h.Hosts,
		Mode: string(o.Mode), Policy: policyName, Encoding: o.Encoding, IntervalS: o.Interval.Seconds(),
		Intervals: o.Intervals, Timescale: o.Timescale, ChangeBudget: o.ChangeBudget, HeapBaseBytes: heapBase}
	res.PortsPerSwitch = [2]int{math.MaxInt, 0}
	for _, p := range h.Switches {
		res.Ports += p
		res.PortsPerSwitch = [2]int{min(res.PortsPerSwitch[0], p), max(res.PortsPerSwitch[1], p)}
	}
	res.Queues = res.Ports * res.QueuesPerPort
	return res
}

// measured fills in the measurements: CPU and heap from the window, the
// decision and policy times from the probe, Set latencies, and what the
// (stopped) agent's journal holds.
func (res *AgentResult) measured(o AgentOptions, w window, run *agentRun) error {
	wall := w.wall1.Sub(w.wall0)
	cpu := w.cpu1 - w.cpu0
	res.WallS = wall.Seconds()
	perInterval := float64(cpu) * float64(o.Interval) / float64(wall)
	res.AgentCPUPerIntervalMs = perInterval / 1e6
	res.AgentCores = float64(cpu) / float64(wall)
	res.TicksPerInterval = float64(o.Intervals) * float64(o.Interval) / float64(wall)
	res.SwitchCPUPerIntervalMs = float64(w.child1.CPUNs-w.child0.CPUNs) * float64(o.Interval) / float64(wall) / 1e6
	res.SimAdvancedUs = float64(w.child1.SimPs-w.child0.SimPs) / 1e6
	res.SimLagUs = float64(w.child1.LagPs) / 1e6
	if w.heapLive > res.HeapBaseBytes {
		res.HeapLiveBytes = w.heapLive
	}
	res.decisions(o, run.probe)
	if res.Queues > 0 {
		// Per queue sample taken in: a switch side that falls behind
		// delivers fewer samples than one per queue per interval, and
		// Sets holding the loop make control intervals fewer than wall
		// intervals; a queue sample is one queue's share of an interval
		// either way.
		res.QueueSamples = w.samples1 - w.samples0
		if res.QueueSamples > 0 {
			res.AgentCPUPer1000QMs = float64(cpu) / 1e6 / float64(res.QueueSamples) * 1000
		}
		res.SamplesPerQueueInterval = float64(res.QueueSamples) / float64(res.Queues) * float64(o.Interval) / float64(wall)
		res.HeapPer1000QB = float64(int64(res.HeapLiveBytes)-int64(res.HeapBaseBytes)) / float64(res.Queues) * 1000
	}
	res.CoresFor10k = res.AgentCPUPer1000QMs * 10 / 1e3 / o.Interval.Seconds()
	lat := run.lat
	lat.mu.Lock()
	res.Sets, res.SetErrors = len(lat.set), lat.setErrs
	if len(lat.set) > 0 {
		res.QueuesPerSet = float64(lat.setsQueues) / float64(len(lat.set))
	}
	res.SetP50Ms, res.SetP99Ms, res.SetMaxMs = ms(percentile(lat.set, 50)), ms(percentile(lat.set, 99)), ms(percentile(lat.set, 100))
	res.ReadP50Ms, res.ReadP99Ms = ms(percentile(lat.get, 50)), ms(percentile(lat.get, 99))
	lat.mu.Unlock()
	j := run.a.Journal()
	es, err := j.Entries("", 0)
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.State == core.StateApplied {
			res.QueuesApplied++
		}
	}
	if o.Mode == config.ModeShadow {
		recs, err := j.Recommendations("", 0, 0)
		if err != nil {
			return err
		}
		res.Recommendations = len(recs)
	}
	verdict := "meets"
	if !(res.CoresFor10k < AgentGoalCores) {
		verdict = "misses"
	}
	res.Verdict = fmt.Sprintf("%s the goal: 10,000 queues at a %v interval would take %.2f cores of agent CPU (goal: under %g)",
		verdict, o.Interval, res.CoresFor10k, AgentGoalCores)
	if res.HeldForInterval > 0 && res.decisionsSeen > 0 {
		res.Verdict += fmt.Sprintf("; NOT a measure of the policy's decisions: it held %.0f%% of them, the counters' %v (interval over --timescale) being outside the intervals it was validated for (lower --timescale)",
			100*float64(res.HeldForInterval)/float64(res.decisionsSeen), time.Duration(float64(o.Interval)/o.Timescale))
	}
	return nil
}

// AgentGoalCores is the agent's CPU budget for 10,000 queues at a 1 s
// interval, in cores.
const AgentGoalCores = 0.5

// decisions fills in the queues decided on, the policy's time and the
// decision latency of the measured intervals.
func (res *AgentResult) decisions(o AgentOptions, probe *tickProbe) {
	probe.mu.Lock()
	defer probe.mu.Unlock()
	res.QueuesObsMin = math.MaxInt
	var decideSum time.Duration
	var decMax float64
	decN := 0
	var decSum float64
	// Call i (0-based) starts interval i+1; the measured ones are calls
	// Warmup-1 .. Warmup+Intervals-2, and call i+1 sees call i's decision
	// latency in the histogram.
	for i := o.Warmup - 1; i < o.Warmup+o.Intervals-1 && i < len(probe.queues); i++ {
		res.QueuesObsMin = min(res.QueuesObsMin, probe.queues[i])
		if i < len(probe.held) {
			res.HeldForInterval += probe.held[i]
			res.decisionsSeen += probe.queues[i]
		}
		res.QueuesObsMean += float64(probe.queues[i]) / float64(o.Intervals)
		decideSum += probe.decide[i]
		if i+1 < len(probe.histN) && probe.histN[i+1] == probe.histN[i]+1 {
			d := (probe.histSum[i+1] - probe.histSum[i]) * 1e3
			decSum += d
			decMax = math.Max(decMax, d)
			decN++
		}
	}
	res.DecideMsMean = ms(decideSum) / float64(o.Intervals)
	if decN > 0 {
		res.DecisionMsMean = decSum / float64(decN)
		res.DecisionMsMax = decMax
	}
}

// WriteJSON writes the result as one JSON object.
func (r *AgentResult) WriteJSON(w io.Writer) error { return json.NewEncoder(w).Encode(r) }

// WriteText writes the result as a table and the verdict.
func (r *AgentResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, f string, v ...any) { fmt.Fprintf(tw, "%s\t"+f+"\n", append([]any{k}, v...)...) }
	row("fabric", "%d switches (%d-%d ports each), %d ports, %d hosts", r.Switches, r.PortsPerSwitch[0], r.PortsPerSwitch[1], r.Ports, r.Hosts)
	row("queues under control", "%d (%d lossless per port); decided on per interval: mean %.0f, fewest %d",
		r.Queues, r.QueuesPerPort, r.QueuesObsMean, r.QueuesObsMin)
	row("agent", "%s, policy %s, telemetry %s, interval %v", r.Mode, r.Policy, r.Encoding, time.Duration(r.IntervalS*float64(time.Second)))
	row("measured", "%d control intervals in %.2f s wall (%.2f per interval); simulator advanced %.1f µs (timescale %g), behind pace %.1f µs",
		r.Intervals, r.WallS, r.TicksPerInterval, r.SimAdvancedUs, r.Timescale, r.SimLagUs)
	row("agent CPU per interval", "%.1f ms (%.3f cores)", r.AgentCPUPerIntervalMs, r.AgentCores)
	row("telemetry taken in", "%d queue samples (%.2f per queue per interval)", r.QueueSamples, r.SamplesPerQueueInterval)
	row("agent CPU per interval per 1,000 queues", "%.2f ms (process CPU per 1,000 queue samples)", r.AgentCPUPer1000QMs)
	row("switch side CPU per interval (child)", "%.1f ms (simulator + gNMI server, not the agent's)", r.SwitchCPUPerIntervalMs)
	row("Go heap live", "%.1f MB (%.1f MB before the agent); %.0f KB per 1,000 queues", float64(r.HeapLiveBytes)/1e6,
		float64(r.HeapBaseBytes)/1e6, r.HeapPer1000QB/1e3)
	row("decision latency", "mean %.1f ms, max %.1f ms (policy alone: mean %.1f ms)", r.DecisionMsMean, r.DecisionMsMax, r.DecideMsMean)
	if r.Mode == string(config.ModeClosedLoop) {
		row("Sets", "%d (%d failed), %.1f queues each; change budget %d per interval; %d queues applied and read back",
			r.Sets, r.SetErrors, r.QueuesPerSet, r.ChangeBudget, r.QueuesApplied)
		row("Set latency", "p50 %.2f ms, p99 %.2f ms, max %.2f ms", r.SetP50Ms, r.SetP99Ms, r.SetMaxMs)
		row("read-back Get latency", "p50 %.2f ms, p99 %.2f ms", r.ReadP50Ms, r.ReadP99Ms)
	} else {
		row("recommendations stored", "%d", r.Recommendations)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, r.Verdict)
	return err
}
