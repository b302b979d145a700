// Package eval runs policies on simulated scenarios over several seeds and compares them.
// Call RunAll with scenarios and policy specs; its Result writes text, JSON, plots or an HTML report.
//
// RunAll runs every (scenario, policy, seed) in parallel and aggregates
// the runs: FCT slowdown per flow-size bucket, small-flow tail, large-flow
// goodput, utilisation, PFC pause time, drops and ECN marking, as mean ±
// 95% confidence interval over seeds (Student's t). It also finds
// static:best (Oracle), the fixed setting that was best in hindsight for
// each scenario by PickOracle's documented objective, and Compare sets a
// policy against the best vendor preset and against static:best.
// schedule:best@OFFSET,... (ScheduleBestPrefix) is the same yardstick for
// traffic that changes at known times: the timed plan of those candidates,
// one per phase, that a coordinate-descent search rates best (by
// static:best's objective, or by frontier ratio with ",by=frontier").
//
// A policy drives the simulator only through gym.Env: it reads
// observations (switch counters) every control interval and returns
// settings; ground truth is read afterwards, for scoring. Results are a
// function of the scenarios, specs, seeds and options, whatever the
// number of workers.
package eval
