package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/cmd/ecntune/internal/loop"
	"github.com/ecntune/ecntune/eval"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv/scenario"
	"github.com/ecntune/ecntune/train"
)

// runTwinTrain is train --twin: fine-tune, judge against the twin's
// frontier, store, and promote when the rule says so.
func runTwinTrain(cmd *cobra.Command, o trainOpts) error {
	tr, err := o.twinSetup(cmd)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	tw := tr.ft.Twin
	warnAll(stderr, tw.Name, scenario.Warnings(tw.Config))
	limit := fmt.Sprintf("%d episodes", o.episodes)
	if o.budget > 0 {
		limit = o.budget.String()
	}
	fmt.Fprintf(stderr, "fine-tuning %s on twin %s (%s) for %s, then the frontier evaluation on its seeds %s (seeds %s held out too, for a fixed setting chosen there)\n",
		tr.ft.From, tw.Name, tw.Path, limit, tr.evalSeeds(), tr.fixedSeeds())
	if n := tr.approveNote(); n != "" {
		fmt.Fprintln(stderr, "note: "+n)
	}
	s, err := startTrainSession(cmd, o)
	if err != nil {
		return err
	}
	defer s.end()
	if err := s.run(tr.cfg); err != nil {
		return err
	}
	prov := o.twinProvenance(tr)
	cand, err := s.res.Model(prov)
	if err != nil {
		return err
	}
	warnNotUpdated(stderr, cand, s.res.Episodes) // judged and stored all the same, but not as something it is not
	ev, err := evaluateTwin(s, tr, cand)
	if err != nil {
		return err
	}
	if ev.verdict.Promote { // the record says it, before the promotion
		if ev.keptPromoted, err = keptPromoted(o.db, o.name, tr.start, o.twinReplace); err != nil {
			return err
		}
	}
	prov.Eval = map[string]any{"twin_frontier": ev.record(tr)}
	m, err := s.res.Model(prov)
	if err != nil {
		return err
	}
	stored, err := s.store(m)
	if err != nil {
		return err
	}
	if ev.verdict.Promote && ev.keptPromoted == "" {
		// a failed promotion still reports the stored model and its
		// evaluation, and says how to promote it by hand
		if p, kept, retired, err := promoteModel(o.db, stored.Ref(), tr.start, o.twinReplace); err != nil {
			ev.promoteErr = err
		} else if kept != "" {
			ev.keptPromoted = kept
		} else {
			stored, ev.retired = p, retired
		}
	}
	return o.twinReport(cmd, s, tr, ev, stored)
}

// twinProvenance is what a fine-tuned model's record says beyond its run:
// the twin's file, name and sha256, the starting model (Parent, for a
// registry model) and the decision intervals it inherits from it.
func (o trainOpts) twinProvenance(tr twinRun) train.Provenance {
	tw := tr.ft.Twin
	p := train.Provenance{Name: o.name, Command: o.command(), Build: train.BuildRevision(), Created: time.Now().UTC(),
		Hyper: map[string]string{"twin_file": absPath(tw.Path), "twin_scenario": tw.Name, "twin_sha256": tw.SHA256}}
	if len(tw.Files) > 0 { // the CDF files the twin names run with it: its sha256 alone does not pin them
		sums := make([]string, len(tw.Files))
		for i, f := range tw.Files {
			sums[i] = f.Name + "=" + f.SHA256
		}
		p.Hyper["twin_files_sha256"] = strings.Join(sums, " ")
	}
	if tr.valid != "" {
		p.Hyper["validated_interval"] = tr.valid
	}
	if strings.HasPrefix(tr.ft.From, policy.ModelPrefix) { // an embedded model is named by --from in the command
		p.Parent = tr.ft.Model.Ref()
	}
	return p
}

// twinEval is the frontier evaluation of a fine-tuned model and the model
// it started from on the twin, and the promotion rule's verdict.
type twinEval struct {
	res                 *eval.Result
	startSpec, tuneSpec string
	start, tuned        eval.Comparison
	paired              eval.Metric // log of tuned/start small-flow p99, seed by seed
	// With --agent: both models as the agent runs them (the loops'
	// specs, comparisons and paired ratio), which the rule judges.
	startLoopSpec, tuneLoopSpec string
	startLoop, tunedLoop        eval.Comparison
	loopPaired                  eval.Metric
	// With --rival: the judged two on the rival twins, and their
	// figures there.
	rivalRes  *eval.Result
	rivals    []train.RivalFigures
	rivalWall time.Duration
	// collectives are the judged fine-tuned model's collective
	// iterations against the judged starting model's on the twin (zero
	// when it runs none).
	collectives train.CollectiveFigures
	verdict     train.Verdict
	// promoteErr is why the registry did not promote a model the rule
	// passed (verdict.Promote).
	promoteErr error
	// keptPromoted is the promoted version of the model's name that a
	// model the rule passed was not promoted over (it was not judged
	// against it); retired the one it was promoted over.
	keptPromoted, retired string
	// scenarioFlags are eval's --scenario flags of the twin and its
	// rivals (for the commands printed).
	scenarioFlags string
	// fixed is the fixed setting the judged starting model is behind on
	// the twin (the frontier at its goodput), judged as the fine-tuned
	// model is; nil when the starting model is not behind.
	fixed       *fixedCandidate
	interrupted bool
	wall        time.Duration
}

// fixedCandidate is the twin's own answer where the starting model is
// behind its frontier: the fixed setting it is judged against, run as
// the judged two run (behind the guardrails with --agent), on the same
// seeds, and judged by the same rule, rivals included. It is what an
// operator would run instead when no learned model is promoted: never
// behind the frontier is what the twin can promise of a fixed setting.
type fixedCandidate struct {
	spec   string // static:NAME or fixed:KMIN/KMAX/PMAX
	judged string // spec, or its loop with --agent
	// res is its evaluation on tr.fixedSeeds, with the judged starting
	// model's (startCmp) and the frontier there; cmp its comparison.
	res      *eval.Result
	cmp      eval.Comparison
	startCmp eval.Comparison
	paired   eval.Metric // log of its small-flow p99 over the starting model's, seed by seed
	rivals   []train.RivalFigures
	// verdict is the rule's; recommended says it is the one to run
	// (its verdict promotes it and a promoted fine-tuned model does not do
	// better on the twin).
	verdict     train.Verdict
	recommended bool
}

// evaluateTwin runs the starting and the fine-tuned model (cand, not yet
// stored), with --agent each also as that agent runs it (its policy
// resolved from --db, not from the file's registry), and the frontier's
// fixed settings on the twin's held-out seeds; then the two the rule
// judges on each rival twin, on the same seeds. A Ctrl-C stops waiting
// for it: the model is then stored unpromoted.
func evaluateTwin(s *trainSession, tr twinRun, cand models.Model) (twinEval, error) {
	o := s.o
	if s.intr != nil {
		s.intr.trainingOver("training is over: the evaluation on the twin stops, and the fine-tuned model is stored unpromoted")
	}
	ev := twinEval{startSpec: tr.start, tuneSpec: policy.ModelPrefix + o.name + " (fine-tuned)"}
	tuned, err := policy.LearnedFromModel(ev.tuneSpec, cand)
	if err != nil {
		return ev, fmt.Errorf("the fine-tuned model: %w", err)
	}
	reg := policyResolver(o.db)
	lookup := func(spec string) (policy.Policy, error) {
		if spec == ev.tuneSpec {
			return tuned, nil
		}
		return reg.Lookup(spec)
	}
	opt := eval.Options{Seeds: tr.seeds, Workers: o.workers, Frontier: true, Lookup: lookup, PmaxStep: tr.pmaxStep()}
	specs := []string{ev.startSpec, ev.tuneSpec}
	if tr.agent != nil {
		ev.startLoopSpec, ev.tuneLoopSpec = ev.loopSpecs(tr.agentFile)
		specs = append(specs, ev.startLoopSpec, ev.tuneLoopSpec)
		opt.Loops = ev.loops(tr, o.db, o.name, cand)
	}
	begin := time.Now()
	ev.res, ev.interrupted, err = runEvalInterruptibly(s, "twin eval", []eval.Scenario{{Named: tr.ft.Twin}}, specs, opt)
	ev.wall = time.Since(begin)
	if err != nil {
		return ev, fmt.Errorf("twin evaluation: %w", err)
	}
	if !ev.interrupted {
		if ev.fixed, err = ev.fixedCandidate(tr, opt.OracleCatalogue); err != nil {
			return ev, err
		}
	}
	if ev.fixed != nil {
		opt.Loops = ev.loops(tr, o.db, o.name, cand) // now with the fixed setting's loop
		if ev.interrupted, err = ev.evaluateFixed(s, tr, opt); err != nil {
			return ev, err
		}
	}
	if !ev.interrupted && len(tr.rivals) > 0 {
		scs := make([]eval.Scenario, len(tr.rivals))
		for i, rv := range tr.rivals {
			scs[i] = eval.Scenario{Named: rv}
		}
		opt.Frontier = false // the rival judges the two against each other
		begin = time.Now()
		a, b := ev.judged()
		specs := []string{a, b}
		if ev.fixed != nil {
			specs = append(specs, ev.fixed.judged)
		}
		ev.rivalRes, ev.interrupted, err = runEvalInterruptibly(s, "rival eval", scs, specs, opt)
		ev.rivalWall = time.Since(begin)
		if err != nil {
			return ev, fmt.Errorf("rival twins' evaluation: %w", err)
		}
	}
	if ev.interrupted {
		where := "the twin"
		switch {
		case ev.fixed != nil && ev.fixed.res == nil:
			where = "the twin (the fixed setting " + ev.fixed.spec + ")"
		case ev.res != nil:
			where = "the rival twins"
		}
		ev.verdict = train.Verdict{Reason: "its evaluation on " + where + " was interrupted"}
		return ev, nil
	}
	ev.judge()
	return ev, nil
}

// fixedCandidate is the fixed setting the judged starting model is
// behind on the twin (nil when it is not behind), named as the judged two
// are (its loop with --agent): the frontier is a line between settings,
// and where the starting model is behind it, the setting run in its place
// is one that does better: the lowest small-flow p99 among those that
// keep 98% of its large-flow goodput (the frontier as a step), if that is
// lower than its own (else none: no single setting run beats it).
func (ev *twinEval) fixedCandidate(tr twinRun, grid [][3]int) (*fixedCandidate, error) {
	start, _ := ev.judged()
	c := ev.res.Compare(start)
	if len(c) == 0 || c[0].Frontier == "" || frontierFigures(c[0]).NotBehind() {
		return nil, nil
	}
	step := *ev.res
	step.FrontierShape = eval.FrontierStep
	c = step.Compare(start)
	if len(c) == 0 || c[0].Frontier == "" || !(train.Ratio2(c[0].FrontierRatio) > 1) {
		return nil, nil
	}
	spec, ok := eval.FixedSpec(c[0].Frontier, grid)
	if !ok {
		return nil, fmt.Errorf("twin evaluation: the frontier setting %q is not one the evaluation can run", c[0].Frontier)
	}
	f := &fixedCandidate{spec: spec, judged: spec}
	if tr.agent != nil {
		f.judged = loopSpec(tr.agentFile, spec)
	}
	return f, nil
}

// evaluateFixed judges the fixed candidate on seeds it was not chosen on
// (tr.fixedSeeds): it, the judged starting model (as the judged two ran:
// opt's loops include its own) and the frontier run there. Chosen as the
// best of the frontier's settings on the evaluation's seeds, its ratio
// there is 1.00 by construction and its lead the luck of the draw.
func (ev *twinEval) evaluateFixed(s *trainSession, tr twinRun, opt eval.Options) (interrupted bool, err error) {
	f := ev.fixed
	tw := tr.ft.Twin
	tw.Config.Seed = tr.fixedSeeds().First
	start, _ := ev.judged()
	f.res, interrupted, err = runEvalInterruptibly(s, "fixed setting eval", []eval.Scenario{{Named: tw}}, []string{start, f.judged}, opt)
	if err != nil {
		return false, fmt.Errorf("twin evaluation of the fixed setting %s: %w", f.spec, err)
	}
	if !interrupted {
		if c := f.res.Compare(f.judged); len(c) > 0 {
			f.cmp = c[0]
		}
		if c := f.res.Compare(start); len(c) > 0 {
			f.startCmp = c[0]
		}
	}
	return interrupted, nil
}

// loops are eval's loop runners for the loops judged on the twin and its
// rivals (nil without --agent): the agent configuration running the
// starting model, the fine-tuned one (cand, model:name, not yet stored)
// and the fixed candidate when there is one.
func (ev *twinEval) loops(tr twinRun, db, name string, cand models.Model) map[string]eval.LoopRunner {
	if tr.agent == nil {
		return nil
	}
	cfgs := map[string]*config.Config{
		ev.startLoopSpec: closedLoopWith(tr.agent, tr.start),
		ev.tuneLoopSpec:  closedLoopWith(tr.agent, policy.ModelPrefix+name),
	}
	if ev.fixed != nil {
		cfgs[ev.fixed.judged] = closedLoopWith(tr.agent, ev.fixed.spec)
	}
	return map[string]eval.LoopRunner{loop.Prefix: loop.ConfigRunner(cfgs, candidateResolver(db, name, cand), false)}
}

// runEvalInterruptibly runs an evaluation with a progress bar named what
// until it ends or a Ctrl-C (interrupted: it goes on unreported, its
// result dropped).
func runEvalInterruptibly(s *trainSession, what string, scs []eval.Scenario, specs []string, opt eval.Options) (*eval.Result, bool, error) {
	prog := newLazyProgress(s.stderr, what, "simulations")
	var mu sync.Mutex // the evaluation may go on after a Ctrl-C: it reports no more then
	stopped := false
	finish := func(interrupted bool) {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			stopped = true
			if interrupted {
				prog.stop() // not "done"
			} else {
				prog.finish()
			}
		}
	}
	opt.Progress = func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			prog.set(int64(done), int64(total))
		}
	}
	type result struct {
		res *eval.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := eval.RunAll(scs, specs, opt)
		done <- result{res, err}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			finish(false)
			return r.res, false, r.err
		case <-tick.C:
			if s.intr.interrupted() {
				finish(true)
				return nil, true, nil
			}
		}
	}
}

// judged are the specs the rule judges, starting and fine-tuned: the
// loops with --agent, else the bare models.
func (ev twinEval) judged() (start, tuned string) {
	if ev.startLoopSpec != "" {
		return ev.startLoopSpec, ev.tuneLoopSpec
	}
	return ev.startSpec, ev.tuneSpec
}

// judgedComparisons are the comparisons the rule judges, of the starting
// and the fine-tuned model: the loops' with --agent, else the bare models'.
func (ev twinEval) judgedComparisons() (start, tuned eval.Comparison) {
	if ev.startLoopSpec != "" {
		return ev.startLoop, ev.tunedLoop
	}
	return ev.start, ev.tuned
}

// loopSpecs name the two loops of --agent FILE: eval specs under
// loop.Prefix, the file and the model each runs.
func (ev twinEval) loopSpecs(file string) (start, tuned string) {
	return loopSpec(file, ev.startSpec), loopSpec(file, ev.tuneSpec)
}

// loopSpec names the loop of agent configuration file running policy
// spec: an eval spec under loop.Prefix.
func loopSpec(file, spec string) string {
	return loop.Prefix + filepath.ToSlash(file) + " with " + spec
}

// closedLoopWith is the agent configuration cfg running spec in closed
// loop (the file's own policy and mode set aside), every change approved:
// in approve mode, as it runs once an operator approves its changes (no
// one approves in the simulation, and a loop waiting for approvals held
// the twin's setting: the starting, fine-tuned and fixed loops ran alike,
// and the rule compared three identical runs).
func closedLoopWith(cfg *config.Config, spec string) *config.Config {
	c := *cfg
	c.Policy, c.Mode, c.Approve = spec, config.ModeClosedLoop, false
	return &c
}

// approveNote says that --agent's approve mode was set aside in the
// loops on the twin ("" when the file has none).
func (tr twinRun) approveNote() string {
	if tr.agent == nil || !tr.agent.Approve {
		return ""
	}
	return tr.agentFile + " has approve: true: its loops on the twin ran with every change approved, as it runs once an operator approves them " +
		"(no one approves in the simulation: waiting, they would never change a setting)"
}

// candidateResolver resolves policies from the registry db, except that
// model:NAME is the candidate not yet stored.
func candidateResolver(db, name string, cand models.Model) policy.Resolver {
	reg := policyResolver(db)
	return policy.Resolver{Models: func(ref string) (models.Model, error) {
		if ref == name {
			return cand, nil
		}
		return reg.Models(ref)
	}}
}

// judge finds the models' comparisons and applies the promotion rule: to
// the loops with --agent (what would run), else to the bare models.
func (ev *twinEval) judge() {
	find := func(spec string) eval.Comparison {
		if c := ev.res.Compare(spec); len(c) > 0 {
			return c[0]
		}
		return eval.Comparison{}
	}
	sc := ev.res.Scenarios[0]
	ev.start, ev.tuned = find(ev.startSpec), find(ev.tuneSpec)
	ev.paired = pairedLogRatio(ev.res.RunsOf(sc, ev.tuneSpec), ev.res.RunsOf(sc, ev.startSpec), smallP99)
	if ev.startLoopSpec == "" {
		ev.verdict = train.PromotionRule(ev.figures(ev.start), ev.figures(ev.tuned), ev.vsStart())
		ev.judgeCollectives()
		ev.judgeRivals()
		ev.judgeFixed()
		ev.noteFewFlows()
		return
	}
	ev.startLoop, ev.tunedLoop = find(ev.startLoopSpec), find(ev.tuneLoopSpec)
	ev.loopPaired = pairedLogRatio(ev.res.RunsOf(sc, ev.tuneLoopSpec), ev.res.RunsOf(sc, ev.startLoopSpec), smallP99)
	ev.verdict = train.PromotionRule(ev.figures(ev.startLoop), ev.figures(ev.tunedLoop), pairedOf(ev.loopPaired))
	ev.verdict.Reason = "behind the agent's guardrails, " + ev.verdict.Reason
	ev.judgeCollectives()
	ev.judgeRivals()
	ev.judgeFixed()
	ev.noteFewFlows()
}

// noteFewFlows says in the verdict's reason which of the judged two had
// a small-flow p99 on the twin that some seed took from fewer than
// eval.MinP99Flows flows (eval marks it eval.FewFlowsMark): the slowdown
// of one of the slowest few flows, which no setting may move, so a tie
// or a gain in it is no evidence either way.
func (ev *twinEval) noteFewFlows() {
	var few []string
	a, b := ev.judged()
	for _, spec := range []string{a, b} {
		if ag := ev.res.AggregateOf(ev.res.Scenarios[0], spec); ag != nil && ag.Metrics["small_p99"].FewFlows {
			few = append(few, spec)
		}
	}
	if len(few) == 0 {
		return
	}
	ev.verdict.Reason += fmt.Sprintf("; the small-flow p99 of %s some seed took from fewer than %d finished flows (%s): the slowdown of one of its slowest few flows, "+
		"not a 99th percentile, and no evidence either way (a longer duration: in the twin gives it more flows)", strings.Join(few, " and "), eval.MinP99Flows, eval.FewFlowsMark)
}

// p99Text is a small-flow p99 as printed, marked eval.FewFlowsMark where
// some seed took it from fewer than eval.MinP99Flows flows.
func p99Text(m eval.Metric) string {
	if m.FewFlows {
		return fmt.Sprintf("%.2f%s", m.Mean, eval.FewFlowsMark)
	}
	return fmt.Sprintf("%.2f", m.Mean)
}

// judgeCollectives applies the twin's collective iterations of the
// judged two to the verdict.
func (ev *twinEval) judgeCollectives() {
	a, b := ev.judged()
	sc := ev.res.Scenarios[0]
	ev.collectives = collectiveFigures(ev.res.RunsOf(sc, b), ev.res.RunsOf(sc, a))
	ev.verdict = train.JudgeCollectives(ev.verdict, ev.collectives)
}

// collectiveFigures are cand's collective iterations against start's,
// seed by seed (zero when the runs have no collective).
func collectiveFigures(cand, start []eval.Run) train.CollectiveFigures {
	if len(cand) == 0 || len(cand[0].Collectives) == 0 {
		return train.CollectiveFigures{}
	}
	k := eval.CompareCollectives(cand, start)
	d := k.Difference
	return train.CollectiveFigures{Tuned: k.Iterations, Start: k.OtherIterations, Mean: d.Mean, Lo: d.Lo, Hi: d.Hi, N: d.N,
		Goodput: pairedOf(pairedLogRatio(cand, start, eval.CollectiveGoodput)),
		Fewer:   k.Fewer, More: k.More, Starved: k.Starved, Fed: k.Fed, StarvedBehind: k.StarvedBehind()}
}

// judgeRivals finds the judged two's figures on each rival twin and
// applies them to the verdict.
func (ev *twinEval) judgeRivals() {
	if ev.rivalRes == nil {
		return
	}
	a, b := ev.judged()
	ev.rivals = rivalFigures(ev.rivalRes, a, b)
	ev.verdict = train.JudgeRivals(ev.verdict, ev.rivals)
}

// rivalFigures are cand's figures over start's on each rival twin of res.
func rivalFigures(res *eval.Result, startSpec, candSpec string) []train.RivalFigures {
	var out []train.RivalFigures
	for _, sc := range res.Scenarios {
		start, cand := res.RunsOf(sc, startSpec), res.RunsOf(sc, candSpec)
		f := train.RivalFigures{Name: sc, SmallP99: pairedOf(pairedLogRatio(cand, start, smallP99)),
			Goodput: pairedOf(pairedLogRatio(cand, start, largeGoodput)), Collectives: collectiveFigures(cand, start)}
		for _, r := range cand {
			f.Drops += r.Drops
		}
		for _, r := range start {
			f.StartDrops += r.Drops
		}
		out = append(out, f)
	}
	return out
}

// judgeFixed applies the rule to the fixed candidate (as to the
// fine-tuned model: against the judged starting model, on the twin and
// its rivals, with train.FixedSettingRule's clause more: its lower
// small-flow p99 beyond the seeds' noise), and recommends it when the
// rule promotes it, unless a fine-tuned model the rule promotes does
// better on the twin (a lower frontier ratio as printed); that model
// then stays a candidate. A tie goes to the fixed setting: it does not
// churn, and a model no better on the twin has shown nothing its
// adapting gains there (the 128-host 25G leaf-spine,
// docs/model/twin-pipeline-eval.txt: both 1.02 on the twin; on the truth
// the fixed setting 1.01, the model 1.05).
func (ev *twinEval) judgeFixed() {
	f := ev.fixed
	if f == nil || f.res == nil {
		return
	}
	startSpec, _ := ev.judged()
	_, tuned := ev.judgedComparisons()
	sc := f.res.Scenarios[0]
	f.paired = pairedLogRatio(f.res.RunsOf(sc, f.judged), f.res.RunsOf(sc, startSpec), smallP99)
	f.verdict = train.FixedSettingRule(withChurn(frontierFigures(f.startCmp), f.res, f.startCmp), withChurn(frontierFigures(f.cmp), f.res, f.cmp),
		pairedOf(f.paired))
	f.verdict = train.JudgeCollectives(f.verdict, collectiveFigures(f.res.RunsOf(sc, f.judged), f.res.RunsOf(sc, startSpec)))
	if ev.rivalRes != nil {
		f.rivals = rivalFigures(ev.rivalRes, startSpec, f.judged)
		f.verdict = train.JudgeRivals(f.verdict, f.rivals)
	}
	how := "bare"
	if ev.startLoopSpec != "" {
		how = "behind the agent's guardrails"
	}
	f.verdict.Reason = "the fixed setting " + f.spec + " (the best on the twin that keeps 98% of the starting model's goodput), " + how + ", " + f.verdict.Reason
	if !f.verdict.Promote {
		return
	}
	fr, tr := train.Ratio2(f.cmp.FrontierRatio), train.Ratio2(tuned.FrontierRatio)
	if ev.verdict.Promote && tr < fr {
		return // the promoted model does better on the twin
	}
	f.recommended = true
	if ev.verdict.Promote {
		how := "does better there"
		if fr == tr {
			how = "does as well there, without changing a setting"
		}
		ev.verdict = train.Verdict{Reason: fmt.Sprintf("%s; but the fixed setting %s %s (frontier ratio %.2f against %.2f): it is recommended instead",
			ev.verdict.Reason, f.spec, how, f.cmp.FrontierRatio, tuned.FrontierRatio)}
	}
}

// vsStart is the seed-by-seed comparison of the two models' small-flow
// p99 as the promotion rule reads it (of the bare models).
func (ev *twinEval) vsStart() train.Paired { return pairedOf(ev.paired) }

// pairedOf is a paired log ratio as the promotion rule reads it.
func pairedOf(p eval.Metric) train.Paired {
	if p.N < 1 {
		return train.Paired{}
	}
	if p.N < 2 { // one pair: its ratio, with no interval
		r := math.Exp(p.Mean)
		return train.Paired{Mean: r, Lo: r, Hi: r, N: 1}
	}
	return train.Paired{Mean: math.Exp(p.Mean), Lo: math.Exp(p.Mean - p.CI95), Hi: math.Exp(p.Mean + p.CI95), N: p.N}
}

// frontierFigures are a comparison's figures for the promotion rule.
func frontierFigures(c eval.Comparison) train.FrontierFigures {
	return train.FrontierFigures{Ratio: c.FrontierRatio, Beyond: c.Beyond(), NoSmallFlows: c.NoSmallFlowFigure, Drops: c.Drops}
}

// figures are a comparison of the twin's evaluation as the promotion
// rule reads it: against the frontier, with its churn.
func (ev *twinEval) figures(c eval.Comparison) train.FrontierFigures {
	return withChurn(frontierFigures(c), ev.res, c)
}

// withChurn is f with how often c's policy changed the settings in res.
func withChurn(f train.FrontierFigures, res *eval.Result, c eval.Comparison) train.FrontierFigures {
	f.Changes, f.Flaps = churn(res.RunsOf(c.Scenario, c.Policy))
	return f
}

// pairedLogRatio is the mean log of a's figure over b's, seed by seed,
// with its 95% CI.
func pairedLogRatio(a, b []eval.Run, fig func(eval.Run) float64) eval.Metric {
	return eval.MeanCI(eval.PairedLogs(a, b, fig))
}

func smallP99(r eval.Run) float64     { return r.SmallP99 }
func largeGoodput(r eval.Run) float64 { return r.LargeGoodputGbps }

// record is the evaluation as the model's record keeps it (eval's
// "twin_frontier").
func (ev twinEval) record(tr twinRun) map[string]any {
	out := map[string]any{"scenario": tr.ft.Twin.Name, "file": tr.ft.Twin.Path, "sha256": tr.ft.Twin.SHA256,
		"seeds": tr.evalSeeds().String(), "promoted": ev.verdict.Promote, "reason": ev.verdict.Reason}
	if ev.keptPromoted != "" {
		out["not_promoted_over"] = ev.keptPromoted // the rule passed it; a version it was not judged against stays promoted
	}
	if ev.interrupted {
		out["interrupted"] = true
		return out
	}
	out["start"] = comparisonRecord(ev.start, ev.res)
	out["fine_tuned"] = comparisonRecord(ev.tuned, ev.res)
	if v := ev.vsStart(); v.N >= 2 {
		out["fine_tuned_over_start_small_p99"] = pairedJSON(v)
	}
	if ev.startLoopSpec != "" {
		agent := map[string]any{"file": filepath.ToSlash(tr.agentFile), "sha256": tr.agentSHA}
		if tr.approveNote() != "" {
			agent["approve"] = "set aside: every change approved"
		}
		out["agent"] = agent
		out["start_loop"] = comparisonRecord(ev.startLoop, ev.res)
		out["fine_tuned_loop"] = comparisonRecord(ev.tunedLoop, ev.res)
		if v := pairedOf(ev.loopPaired); v.N >= 2 {
			out["fine_tuned_loop_over_start_loop_small_p99"] = pairedJSON(v)
		}
	}
	if c := ev.collectives; c.N >= 2 {
		out["collective_iterations"] = collectiveJSON(c)
	}
	if len(ev.rivals) > 0 {
		var rs []map[string]any
		for i, f := range ev.rivals {
			r := rivalJSON(f, "fine_tuned_")
			if i < len(tr.rivals) {
				r["file"], r["sha256"] = tr.rivals[i].Path, tr.rivals[i].SHA256
			}
			rs = append(rs, r)
		}
		out["rivals"] = rs
	}
	if f := ev.fixed; f != nil && f.res != nil {
		fo := map[string]any{"policy": f.spec, "judged": comparisonRecord(f.cmp, f.res),
			"start_on_its_seeds": comparisonRecord(f.startCmp, f.res), "seeds": tr.fixedSeeds().String(),
			"recommended": f.recommended, "reason": f.verdict.Reason}
		if v := pairedOf(f.paired); v.N >= 2 {
			fo["over_start_small_p99"] = pairedJSON(v)
		}
		var rs []map[string]any
		for _, r := range f.rivals {
			rs = append(rs, rivalJSON(r, ""))
		}
		if rs != nil {
			fo["rivals"] = rs
		}
		out["fixed_setting"] = fo
	}
	return out
}

// rivalJSON keeps a candidate's figures on one rival twin, its ratios
// over the starting model's under keys starting with who.
func rivalJSON(f train.RivalFigures, who string) map[string]any {
	out := map[string]any{"scenario": f.Name, who + "over_start_small_p99": pairedJSON(f.SmallP99),
		who + "over_start_large_goodput": pairedJSON(f.Goodput), "drops": f.Drops, "start_drops": f.StartDrops}
	if c := f.Collectives; c.N >= 2 {
		out["collective_iterations"] = collectiveJSON(c)
	}
	return out
}

// collectiveJSON keeps a candidate's collective iterations against the
// starting model's.
func collectiveJSON(c train.CollectiveFigures) map[string]any {
	return map[string]any{"candidate_per_run": c.Tuned, "start_per_run": c.Start,
		"difference":         map[string]any{"mean": c.Mean, "ci95": []float64{c.Lo, c.Hi}, "n": c.N},
		"goodput_over_start": pairedJSON(c.Goodput)}
}

// pairedJSON keeps a seed-by-seed ratio: its geometric mean, 95% CI
// and number of pairs.
func pairedJSON(p train.Paired) map[string]any {
	return map[string]any{"mean": p.Mean, "ci95": []float64{p.Lo, p.Hi}, "n": p.N}
}

// comparisonRecord keeps one policy's figures against the frontier.
func comparisonRecord(c eval.Comparison, res *eval.Result) map[string]any {
	out := map[string]any{"policy": c.Policy, "frontier_ratio": c.FrontierRatio, "frontier": c.Frontier,
		"frontier_ratio_ci95": []float64{c.PairedVsFrontier.Lo, c.PairedVsFrontier.Hi}, "drops": c.Drops, "frontier_shape": c.FrontierShape}
	if c.FrontierBelow != "" {
		out["frontier_below"], out["frontier_below_share"] = c.FrontierBelow, c.FrontierBelowShare
	}
	if a := res.AggregateOf(c.Scenario, c.Policy); a != nil {
		out["small_p99"] = a.Metrics["small_p99"].Mean
		out["large_goodput_gbps"] = a.Metrics["large_goodput_gbps"].Mean
	}
	changes, flaps := churn(res.RunsOf(c.Scenario, c.Policy))
	out["changes_per_queue_per_100_intervals_after_settle"], out["flaps_after_settle"] = changes, flaps
	return out
}

// churn is how often a policy changed the queues' settings on the twin,
// means over its runs: changes per queue per 100 intervals and flaps,
// both past the first eval.SettleIntervals. The frontier judges flow
// figures only; an operator deciding on a model wants this too.
func churn(runs []eval.Run) (changes, flaps float64) {
	n := 0
	for _, r := range runs {
		if r.Loop != nil {
			changes += r.Loop.ChangesPerQueuePer100After
			flaps += float64(r.Loop.FlapsAfter)
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return changes / float64(n), flaps / float64(n)
}

// promoteModel promotes ref in the registry db, unless another version
// of its name is promoted that the run did not judge it against (start,
// the starting model's spec, is not model:that version) and replace
// (--replace-promoted) is not given: that version is what
// model:NAME@promoted runs, and the rule compared ref with the starting
// model and the frontier alone, perhaps on less evidence. Then ref is
// left a candidate and kept names that version; retired names the
// version a promotion retired.
func promoteModel(db, ref, start string, replace bool) (m models.Model, kept, retired string, err error) {
	err = withRegistry(db, models.Options{Timeout: trainLockTimeout}, func(r *models.Registry) error {
		name, _, _ := strings.Cut(ref, "@")
		if retired, kept, err = promotedOf(r, name, start, replace); err != nil || kept != "" {
			return err
		}
		m, err = r.Promote(ref, time.Now())
		return err
	})
	return m, kept, retired, err
}

// keptPromoted is the promoted version of name in db that a model of the
// name the rule passed is not promoted over (promoteModel; "" for none).
func keptPromoted(db, name, start string, replace bool) (kept string, err error) {
	err = withRegistry(db, models.Options{Timeout: trainLockTimeout}, func(r *models.Registry) error {
		_, kept, err = promotedOf(r, name, start, replace)
		return err
	})
	return kept, err
}

// promotedOf is the promoted version of name in r, as kept (a model not
// judged against it, start not being model:it, is not promoted over it
// without replace) or as cur (the one a promotion retires).
func promotedOf(r *models.Registry, name, start string, replace bool) (cur, kept string, err error) {
	m, err := r.Info(name + "@promoted")
	if errors.Is(err, models.ErrNotFound) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	if !replace && start != policy.ModelPrefix+m.Ref() {
		return "", m.Ref(), nil
	}
	return m.Ref(), "", nil
}

// twinReport writes the learning curve and the evaluation's summary
// (JSON, as eval --summary-out) beside it, and prints the run, the
// evaluation and the verdict.
func (o trainOpts) twinReport(cmd *cobra.Command, s *trainSession, tr twinRun, ev twinEval, stored models.Model) error {
	base, err := runFiles(s.stderr, o.curveDir(), o.db, stored, append(slices.Clone(curveFiles), "-twin-eval.json"))
	if err != nil {
		return err
	}
	if ev.res != nil {
		var b bytes.Buffer
		if err := ev.res.WriteSummaryJSON(&b); err != nil {
			return err
		}
		file := base + "-twin-eval.json"
		if err := writeNewFile(file, b.Bytes()); err != nil {
			return fmt.Errorf("twin evaluation summary: %w", err)
		}
		fmt.Fprintln(s.stderr, "wrote", file)
	}
	if base, err = writeCurve(base, stored, s.res.Curve); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if err := printTrainResult(w, stored, s.res, s.wall, base); err != nil {
		return err
	}
	scs := "--scenario " + tr.ft.Twin.Path
	for _, rv := range o.twinRivals {
		scs += " --scenario " + rv
	}
	ev.scenarioFlags = scs
	if ev.interrupted {
		// the judgement's own inputs: the twin and its rivals, the
		// start's seeds, and with --agent the loops the rule judged
		fmt.Fprintf(w, "not promoted: %s is stored as a candidate: %s. Judge it with\n  ecntune eval %s --policy %s --policy model:%s --frontier --seeds %d --db %s\n",
			stored.Ref(), ev.verdict.Reason, scs, ev.startSpec, stored.Ref(), tr.seeds, o.db)
		if tr.agentFile != "" {
			fmt.Fprintf(w, "(the rule judges them as %s runs them: add --policy agent:FILE for a copy of it with policy: %s, then policy: model:%s and registry: %s)\n",
				tr.agentFile, ev.startSpec, stored.Ref(), o.db)
		}
		fmt.Fprintf(w, "and promote it with ecntune models promote %s --db %s\n", stored.Ref(), o.db)
		return fmt.Errorf("the evaluation of %s on twin %s was interrupted; the model is stored unpromoted", stored.Ref(), tr.ft.Twin.Name)
	}
	printTwinEval(w, tr, ev)
	return printPromotion(w, stored, ev, o.db)
}

// printPromotion prints the verdict on the fine-tuned model stored as
// stored, and on the fixed setting the starting model is behind; it
// returns an error where the rule passed the model and the registry did
// not promote it.
func printPromotion(w io.Writer, stored models.Model, ev twinEval, db string) error {
	switch {
	case ev.promoteErr != nil:
		fmt.Fprintf(w, "not promoted: %s is stored as a candidate: it passed (%s), but the registry refused the promotion: %v; "+
			"promote it with ecntune models promote %s --db %s\n", stored.Ref(), ev.verdict.Reason, ev.promoteErr, stored.Ref(), db)
	case ev.keptPromoted != "":
		fmt.Fprintf(w, "not promoted: %s is stored as a candidate: it passed (%s), but %s is the promoted version of %s (what model:%s@promoted runs), "+
			"and it was not judged against it, only against the starting model and the frontier: compare the two with\n  ecntune eval %s --policy model:%s --policy model:%s --frontier --db %s\n"+
			"and promote it over %s with ecntune models promote %s --db %s (or train it from model:%s, or with --replace-promoted)\n",
			stored.Ref(), ev.verdict.Reason, ev.keptPromoted, stored.Name, stored.Name, cmp.Or(ev.scenarioFlags, "--scenario TWIN.yaml"), ev.keptPromoted, stored.Ref(), db,
			ev.keptPromoted, stored.Ref(), db, ev.keptPromoted)
	case ev.verdict.Promote && ev.retired != "":
		fmt.Fprintf(w, "promoted %s (%s, promoted before, is retired): %s\n", stored.Ref(), ev.retired, ev.verdict.Reason)
	case ev.verdict.Promote:
		fmt.Fprintf(w, "promoted %s: %s\n", stored.Ref(), ev.verdict.Reason)
	default:
		fmt.Fprintf(w, "not promoted: %s is stored as a candidate: %s\n", stored.Ref(), ev.verdict.Reason)
	}
	if f := ev.fixed; f != nil && f.res != nil {
		printFixedVerdict(w, f)
	}
	if ev.promoteErr != nil {
		return fmt.Errorf("stored %s, not promoted: %w", stored.Ref(), ev.promoteErr)
	}
	return nil
}

// printFixedVerdict prints the verdict on the fixed setting the starting
// model is behind: the policy to run when it is recommended.
func printFixedVerdict(w io.Writer, f *fixedCandidate) {
	if f.recommended {
		fmt.Fprintf(w, "recommended: run the fixed setting %s (the agent's policy: %q): %s\n", f.spec, f.spec, f.verdict.Reason)
	} else {
		fmt.Fprintf(w, "not recommended: %s\n", f.verdict.Reason)
	}
}

// printTwinEval prints both models' figures against the twin's frontier.
func printTwinEval(w io.Writer, tr twinRun, ev twinEval) {
	fmt.Fprintf(w, "frontier of fixed settings on twin %s, seeds %s (none trained on), %.0fs:\n", tr.ft.Twin.Name, tr.evalSeeds(), ev.wall.Seconds())
	if st := tr.pmaxStep(); st > 0 {
		fmt.Fprintln(w, "  "+eval.PmaxStepNote(st))
	}
	rows := []eval.Comparison{ev.start, ev.tuned}
	if ev.startLoopSpec != "" {
		rows = append(rows, ev.startLoop, ev.tunedLoop)
	}
	width := 0
	for _, c := range rows {
		width = max(width, len(c.Policy))
	}
	few := false
	for _, c := range rows {
		line := fmt.Sprintf("  %-*s  %s", width, c.Policy, frontierFigures(c))
		if c.FrontierRatio > 0 {
			line += fmt.Sprintf(" [%.2f, %.2f] against %s", c.PairedVsFrontier.Lo, c.PairedVsFrontier.Hi, c.FrontierName())
		}
		if a := ev.res.AggregateOf(c.Scenario, c.Policy); a != nil {
			line += fmt.Sprintf("; small-flow p99 %s, large-flow goodput %.1f Gb/s", p99Text(a.Metrics["small_p99"]), a.Metrics["large_goodput_gbps"].Mean)
			few = few || a.Metrics["small_p99"].FewFlows
		}
		changes, flaps := churn(ev.res.RunsOf(c.Scenario, c.Policy))
		line += fmt.Sprintf("; %.1f changes per queue per 100 intervals, %.1f flaps a run (past the first %d intervals)", changes, flaps, eval.SettleIntervals)
		fmt.Fprintln(w, line)
	}
	if ev.paired.N >= 2 {
		fmt.Fprintf(w, "  fine-tuned / %s small-flow p99, seed by seed: %.2f [%.2f, %.2f]\n", ev.startSpec,
			math.Exp(ev.paired.Mean), math.Exp(ev.paired.Mean-ev.paired.CI95), math.Exp(ev.paired.Mean+ev.paired.CI95))
	}
	if ev.startLoopSpec == "" {
		fmt.Fprintln(w, "  (the bare models, as the rule judged them; --agent FILE runs and judges them as that agent runs them, behind its guardrails)")
	}
	if n := tr.approveNote(); n != "" {
		fmt.Fprintf(w, "  (%s)\n", n)
	}
	if p := pairedOf(ev.loopPaired); p.N >= 2 {
		fmt.Fprintf(w, "  behind the agent's guardrails, fine-tuned / %s small-flow p99, seed by seed: %.2f [%.2f, %.2f]\n", ev.startSpec, p.Mean, p.Lo, p.Hi)
	}
	if c := ev.collectives; c.N >= 2 {
		fmt.Fprintf(w, "  as the rule judged them, the fine-tuned model's %s\n", c)
	}
	if f := ev.fixed; f != nil && f.res != nil {
		c := f.cmp
		fmt.Fprintf(w, "  %-*s  %s", width, c.Policy, frontierFigures(c))
		if a := f.res.AggregateOf(c.Scenario, c.Policy); a != nil {
			fmt.Fprintf(w, "; small-flow p99 %s, large-flow goodput %.1f Gb/s", p99Text(a.Metrics["small_p99"]), a.Metrics["large_goodput_gbps"].Mean)
			few = few || a.Metrics["small_p99"].FewFlows
		}
		fmt.Fprintf(w, " (the fixed setting the starting model is behind on seeds %s, judged on seeds %s, where the starting model is %s)\n",
			tr.evalSeeds(), tr.fixedSeeds(), frontierFigures(f.startCmp))
		if p := pairedOf(f.paired); p.N >= 2 {
			fmt.Fprintf(w, "  %s / the starting model small-flow p99, seed by seed: %.2f [%.2f, %.2f]\n", f.spec, p.Mean, p.Lo, p.Hi)
		}
	}
	if few {
		fmt.Fprintln(w, "  "+eval.FewFlowsNote)
	}
	if len(ev.rivals) > 0 {
		fmt.Fprintf(w, "rival twins, the same seeds, %.0fs:\n", ev.rivalWall.Seconds())
		for _, f := range ev.rivals {
			fmt.Fprintf(w, "  %s\n", f)
		}
		if ev.fixed != nil {
			for _, f := range ev.fixed.rivals {
				fmt.Fprintf(w, "  the fixed setting %s: %s\n", ev.fixed.spec, f)
			}
		}
	}
}

// absPath is path made absolute, slash-separated (path itself where the
// working folder is unknown): a record read elsewhere names the file.
func absPath(path string) string {
	if a, err := filepath.Abs(filepath.FromSlash(path)); err == nil {
		return filepath.ToSlash(a)
	}
	return path
}

// twinLine says in words what a model fine-tuned on a twin was fitted to
// and started from, and its verdict ("" for another model): models show
// prints it under the record.
func twinLine(m models.Model) string {
	h := m.Hyper
	if h["twin_sha256"] == "" {
		return ""
	}
	line := fmt.Sprintf("fine-tuned on twin %s (file %s, sha256 %s) from %s", h["twin_scenario"], h["twin_file"], h["twin_sha256"], h["init"])
	var ev struct {
		Twin struct {
			Promoted bool   `json:"promoted"`
			Reason   string `json:"reason"`
			Over     string `json:"not_promoted_over"`
		} `json:"twin_frontier"`
	}
	if json.Unmarshal(m.Eval, &ev) == nil && ev.Twin.Reason != "" {
		verdict := "not promoted at training"
		switch {
		case ev.Twin.Over != "":
			verdict = "passed at training, left a candidate (" + ev.Twin.Over + " was promoted, and it was not judged against it)"
		case ev.Twin.Promoted:
			verdict = "promoted at training"
		}
		line += fmt.Sprintf("; %s: %s", verdict, ev.Twin.Reason)
	}
	return line
}
