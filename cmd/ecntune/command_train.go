package main

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/policy/nn"
	"github.com/ecntune/ecntune/simenv/scenario"
	"github.com/ecntune/ecntune/train"
	"github.com/ecntune/ecntune/train/rl"
)

// trainOpts are the flags of "ecntune train".
type trainOpts struct {
	scenarios       []string
	algo            string
	budget          time.Duration
	episodes        int
	workers         int
	db, name, out   string
	seed            uint64
	noRandomise     bool
	randomise       string
	checkpointEvery int
	reward          string
	gamma           float64
	lr              float64
	hidden          []int
	spec            string
	prefScale       float64
	headroomFor     string
	criticTruth     bool
	selectOn        []string
	selectSeeds     int
	selectEvery     int
	// validInterval is --validated-interval (MIN-MAX, as
	// policy.ParseValidInterval reads it; "" when not given), fromValid
	// the validated_interval of the model --from starts from, which the
	// run's model inherits unless given
	validInterval, fromValid string
	// train --twin
	twin, from string
	twinSeeds  int
	twinAgent  string   // --agent: the agent configuration the model is judged behind
	twinRivals []string // --rival: rival twins the model is also judged on
	// --replace-promoted: promote over a version of --name promoted
	// before that the run did not judge against
	twinReplace bool
	algoSet     bool // --algo was given
	// episodesSet, budgetSet: --episodes, --budget were given (an
	// explicit 0 is an error, not the default)
	episodesSet, budgetSet bool
	// gammaSet: --gamma was given (0 is a discount of 0, not the
	// default); lrSet: --lr was (0 is refused, not the default)
	gammaSet, lrSet bool
}

// command is the canonical command line of a run (recorded in the
// model's provenance so that it can be re-run).
func (o trainOpts) command() string {
	if o.twin != "" {
		return o.twinCommand()
	}
	var b strings.Builder
	b.WriteString("ecntune train")
	for _, s := range o.scenarios {
		b.WriteString(" --scenario " + filepath.ToSlash(s))
	}
	b.WriteString(" --algo " + o.algo)
	o.writeRunFlags(&b, "")
	if len(o.hidden) > 0 {
		hid := make([]string, len(o.hidden))
		for i, h := range o.hidden {
			hid[i] = strconv.Itoa(h)
		}
		b.WriteString(" --hidden " + strings.Join(hid, ","))
	}
	if o.spec != "" {
		b.WriteString(" --spec " + o.spec)
	}
	if o.from != "" {
		b.WriteString(" --from " + o.from)
	}
	if o.prefScale != 0 {
		b.WriteString(" --preference-scale " + strconv.FormatFloat(o.prefScale, 'g', -1, 64))
	}
	if o.headroomFor != "" {
		b.WriteString(" --headroom-for " + o.headroomFor)
	}
	if o.criticTruth {
		b.WriteString(" --critic-truth")
	}
	o.writeSelectFlags(&b)
	if o.checkpointEvery != 0 {
		// Not part of what is learned, but of the resume fingerprint: the
		// recorded command must resume its own killed run.
		b.WriteString(" --checkpoint-every " + strconv.Itoa(o.checkpointEvery))
	}
	return b.String()
}

// writeRunFlags writes the flags a training run and a fine-tuning run
// share, in the recorded command's order, with more (a fine-tuning's
// --seeds) before --workers.
func (o trainOpts) writeRunFlags(b *strings.Builder, more string) {
	if o.episodes > 0 {
		b.WriteString(" --episodes " + strconv.Itoa(o.episodes))
	}
	if o.budget > 0 {
		b.WriteString(" --budget " + o.budget.String())
	}
	fmt.Fprintf(b, "%s --workers %d --seed %d --name %s --db %s", more, o.workers, o.seed, o.name, filepath.ToSlash(o.db))
	if o.noRandomise {
		b.WriteString(" --no-randomise")
	}
	if o.randomise != "" {
		b.WriteString(" --randomise '" + o.randomise + "'")
	}
	if o.reward != "" {
		b.WriteString(" --reward '" + o.reward + "'")
	}
	if o.gamma != 0 || o.gammaSet {
		b.WriteString(" --gamma " + strconv.FormatFloat(o.gamma, 'g', -1, 64))
	}
	if o.lr != 0 {
		b.WriteString(" --lr " + strconv.FormatFloat(o.lr, 'g', -1, 64))
	}
	if o.validInterval != "" {
		b.WriteString(" --validated-interval " + o.validInterval)
	}
}

// checkValidInterval reads --validated-interval, written back as
// validated_interval records it ("100ms-2s").
func (o *trainOpts) checkValidInterval() error {
	if o.validInterval == "" {
		return nil
	}
	lo, hi, err := policy.ParseValidInterval(o.validInterval)
	if err != nil {
		return fmt.Errorf("--validated-interval %s: want MIN-MAX, 0 < MIN <= MAX, e.g. 100ms-2s (the decision intervals the model was validated at with ecntune eval --interval)", o.validInterval)
	}
	o.validInterval = lo.String() + "-" + hi.String()
	return nil
}

// validHyper is the validated_interval the run's model records: the one
// given, else the starting model's (none: omitted).
func (o trainOpts) validHyper() map[string]string {
	if v := cmp.Or(o.validInterval, o.fromValid); v != "" {
		return map[string]string{"validated_interval": v}
	}
	return nil
}

func newTrainCmd() *cobra.Command {
	var o trainOpts
	cmd := &cobra.Command{
		Use:   "train (--scenario FILE... [--algo ddqn|ppo | --from builtin|model:NAME] | --twin FILE [--from builtin|model:NAME]) [--budget 10m | --episodes N]",
		Short: "Train a learned ECN policy in the simulator and store it in the model registry",
		Long: `Train a policy (DDQN or PPO, one agent per lossless egress queue sharing one network)
on episodes drawn from the given scenarios with domain randomisation (load, fan-in, incast
mixes, link rate, starting setting), running --workers episodes in parallel. A run is
reproducible from --seed and --workers. Checkpoints go to the registry (--db) every few
rounds under the run name --name, and a run started again with the same flags resumes
from the last one. One trainer at a time holds a run: a second one under the same --name
and --db stops at start (the lock is the file DB.train-NAME.lock beside the registry). At the end the model is stored (models.Put) with its provenance, and
the learning curve is written as CSV and PNG into runs/ beside the registry, or into --out, as
NAME-vN-curve (REG-NAME-vN-curve for a registry REG.db other than ecntune.db; a file there is
never replaced: a name taken becomes NAME-vN-2-curve, and stderr says so).
With --headroom-for builtin (or model:NAME) it trains a switch-level headroom model instead: one
agent per switch sets the headroom of all its lossless PGs (keep, or 1-2x each PG's lossless floor)
while that ECN policy decides ECN; run it as POLICY+headroom=model:NAME.` + trainTwinLong,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.algoSet = cmd.Flags().Changed("algo")
			o.episodesSet, o.budgetSet = cmd.Flags().Changed("episodes"), cmd.Flags().Changed("budget")
			o.gammaSet, o.lrSet = cmd.Flags().Changed("gamma"), cmd.Flags().Changed("lr")
			return runTrain(cmd, o)
		},
	}
	f := cmd.Flags()
	addTwinFlags(f, &o)
	addSelectFlags(f, &o)
	f.StringArrayVar(&o.scenarios, "scenario", nil, "training scenario (YAML); repeat for several")
	f.StringVar(&o.algo, "algo", "ddqn", "learning algorithm: ddqn or ppo")
	f.DurationVar(&o.budget, "budget", 0, "wall-clock budget, e.g. 10m (training stops after the round that exceeds it)")
	f.IntVar(&o.episodes, "episodes", 0, "number of episodes (reproducible; default 400 when no --budget)")
	f.IntVar(&o.workers, "workers", 2, "episodes run in parallel")
	f.StringVar(&o.db, "db", "", "model registry (default $ECNTUNE_DB or "+modelsDefaultDB+")")
	f.StringVar(&o.name, "name", "", "model name (also the checkpoint's run name; default ALGO-default: ddqn-default, ppo-default)")
	f.StringVar(&o.out, "out", "", "directory for the learning curve (default: runs/ beside the registry)")
	f.Uint64Var(&o.seed, "seed", 1, "random seed")
	f.BoolVar(&o.noRandomise, "no-randomise", false, "no domain randomisation (episodes differ by seed only)")
	f.IntVar(&o.checkpointEvery, "checkpoint-every", 0, "rounds between checkpoints (default 10)")
	f.StringVar(&o.randomise, "randomise", "", `domain randomisation as JSON over the defaults, e.g. '{"host_rates":[25e9,100e9,400e9]}'`)
	f.StringVar(&o.reward, "reward", "", `reward weights as JSON over the training defaults, e.g. '{"delay":0.1}'; fields: `+
		strings.Join(env.RewardWeightNames(), ", ")+` (flow_small, flow_large: mean log2 slowdown of the flows through a queue, `+
		`flow_small_tail: the largest small-flow one; flow_large_progress: large flows charged as they fall behind, finished or not; the simulator's ground truth; change: charged to a queue each interval its ECN setting is changed)`)
	f.Float64Var(&o.gamma, "gamma", 0, "discount in [0, 1): 0 judges each decision by its own interval's reward alone (default 0.7 for ddqn, 0.9 for ppo; with --twin the starting model's)")
	f.Float64Var(&o.lr, "lr", 0, "learning rate (default 1e-3 for ddqn, 3e-4 for ppo; with --twin the starting model's)")
	f.IntSliceVar(&o.hidden, "hidden", nil, "hidden layer widths of the MLP, e.g. 128,64 (default 64,64)")
	f.StringVar(&o.spec, "spec", "", "observation and action spec of the model, OBS/ACT, e.g. obs-v3/act-v2 for the embedded model's "+
		"(default: "+env.SpecVersion+", and "+env.ActionSpecVersion+" for ppo, act-v2 for ddqn)")
	f.Float64Var(&o.prefScale, "preference-scale", 0, "train a model conditioned on the operator preference P in [-1, 1] (prefer=P then is its input): "+
		"each episode draws P and weighs the reward's latency terms by 2^(S·P), its throughput terms by 2^(-S·P); S = this flag, 0 (default) for no preference input, at most 4")
	f.StringVar(&o.headroomFor, "headroom-for", "", "train a switch-level headroom model (one headroom per switch for all its lossless PGs, spec "+
		env.SwitchSpecVersion+"/"+env.HeadroomActionSpec+"; with --spec "+env.SwitchSpecVersion+"/"+env.HeadroomAlphaActionSpec+
		" its alpha too) beside this ECN policy, which decides every queue's ECN setting meanwhile: builtin or model:NAME (ppo only)")
	f.StringVar(&o.validInterval, "validated-interval", "", "MIN-MAX, e.g. 100ms-2s: the decision intervals the model was validated at (ecntune eval --interval), "+
		"recorded in its card; the agent runs a model only at an interval inside its own (without it: a decade either side of the 200µs it trains at, 20µs to 2ms, "+
		"which no agent interval is; with --from or --twin: the starting model's, if it has one)")
	f.BoolVar(&o.criticTruth, "critic-truth", false, "asymmetric actor-critic (ppo only): the critic also reads the simulator's ground truth per queue "+
		"(flows in flight through it by size, their backlog, the slowdowns of the flows that just finished, the share of the episode left); the model, the actor, reads counters only")
	return cmd
}

// parseRandomise reads --randomise (JSON over train.DefaultRandomisation)
// and --no-randomise into the run's randomisation; the zero value means
// the defaults.
func parseRandomise(js string, off bool) (train.Randomisation, error) {
	switch {
	case off && js != "":
		return train.Randomisation{}, fmt.Errorf("--randomise and --no-randomise: give one or the other")
	case off:
		return train.Randomisation{Off: true}, nil
	case js == "":
		return train.Randomisation{}, nil
	}
	return parseRandomiseOver(js, train.DefaultRandomisation())
}

// parseRandomiseOver reads --randomise as JSON over the randomisation r.
func parseRandomiseOver(js string, r train.Randomisation) (train.Randomisation, error) {
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("--randomise %s: %v (fields: load_min, load_max, fanin_min, fanin_max, size_min, size_max, host_rates, add_incast, random_start, hide_peer)", js, err)
	}
	if dec.More() {
		return r, fmt.Errorf("--randomise %s: one JSON object expected", js)
	}
	if r.Off {
		return r, fmt.Errorf(`--randomise %s: use --no-randomise to turn randomisation off`, js)
	}
	if r.IsZero() {
		return r, fmt.Errorf("--randomise %s: every perturbation is zero; use --no-randomise for none", js)
	}
	return r, nil
}

func runTrain(cmd *cobra.Command, o trainOpts) error {
	if o.out != "" { // before the training: the curve is written after it
		if err := checkOutPath("out", o.out, "the learning curve"); err != nil {
			return err
		}
	}
	if err := o.checkValidInterval(); err != nil {
		return err
	}
	if o.lrSet && o.lr == 0 {
		// as --lr -1 is: 0 ran as the default
		return fmt.Errorf("--lr 0: allowed (0, 1] (without --lr: 1e-3 for ddqn, 3e-4 for ppo; with --twin the starting model's)")
	}
	if o.twin != "" {
		return runTwinTrain(cmd, o)
	}
	if err := o.refuseTwinFlags(cmd); err != nil {
		return err
	}
	if err := o.selectFlags(cmd.Flags().Changed); err != nil {
		return err
	}
	cfg, err := o.config()
	if err != nil {
		return err
	}
	if o.name == "" {
		o.name = cfg.Algo + "-default" // a PPO run (--algo ppo, --from builtin) was stored as ddqn-default
	}
	for _, sc := range cfg.Scenarios {
		warnAll(cmd.ErrOrStderr(), sc.Name, scenario.Warnings(sc.Config))
	}
	// --select-on read before the registry is opened: a bad file made an
	// empty registry before it was refused
	var sel func(train.Round, *rl.Net) (float64, string, error)
	var selBasis string
	if len(o.selectOn) > 0 {
		if sel, selBasis, err = o.selector(cmd.ErrOrStderr(), env.Catalogue{}); err != nil {
			return err
		}
	}
	s, err := startTrainSession(cmd, o)
	if err != nil {
		return err
	}
	defer s.end()
	s.sel, s.selBasis = sel, selBasis
	if err := s.run(cfg); err != nil {
		return err
	}
	m, err := s.res.Model(train.Provenance{Name: o.name, Command: o.command(), Build: train.BuildRevision(), Created: time.Now().UTC(), Hyper: o.validHyper()})
	if err != nil {
		return err
	}
	warnNotUpdated(cmd.ErrOrStderr(), m, s.res.Episodes) // stored all the same, but not as something it is not
	stored, err := s.store(m)
	if err != nil {
		// the learning curve is kept with the export file the store left
		// (it was lost): named NAME-unstored-curve
		un := m
		un.Name = m.Name + "-unstored"
		if base, cerr := runFiles(cmd.ErrOrStderr(), o.curveDir(), o.db, un, curveFiles); cerr == nil {
			if base, cerr = writeCurve(base, un, s.res.Curve); cerr == nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "the learning curve is in %s.csv and .png\n", base)
			}
		}
		return err
	}
	base, err := runFiles(cmd.ErrOrStderr(), o.curveDir(), o.db, stored, curveFiles)
	if err != nil {
		return err
	}
	if base, err = writeCurve(base, stored, s.res.Curve); err != nil {
		return err
	}
	return printTrainResult(cmd.OutOrStdout(), stored, s.res, s.wall, base)
}

// warnNotUpdated warns when the network of m, a run started from a
// model's weights (train --from, --twin), is the starting one weight for
// weight: a run shorter than PPO's critic warm-up (the actor frozen
// meanwhile), or one that made no update.
func warnNotUpdated(w io.Writer, m models.Model, episodes int) {
	start := m.Hyper["init_weights_sha256"]
	if sum := sha256.Sum256(m.Weights); start == "" || start != hex.EncodeToString(sum[:]) {
		return
	}
	why := ""
	if n := m.Hyper["critic_warm_up"]; n != "" {
		why = " (" + m.Algorithm + "'s critic warms up for the first " + n + ")"
	}
	fmt.Fprintf(w, "warning: the fine-tuned network is the starting one, weight for weight: %d episodes did not update it%s; give more --episodes or --budget for a fine-tuning\n",
		episodes, why)
}

// curveDir is where the learning curve goes: --out, else runs/ beside
// the registry, in a folder of its own (not loose in the working
// directory, often a repository's root).
func (o trainOpts) curveDir() string {
	if o.out != "" {
		return o.out
	}
	return filepath.Join(filepath.Dir(o.db), "runs")
}

// trainSession is a training run holding its run's lock, with its
// progress and Ctrl-C watch: what train and train --twin share.
type trainSession struct {
	o      trainOpts
	stderr io.Writer
	lock   *runLock
	reg    *runRegistry
	intr   *trainInterrupt
	res    *train.Result
	wall   time.Duration
	// sel judges snapshots (train --select-on); nil: the last network.
	sel      func(train.Round, *rl.Net) (float64, string, error)
	selBasis string
}

// startTrainSession checks the registry file (creating it, or finding it
// unusable, before any work) and takes the run's lock: a second trainer
// under the same name stops here.
func startTrainSession(cmd *cobra.Command, o trainOpts) (*trainSession, error) {
	// The run then opens the file only for checkpoints and the final store.
	reg, err := models.Open(o.db, models.Options{Timeout: trainLockTimeout})
	if err != nil {
		return nil, err
	}
	if err := reg.Close(); err != nil {
		return nil, err
	}
	lock, err := acquireRunLock(o.db, o.name)
	if err != nil {
		return nil, err
	}
	stderr := cmd.ErrOrStderr()
	return &trainSession{o: o, stderr: stderr, lock: lock, reg: &runRegistry{path: o.db}, intr: watchInterrupt(stderr, o.name)}, nil
}

// end stops the Ctrl-C watch and releases the lock.
func (s *trainSession) end() {
	s.intr.stop()
	s.lock.release()
}

// run trains cfg within the budget, resuming the run's checkpoint; an
// interrupted run saves one and says how to resume.
func (s *trainSession) run(cfg train.Config) error {
	o, stderr := s.o, s.stderr
	progress := newTrainProgress(stderr, o.name, o.algo, o.episodes, o.budget)
	start := time.Now()
	hooks := train.Hooks{Store: s.reg, Run: o.name, Progress: progress.round, Interrupted: s.intr.interrupted,
		Resumed: func(eps, round int) {
			progress.resumed(eps)
			fmt.Fprintf(stderr, "resuming run %s from its checkpoint in %s: %d episodes (%d rounds) done before\n", o.name, o.db, eps, round)
		}}
	if o.budget > 0 {
		hooks.Stop = func(train.Round) bool { return time.Since(start) >= o.budget }
	}
	// a checkpoint the registry could not take (held by another process
	// past its wait, a full disk) costs the rounds since the last one, not
	// the run: it ended with all its work lost
	hooks.CheckpointFailed = func(round int, err error) bool {
		if errors.Is(err, models.ErrConflict) {
			return false // another process changed the run's checkpoint: not this run's to overwrite
		}
		fmt.Fprintf(stderr, "warning: %v; training goes on, the next checkpoint tries again\n", err)
		return true
	}
	if s.sel != nil {
		hooks.Select, hooks.SelectEvery, hooks.SelectBasis = s.sel, o.selectEvery, s.selBasis
	}
	res, err := train.Run(cfg, hooks)
	s.res = res
	if errors.Is(err, train.ErrForeignCheckpoint) || errors.Is(err, models.ErrCorrupt) && strings.Contains(err.Error(), "load checkpoint") {
		// a damaged checkpoint can only be dropped: the run starts afresh
		return fmt.Errorf("%w (ecntune models delete --checkpoint %s --db %s)", err, o.name, o.db)
	}
	if errors.Is(err, train.ErrInterrupted) {
		progress.finish()
		compactRegistry(stderr, o.db)
		return interruptedError(o, res)
	}
	if err != nil {
		return err
	}
	progress.finish()
	s.wall = time.Since(start)
	return nil
}

// store puts the finished model into the registry, drops the run's
// checkpoint and compacts the file when replaced checkpoints are most of
// it.
func (s *trainSession) store(m models.Model) (models.Model, error) {
	stored, dropped, err := s.reg.finish(m, s.o.name)
	if err != nil {
		// the trained network is not lost with the store: an export file
		// beside the registry holds it (it was lost, with no word)
		return stored, s.keepUnstored(m, err)
	}
	if !dropped && s.reg.last != nil {
		fmt.Fprintf(s.stderr, "warning: the checkpoint of run %s in %s was rewritten by another process during this run; it is left in place\n", s.o.name, s.o.db)
	}
	compactRegistry(s.stderr, s.o.db)
	return stored, nil
}

// keepUnstored writes a model the registry could not take (err) to an
// export file beside it, and says how to import it.
func (s *trainSession) keepUnstored(m models.Model, err error) error {
	path := fmt.Sprintf("%s.unstored-%s-%s.export", resolvedDB(s.o.db), m.Name, time.Now().UTC().Format("20060102T150405"))
	sum := sha256.Sum256(m.Weights)
	m.WeightsSHA256, m.WeightsSize = hex.EncodeToString(sum[:]), int64(len(m.Weights))
	if m.Version == 0 {
		m.Version = 1 // an import takes the next free version where it is taken
	}
	f, ferr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if ferr == nil {
		ferr = models.WriteExport(f, m)
		if cerr := f.Close(); ferr == nil {
			ferr = cerr
		}
		if ferr != nil {
			os.Remove(path)
		}
	}
	if ferr != nil {
		return fmt.Errorf("train: the trained model could not be stored in %s (%w), nor written to %s (%v): it is lost", s.o.db, err, path, ferr)
	}
	return fmt.Errorf("train: the trained model could not be stored in %s (%w); it is kept in %s: ecntune models import %s --db %s", s.o.db, err, path, path, s.o.db)
}

// config checks the flags and builds the run's configuration, loading the
// scenarios; it fills in the defaults of --episodes (400 without a
// --budget) and --db, which the recorded command then shows.
func (o *trainOpts) config() (train.Config, error) {
	if len(o.scenarios) == 0 {
		return train.Config{}, fmt.Errorf("no --scenario given: train needs at least one scenario file")
	}
	if o.algo != train.AlgoDDQN && o.algo != train.AlgoPPO {
		return train.Config{}, fmt.Errorf("--algo %q: want ddqn or ppo", o.algo)
	}
	if o.episodes < 0 || o.budget < 0 {
		return train.Config{}, fmt.Errorf("--episodes %d / --budget %v: must not be negative", o.episodes, o.budget)
	}
	if o.episodesSet && o.episodes == 0 || o.budgetSet && o.budget == 0 {
		return train.Config{}, fmt.Errorf("--episodes %d / --budget %v: give a positive number (without either: 400 episodes)", o.episodes, o.budget)
	}
	if o.episodes == 0 && o.budget == 0 {
		o.episodes = 400
	}
	if o.workers < 1 {
		return train.Config{}, fmt.Errorf("--workers %d: want at least 1", o.workers)
	}
	if o.name != "" && !models.ValidName(o.name) {
		return train.Config{}, fmt.Errorf("--name %q: want a letter followed by letters, digits, '.', '_' or '-' (at most 64)", o.name)
	}
	reward, err := parseReward(o.reward)
	if err != nil {
		return train.Config{}, err
	}
	rnd, err := parseRandomise(o.randomise, o.noRandomise)
	if err != nil {
		return train.Config{}, err
	}
	o.db = modelsDBPath(o.db)
	var scs []scenario.Named
	for _, p := range o.scenarios {
		sc, err := scenario.LoadNamed(p)
		if err != nil {
			return train.Config{}, err
		}
		scs = append(scs, sc)
	}
	cfg := train.Config{Algo: o.algo, Scenarios: scs, Episodes: o.episodes, Workers: o.workers, Seed: o.seed,
		CheckpointEvery: o.checkpointEvery, Randomise: rnd, Gamma: o.gamma, GammaSet: o.gammaSet, LR: o.lr, Hidden: o.hidden, Spec: o.spec, PreferenceScale: o.prefScale, CriticTruth: o.criticTruth}
	if o.headroomFor != "" {
		if cfg.ECN, err = headroomECN(o.headroomFor, o.db); err != nil {
			return train.Config{}, err
		}
		cfg.ECNName = o.headroomFor
	}
	if o.from != "" {
		if err := o.startFrom(&cfg); err != nil {
			return train.Config{}, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return train.Config{}, err // before the registry file is created
	}
	cfg.Reward = reward
	return cfg, nil
}

// startFrom makes cfg continue --from's weights on the --scenario files:
// the model's algorithm and hidden layers, its action spec, and its
// network widened with zero weights to the observation spec the run
// trains (default this build's), so that the run starts deciding exactly
// as the model does and learns from there what the added features are
// worth; its fresh critic is fitted alone for the first
// train.TwinCriticWarmUp episodes.
func (o *trainOpts) startFrom(cfg *train.Config) error {
	ft, _, valid, err := loadStart(o.from, o.db)
	if err != nil {
		return err
	}
	o.fromValid = valid
	o.from = ft.From // the version resolved, for the resume command and the card
	if err := ft.Refuse(); err != nil {
		return err
	}
	m := ft.Model
	if cfg.Hidden, err = train.HiddenOf(m); err != nil {
		return err
	}
	if err := o.keepsModel("--from "+o.from, m.Algorithm, cfg.Hidden); err != nil {
		return err
	}
	cfg.Algo = m.Algorithm
	obs := env.SpecVersion
	if o.spec != "" {
		var act string
		obs, act, _ = strings.Cut(o.spec, "/")
		if act != m.ActSpec {
			return fmt.Errorf("--spec %s: --from %s acts on %s", o.spec, o.from, m.ActSpec)
		}
	}
	cfg.Spec = obs + "/" + m.ActSpec
	net, err := nn.UnmarshalNet(m.Weights)
	if err != nil {
		return fmt.Errorf("--from %s: weights: %w", o.from, err)
	}
	in := env.ObsSpecFeatures(obs)
	if in == 0 || in < net.InDim() {
		return fmt.Errorf("--spec %s: --from %s reads %d features (%s), the spec %d", cfg.Spec, o.from, net.InDim(), m.ObsSpec, in)
	}
	if cfg.Init, err = net.WithInputs(in); err != nil {
		return err
	}
	cfg.InitName = ft.From
	if cfg.Algo == train.AlgoPPO {
		cfg.CriticWarmUp = train.TwinCriticWarmUp
	}
	return nil
}

// headroomECN is the network of the ECN policy a switch-level headroom
// model is trained beside (--headroom-for): builtin or model:NAME, a
// learned policy without a preference.
func headroomECN(spec, db string) (*rl.Net, error) {
	if spec != policy.BuiltinSpec && !strings.HasPrefix(spec, policy.ModelPrefix) || strings.Contains(spec, policy.PreferOption) {
		return nil, fmt.Errorf("--headroom-for %q: want builtin or model:NAME (a learned ECN policy, without a preference)", spec)
	}
	p, err := policyResolver(db).Lookup(spec)
	if err != nil {
		return nil, fmt.Errorf("--headroom-for: %w", err)
	}
	l, ok := p.(*policy.Learned)
	if !ok || l.Conditioned() {
		return nil, fmt.Errorf("--headroom-for %q: not a learned ECN policy without a preference input", spec)
	}
	return l.Net(), nil
}

// parseReward reads --reward (JSON over train.DefaultReward); nil when
// not given.
func parseReward(js string) (*env.RewardWeights, error) {
	if js == "" {
		return nil, nil
	}
	return parseRewardOver(js, train.DefaultReward())
}

// parseRewardOver reads --reward as JSON over the weights w.
func parseRewardOver(js string, w env.RewardWeights) (*env.RewardWeights, error) {
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("--reward %s: %v (fields: %s)", js, err, strings.Join(env.RewardWeightNames(), ", "))
	}
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("--reward: %w", err)
	}
	return &w, nil
}

// curveFiles are the learning curve's files after a run's base name.
var curveFiles = []string{"-curve.csv", "-curve.png"}

// runFiles picks the base name of the files a training run leaves in dir
// (its learning curve; with --twin its evaluation too): NAME-vN, or NAME
// for a model not stored, led by the registry file's stem (REG-NAME-vN)
// when the registry is not the default one, ecntune.db, so that two
// registries' models of one name and version in one folder do not share
// it. A name any of whose files (suffixes) is already there (another
// folder's registry sharing --out, a registry made again) is not
// replaced: the next free one, NAME-vN-2, -3 ..., is taken and stderr
// says so.
func runFiles(stderr io.Writer, dir, db string, m models.Model, suffixes []string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--out %s: %w", dir, err)
	}
	name := m.Name
	if m.Version > 0 { // not stored (unstored): no version
		name += "-v" + strconv.Itoa(m.Version)
	}
	if reg := filepath.Base(db); reg != modelsDefaultDB {
		name = strings.TrimSuffix(reg, filepath.Ext(reg)) + "-" + name
	}
	want := filepath.Join(dir, name)
	taken := func(base string) (string, bool) {
		for _, suf := range suffixes {
			if _, err := os.Lstat(base + suf); !errors.Is(err, fs.ErrNotExist) {
				return base + suf, true
			}
		}
		return "", false
	}
	first, ok := taken(want)
	if !ok {
		return want, nil
	}
	for i := 2; i <= 1000; i++ {
		base := want + "-" + strconv.Itoa(i)
		if _, ok := taken(base); !ok {
			files := make([]string, len(suffixes))
			for k, suf := range suffixes {
				files[k] = base + suf
			}
			fmt.Fprintf(stderr, "note: %s is already there, another model's (kept): the files of %s are %s\n", first, m.Ref(), strings.Join(files, ", "))
			return base, nil
		}
	}
	return "", fmt.Errorf("learning curve of %s: %s and the 999 names after it are taken in %s: move them, or give --out DIR", m.Ref(), first, dir)
}

// writeCurve writes the learning curve of the model m into base-curve.csv
// and .png (runFiles' names, created here: a file there is not replaced),
// and returns base-curve.
func writeCurve(base string, m models.Model, curve []train.Round) (string, error) {
	var csvBuf, pngBuf bytes.Buffer
	if err := train.WriteCurveCSV(&csvBuf, curve); err != nil {
		return "", err
	}
	if err := train.WriteCurvePNG(&pngBuf, curve, "ecntune train "+m.Ref()); err != nil {
		return "", fmt.Errorf("learning curve plot: %w", err)
	}
	if err := writeNewFile(base+"-curve.csv", csvBuf.Bytes()); err != nil {
		return "", fmt.Errorf("learning curve: %w", err)
	}
	if err := writeNewFile(base+"-curve.png", pngBuf.Bytes()); err != nil {
		return "", fmt.Errorf("learning curve plot: %w", err)
	}
	return base + "-curve", nil
}

// writeNewFile writes data to a file that must not be there yet.
func writeNewFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// progressLogEvery spaces the progress lines written when stderr is not a
// terminal.
const progressLogEvery = 15 * time.Second

// progressStatus is a round's reward, exploration (DDQN's epsilon, PPO's
// policy entropy) and the last greedy evaluation score.
func progressStatus(algo string, r train.Round, lastEval string) string {
	explore := fmt.Sprintf("eps %.2f", r.Epsilon)
	if algo == train.AlgoPPO {
		explore = fmt.Sprintf("entropy %.2f nats", r.Entropy)
	}
	return fmt.Sprintf("reward %.3f, %s, eval %s", r.MeanReward, explore, lastEval)
}

// progressCount is "episode N/M (P%)", or "episode N" under a budget.
func progressCount(done, total int) string {
	if total <= 0 {
		return fmt.Sprintf("episode %d", done)
	}
	return fmt.Sprintf("episode %d/%d (%d%%)", done, total, 100*done/total)
}

func printTrainResult(w io.Writer, m models.Model, res *train.Result, wall time.Duration, curve string) error {
	var trans uint64
	if n := len(res.Curve); n > 0 {
		trans = res.Curve[n-1].Transitions
	}
	fmt.Fprintf(w, "stored %s (%s, %d episodes, %d agent steps, %.1fs wall", m.Ref(), m.Algorithm, res.Episodes, trans, wall.Seconds())
	if res.ResumedFrom > 0 {
		fmt.Fprintf(w, ", resumed at episode %d", res.ResumedFrom)
	}
	fmt.Fprintln(w, ")")
	names := make([]string, 0, len(res.Eval))
	for _, s := range res.Config.Scenarios {
		names = append(names, s.Name)
	}
	for _, n := range names {
		fmt.Fprintf(w, "  greedy mean reward on %s: %.4f\n", n, res.Eval[n])
	}
	if line := intervalLine(m); line != "" {
		fmt.Fprintln(w, line)
	}
	_, err := fmt.Fprintf(w, "learning curve: %s.csv, %s.png\n", curve, curve)
	return err
}
