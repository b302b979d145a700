package eval

import (
	"errors"
	"fmt"
	"math"

	"github.com/ecntune/ecntune/policy"
)

// Yardstick is the frontier of fixed settings (every preset and the
// catalogue grid points static:best tries) on a set of scenarios and
// seeds, run once. Judge then sets any number of policies against it
// without running the fixed settings again: a training run choosing
// among snapshots of its own network by the judgement its model will
// meet (Options.Frontier, FrontierRatio), not by its reward.
type Yardstick struct {
	scs   []Scenario
	opt   Options
	fixed []Run // the fixed settings' runs, every scenario and seed
}

// yardstickPreset is the preset run as the policy of the yardstick's own
// evaluation (RunAll needs one; it is a frontier candidate anyway, so it
// runs once).
const yardstickPreset = "static:hpcc"

// NewYardstick runs the fixed settings on scs over opt.Seeds seeds
// (opt.Frontier is implied).
func NewYardstick(scs []Scenario, opt Options) (*Yardstick, error) {
	opt.Frontier = true
	res, err := RunAll(scs, []string{yardstickPreset}, opt)
	if err != nil {
		return nil, err
	}
	opt, err = opt.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Yardstick{scs: scs, opt: opt, fixed: res.allRuns()}, nil
}

// Judgement is a policy set against a Yardstick: its Comparison per
// scenario and their summary.
type Judgement struct {
	Comparisons []Comparison
	// Score is the geometric mean of the frontier ratios over the
	// scenarios (a scenario where no fixed setting keeps
	// FrontierGoodput of the policy's goodput counts 1); +Inf when the
	// policy dropped a packet anywhere.
	Score float64
	// Worst is the highest frontier ratio and its scenario.
	Worst         float64
	WorstScenario string
	Drops         uint64
}

// Judge runs pol (named name, which must not be a fixed setting's name)
// on the yardstick's scenarios and seeds and compares it with the
// frontier of fixed settings. Every run shares pol, so it must keep no
// state between decisions (a learned model, a fixed setting): one that
// does (adaptive) would carry one run's state into the next, and runs
// side by side would mix theirs (its judgement differed from run to run).
func (y *Yardstick) Judge(pol policy.Policy, name string) (Judgement, error) {
	if pol == nil {
		return Judgement{}, errors.New("eval: yardstick: no policy")
	}
	if isFixed(name) || name == Oracle {
		return Judgement{}, fmt.Errorf("eval: yardstick: policy name %q is a fixed setting's", name)
	}
	if !stateless(pol) {
		return Judgement{}, fmt.Errorf("eval: yardstick: policy %s keeps state between decisions; only a stateless one (a learned model, a fixed setting) can be judged", name)
	}
	p := &plan{scs: y.scs, specs: []string{name}, opt: y.opt, shared: map[string]policy.Policy{name: pol}}
	p.opt.Progress = nil
	for si := range y.scs {
		p.jobs = append(p.jobs, p.seeds(job{sc: si, spec: name})...)
	}
	p.nMain = len(p.jobs)
	runs, err := p.run()
	if err != nil {
		return Judgement{}, err
	}
	r := &Result{Policies: []string{name}, Runs: runs, OracleRuns: y.fixed, FrontierShape: y.opt.FrontierShape}
	for _, sc := range y.scs {
		r.Scenarios = append(r.Scenarios, sc.Name)
	}
	j := Judgement{Comparisons: r.Compare(name)}
	if len(j.Comparisons) != len(y.scs) {
		return j, fmt.Errorf("eval: yardstick: %d of %d scenarios compared", len(j.Comparisons), len(y.scs))
	}
	logSum := 0.0
	for _, c := range j.Comparisons {
		fr := c.FrontierRatio
		if fr <= 0 {
			fr = 1
		}
		logSum += math.Log(fr)
		if fr > j.Worst {
			j.Worst, j.WorstScenario = fr, c.Scenario
		}
		j.Drops += c.Drops
	}
	j.Score = math.Exp(logSum / float64(len(j.Comparisons)))
	if j.Drops > 0 {
		j.Score = math.Inf(1)
	}
	return j, nil
}
