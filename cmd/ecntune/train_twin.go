package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/policy/builtin"
	"github.com/ecntune/ecntune/simenv"
	"github.com/ecntune/ecntune/simenv/scenario"
	"github.com/ecntune/ecntune/train"
)

// trainTwinLong is the part of train's help on --twin.
const trainTwinLong = `

With --twin FILE it fine-tunes a model on one fabric instead: FILE is a scenario (the one
ecntune twin writes from an agent's telemetry, or any scenario file), and the run starts from
the weights of --from (builtin, the default, or model:NAME[@V] from --db) with its algorithm,
spec, architecture, discount, learning rate and decision interval (--algo, --spec and
--hidden may only repeat them) and its reward, to which the run adds the twin's ground truth
where the model has none: the flows' slowdowns through each queue, flow_small 0.1,
flow_large 0.1, flow_small_tail 0.3 (a twin is a simulation; the model still reads counters
only; --reward overrides, e.g. '{"flow_small":0,"flow_large":0,"flow_small_tail":0}' for the
model's reward alone). Episodes are as long as the twin (at most 20ms; a longer twin's
episodes start at offsets drawn across it, so all of its windows are trained on), randomised
narrowly around it: loads x0.8-1.2, incast fan-in x0.8-1.2 and sizes x0.8-1.25, its link
speeds, topology and PFC as they are, no incast added, every peer known; random starting
settings and the telemetry dropout as the starting model had them (--randomise overrides,
as JSON over these). A PPO run first fits its fresh critic alone for 16 episodes. It trains
for --budget (default 5m; the evaluation comes after it) and then evaluates the fine-tuned and the starting model against
the frontier of fixed settings on the twin (eval --frontier, both on the same --seeds K
seeds, default 10: the twin's seed and the next K-1, which no training episode uses), and
stores the model under --name (default twin-SCENARIO) with the twin's file, name and sha256
and the starting model in its provenance (models show). It is promoted only when it drops no
more packets than the starting model, its frontier ratio (small-flow p99 over that of the
frontier of fixed settings at its large-flow goodput, as eval reckons it) is no higher than the starting
model's, and it is not behind the frontier: its ratio is at most 1.00 as printed, or no
fixed setting keeps 98% of its goodput; or, when the starting model is itself behind the
frontier (above 1.00), it is better than the starting model beyond the seeds' noise (the
95% interval of its small-flow p99 over the starting model's, seed by seed, below 1), not
merely no worse; where it is no better than the starting model (the same ratio as printed,
its p99 not lower beyond the noise), it changes the settings no more often (changes per queue
per 100 intervals and flaps a run, past eval's settling intervals, as printed: the tie goes to
the model that leaves the queues alone); and, where the twin runs a collective (all-reduce or all-to-all), its
collectives do not fall behind the starting model's: no fewer iterations, and, unless it
completes more, its collective flows keep 98% of their goodput (seed by seed, beyond the
seeds' noise; the goodput is the figure where the iterations do not tell): the
frontier ratio reads flows by size, and a model can starve an all-reduce whose chunks are
of neither class it counts and still stand beyond it. With --agent FILE (an agent configuration, such as the one shadow mode ran
with) the rule judges what would run instead of the bare models: the evaluation also runs the
starting and the fine-tuned model each as that agent runs it, behind its guardrails (closed
loop over gNMI against the twin's switches, in lockstep, as eval's agent:FILE; the file's
policy, targets and mode set aside, and approve: true too: every change approved, as the agent
runs once an operator approves them; the output and the record say so), and the rule reads
those two loops' figures; the bare models' are printed beside them. With --rival FILE (repeated; the rival twins ecntune twin
writes beside the twin: one window's workload replaced by one the fit nearly chose) a model the
rule promotes on the twin must also be no worse than the starting model on every rival, on the
same seeds (judged as the rule judged the twin: behind the guardrails with --agent): no more
drops, small-flow p99 over the starting model's at most 1.00 and large-flow goodput at least
0.98 of its, seed by seed in geometric mean, and its collectives not behind (as on the twin). The fit cannot tell a rival from the twin, and the
model was trained on the twin: a gain there that turns into a loss on a rival was learned of
the twin's errors. Otherwise it is stored unpromoted and the figures say why. Where the
starting model (its loop, with --agent) is behind the twin's frontier, the fixed setting it is
behind (the best one keeping 98% of its goodput, with a lower small-flow p99) also runs on the twin, on
as many seeds again that it was not chosen on (with the starting model there), and on the rivals, as the
two run, and the same rule judges it against the starting model, with one clause more: its
small-flow p99 must be lower than the starting model's beyond the seeds' noise (the setting is a
point of the frontier, so "not behind it" says nothing of it); promoted by it, it is
recommended unless a fine-tuned model the rule promotes does better on the twin (a lower
frontier ratio as printed; a tie goes to the setting, which does not churn), and the model
then stays a candidate: the output names the policy to run instead (static:NAME or fixed:KMIN/KMAX/PMAX)
and the record keeps its figures. An agent that
names it as model:NAME@promoted runs only a promoted version (model:NAME runs the latest
version while none is promoted). A version of --name promoted before is not retired by a
model that was not judged against it (one that did not start from it, --from
model:NAME@promoted): the model the rule passes is stored as a candidate, and the output
prints the eval that compares the two and the models promote that replaces it;
--replace-promoted promotes over it all the same. A promotion says which version it retired. The fine-tuning, the evaluation on the twin and on its rivals run
every decision at the Pmax the switches hold (--agent's guardrails' pmax-step, else whole
percents, the agent's default): a model choosing 0.3% learns and is judged on the 1% the guard
puts on a switch, and a fixed setting recommended is one a switch holds.`

// Defaults of train --twin.
const (
	twinDefaultBudget = 5 * time.Minute
	twinDefaultSeeds  = 10
)

// addTwinFlags registers the flags of train --twin.
func addTwinFlags(f *pflag.FlagSet, o *trainOpts) {
	f.StringVar(&o.twin, "twin", "", "fine-tune on this fabric's scenario (written by ecntune twin, or any scenario file) from --from's weights, "+
		"then promote only if not behind the twin's frontier of fixed settings (see above)")
	f.StringVar(&o.from, "from", "", "the model to start from, builtin, builtin:400g or model:NAME[@V] from --db: with --twin (default: builtin:400g when every host port runs at 400G or faster, else builtin), "+
		"or with --scenario files (its weights continued, widened with zero weights to --spec's observation if it reads fewer features); "+
		fmt.Sprintf("a ppo model's fresh critic is then fitted alone for the first %d episodes, its actor unchanged meanwhile: a shorter run stores the starting network", train.TwinCriticWarmUp))
	f.StringVar(&o.twinAgent, "agent", "", "with --twin: an agent configuration (YAML): judge and promote the starting and the fine-tuned model as that agent "+
		"runs them, behind its guardrails, instead of the bare models (see above)")
	f.StringArrayVar(&o.twinRivals, "rival", nil, "with --twin: a rival twin (written by ecntune twin beside the twin; repeat for each) the model must also be no worse "+
		"than the starting model on to be promoted (see above)")
	f.BoolVar(&o.twinReplace, "replace-promoted", false, "with --twin: promote a model the rule passes over a promoted version of --name it was not judged against "+
		"(without it, that version stays promoted and the model a candidate, unless the run started from it: --from model:NAME@promoted)")
	f.IntVar(&o.twinSeeds, "seeds", 0, fmt.Sprintf("with --twin: seeds of the frontier evaluation on the twin (default %d; the twin's seed and the next ones; as many more judge a fixed setting chosen on those; all held out from training)", twinDefaultSeeds))
}

// refuseTwinFlags: --seeds, --agent and --rival belong to --twin (--from also
// starts a run on --scenario files from a model's weights).
func (o trainOpts) refuseTwinFlags(cmd *cobra.Command) error {
	for _, fl := range []string{"seeds", "agent", "rival", "replace-promoted"} {
		if cmd.Flags().Changed(fl) {
			return fmt.Errorf("--%s goes with --twin FILE (fine-tuning on a twin)", fl)
		}
	}
	return nil
}

// twinRun is a fine-tuning run on a twin, set up from the flags.
type twinRun struct {
	ft    train.FineTune
	cfg   train.Config
	start string // the starting model's policy spec, for the evaluation
	valid string // --validated-interval, else the starting model's validated decision intervals ("" when it has none)
	// agent is --agent's configuration (nil without it) and agentSHA its
	// file's sha256: the loops the promotion rule judges.
	agent               *config.Config
	agentFile, agentSHA string
	// rivals are --rival's scenarios.
	rivals []scenario.Named
	// seeds is --seeds: the twin's evaluation runs on the first seeds of
	// ft.HeldOut, and a fixed setting chosen there is judged on the next
	// as many (ft.HeldOut holds both; no training episode uses either).
	seeds int
}

// pmaxStep is the Pmax resolution the evaluation on the twin runs every
// decision of the bare models and fixed settings at: the switches' own,
// as --agent's guardrails say (pmax-step), else the agent's default
// (env.PmaxStep, whole percents, as OpenConfig and SONiC hold Pmax). A
// frontier point at 0.3% is then the 1% one, and the fixed setting the
// twin may recommend is one a switch can hold (it recommended
// fixed:387KB/774KB/0.3%, which the agent's guard runs as 1%, and
// judged the bare models at a Pmax no switch runs).
func (tr twinRun) pmaxStep() float64 {
	if tr.agent != nil {
		return tr.agent.Guardrails.PmaxStep
	}
	return env.PmaxStep
}

// evalSeeds are the seeds of the twin's frontier evaluation.
func (tr twinRun) evalSeeds() train.SeedRange {
	return train.SeedRange{First: tr.ft.HeldOut.First, N: tr.seeds}
}

// fixedSeeds are the seeds a fixed setting chosen on evalSeeds is judged
// on: chosen as the best of many on some seeds, it would win on those by
// the luck of the draw.
func (tr twinRun) fixedSeeds() train.SeedRange {
	return train.SeedRange{First: tr.ft.HeldOut.First + uint64(tr.seeds), N: tr.seeds}
}

// twinSetup checks train --twin's flags, loads the twin and the model to
// start from, and builds the run. It fills in the defaults of --from,
// --seeds, --budget, --name and --db, which the recorded command shows.
func (o *trainOpts) twinSetup(cmd *cobra.Command) (twinRun, error) {
	var tr twinRun
	if err := o.twinFlags(cmd); err != nil {
		return tr, err
	}
	o.db = modelsDBPath(o.db)
	if o.twinAgent != "" { // before the training: a bad file is refused at once
		var err error
		if tr.agent, tr.agentSHA, err = loadTwinAgent(o.twinAgent); err != nil {
			return tr, err
		}
		tr.agentFile = o.twinAgent
	}
	twin, err := scenario.LoadNamed(o.twin)
	if err != nil {
		return tr, fmt.Errorf("--twin: %w", err)
	}
	if !cmd.Flags().Changed("name") {
		o.name = twinModelName(twin.Name)
	}
	if !models.ValidName(o.name) {
		return tr, fmt.Errorf("--name %q: want a letter followed by letters, digits, '.', '_' or '-' (at most 64)", o.name)
	}
	if o.from == "" {
		o.from = defaultStart(twin.Config)
	}
	if tr.ft, tr.start, tr.valid, err = loadStart(o.from, o.db); err != nil {
		return tr, err
	}
	tr.valid = cmp.Or(o.validInterval, tr.valid) // the one given, else the starting model's
	// the version resolved: the resume command and the model card name
	// it (model:d, resumed after d@2 was stored, started from d@2 and
	// was refused as another configuration)
	o.from = tr.ft.From
	for _, f := range o.twinRivals {
		rv, err := scenario.LoadNamed(f)
		if err != nil {
			return tr, fmt.Errorf("--rival: %w", err)
		}
		if err := sameFabricAs(rv, twin); err != nil {
			return tr, fmt.Errorf("--rival %s: %w", f, err)
		}
		tr.rivals = append(tr.rivals, rv)
	}
	tr.ft.Twin = twin
	tr.seeds = o.twinSeeds
	tr.ft.HeldOut = train.SeedRange{First: twin.Config.Seed, N: 2 * o.twinSeeds}
	if tr.cfg, err = tr.ft.Config(o.seed, o.workers); err != nil {
		return tr, err
	}
	if err := o.sameAsStart(tr.cfg); err != nil {
		return tr, err
	}
	// fine-tuned on what switches run: a 0.3% decision as the 1% the
	// guard puts on them
	tr.cfg.PmaxStep = tr.pmaxStep()
	return tr, o.twinOverrides(&tr.cfg)
}

// sameFabricAs refuses a rival twin of another fabric than the twin's,
// or of other switch or NIC settings (ecn, pfc, dcqcn, the decision
// interval): a rival differs from its twin in workload only, so that the
// two models' figures on it speak of the workload the fit nearly chose.
func sameFabricAs(rv, twin scenario.Named) error {
	a, b := rv.Config, twin.Config
	same := a.Topology.Kind == b.Topology.Kind && slices.Equal(a.Topology.Nodes, b.Topology.Nodes) &&
		slices.Equal(a.Topology.Links, b.Topology.Links) && a.BufferBytes == b.BufferBytes && a.MTU == b.MTU
	if !same {
		return fmt.Errorf("%s is not of twin %s's fabric (topology, links, buffer or MTU differ): a rival twin differs from its twin in workload only", rv.Name, twin.Name)
	}
	for _, c := range []struct {
		key        string
		rival, its any
	}{
		{"ecn", a.ECN, b.ECN}, {"ecn (per rate)", a.ECNByRate, b.ECNByRate}, {"pfc", a.PFC, b.PFC}, {"dcqcn", a.DCQCN, b.DCQCN},
		{"interval", a.Interval, b.Interval}, {"header_bytes", a.HeaderBytes, b.HeaderBytes}, {"ack_bytes", a.AckBytes, b.AckBytes},
	} {
		if d := firstDifference(c.rival, c.its); d != "" {
			return fmt.Errorf("%s's %s differs from twin %s's: %s: a rival twin differs from its twin in workload only (give the rival ecntune twin wrote beside the twin, or make the same edit to both)",
				rv.Name, c.key, twin.Name, d)
		}
	}
	if rv.Name == twin.Name {
		return fmt.Errorf("%s is the twin's own name: give the rival twins ecntune twin wrote beside it", rv.Name)
	}
	return nil
}

// firstDifference names the first field in which a (the rival's) differs
// from b (the twin's), "Alpha 0.25 against 0.125" ("" when they are
// equal).
func firstDifference(a, b any) string {
	if reflect.DeepEqual(a, b) {
		return ""
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() == reflect.Struct {
		for i := range va.NumField() {
			if fa, fb := va.Field(i).Interface(), vb.Field(i).Interface(); !reflect.DeepEqual(fa, fb) {
				return fmt.Sprintf("%s %v against %v", va.Type().Field(i).Name, fa, fb)
			}
		}
	}
	return fmt.Sprintf("%v against %v", a, b)
}

// loadTwinAgent loads --agent's configuration and its file's sha256.
func loadTwinAgent(path string) (*config.Config, string, error) {
	cfg, data, err := config.LoadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("--agent: %w", err)
	}
	sum := sha256.Sum256(data)
	return cfg, hex.EncodeToString(sum[:]), nil
}

// twinFlags checks the flags train --twin refuses and fills in the
// defaults of --seeds and --budget.
func (o *trainOpts) twinFlags(cmd *cobra.Command) error {
	refused := map[string]string{
		"scenario":         "the twin is the one scenario of a fine-tuning run",
		"headroom-for":     "a fine-tuning run continues an ECN policy",
		"preference-scale": "a fine-tuning run continues a model without a preference input",
		"select-on":        "a fine-tuning run is judged on the twin's own frontier",
		"critic-truth":     "a fine-tuning run's critic reads what the model's actor reads",
	}
	for _, fl := range []string{"scenario", "headroom-for", "preference-scale", "select-on", "critic-truth"} {
		if cmd.Flags().Changed(fl) {
			return fmt.Errorf("--%s with --twin: %s", fl, refused[fl])
		}
	}
	if o.twinSeeds == 0 {
		o.twinSeeds = twinDefaultSeeds
	}
	if o.twinSeeds < 2 || o.twinSeeds > 100 {
		return fmt.Errorf("--seeds %d: allowed 2..100 (a frontier ratio's confidence interval needs two)", o.twinSeeds)
	}
	if o.episodes < 0 || o.budget < 0 {
		return fmt.Errorf("--episodes %d / --budget %v: must not be negative", o.episodes, o.budget)
	}
	if o.episodesSet && o.episodes == 0 || o.budgetSet && o.budget == 0 {
		// as plain train: a 0 given is not "the default" (it ran 5
		// minutes and a 10-seed evaluation)
		return fmt.Errorf("--episodes %d / --budget %v: give a positive number (without either: %s)", o.episodes, o.budget, twinDefaultBudget)
	}
	if o.episodes == 0 && o.budget == 0 {
		o.budget = twinDefaultBudget
	}
	if o.workers < 1 {
		return fmt.Errorf("--workers %d: want at least 1", o.workers)
	}
	return nil
}

// sameAsStart refuses an --algo, --spec or --hidden other than what the
// starting model has: a fine-tuning run keeps its network.
func (o *trainOpts) sameAsStart(cfg train.Config) error {
	if o.spec != "" && o.spec != cfg.Spec {
		return fmt.Errorf("--spec %s: %s speaks %s; a fine-tuning run keeps its observation and action spec (leave --spec out)", o.spec, o.from, cfg.Spec)
	}
	return o.keepsModel(o.from, cfg.Algo, cfg.Hidden)
}

// keepsModel checks --algo and --hidden against the model a run starts
// from (named name): a run from a model keeps its algorithm and hidden
// layers. It sets --algo to the model's.
func (o *trainOpts) keepsModel(name, algo string, hidden []int) error {
	if o.algoSet && o.algo != algo {
		return fmt.Errorf("--algo %s: %s is a %s model; a fine-tuning run keeps its algorithm (leave --algo out)", o.algo, name, algo)
	}
	o.algo = algo
	if len(o.hidden) > 0 && !slices.Equal(o.hidden, hidden) {
		return fmt.Errorf("--hidden %v: %s has hidden layers %v; a fine-tuning run keeps its architecture (leave --hidden out)", o.hidden, name, hidden)
	}
	return nil
}

// twinOverrides applies --randomise (over the twin's randomisation) or
// --no-randomise, --reward, --gamma, --lr and --checkpoint-every to cfg, and
// --episodes.
func (o *trainOpts) twinOverrides(cfg *train.Config) error {
	if o.noRandomise && o.randomise != "" {
		return fmt.Errorf("--randomise and --no-randomise: give one or the other")
	}
	if o.noRandomise {
		cfg.Randomise = train.Randomisation{Off: true}
	}
	if o.randomise != "" {
		r, err := parseRandomiseOver(o.randomise, cfg.Randomise)
		if err != nil {
			return err
		}
		cfg.Randomise = r
	}
	if o.reward != "" {
		w, err := parseRewardOver(o.reward, *cfg.Reward)
		if err != nil {
			return err
		}
		cfg.Reward = w
	}
	if o.gammaSet {
		cfg.Gamma = o.gamma // 0 too: a discount of 0
	}
	if o.lr != 0 {
		cfg.LR = o.lr
	}
	cfg.CheckpointEvery, cfg.Episodes = o.checkpointEvery, o.episodes
	return cfg.Validate()
}

// defaultStart is the embedded model a fine-tuning run on a fabric starts
// from when --from is not given: the one the agent's default policy runs
// on its hosts' ports, builtin:400g when every host link runs at
// builtin.HighRateFrom or faster, else builtin.
func defaultStart(cfg simenv.Config) string {
	t, hosts, fast := cfg.Topology, 0, 0
	for _, l := range t.Links {
		if l.A < 0 || l.B < 0 || l.A >= len(t.Nodes) || l.B >= len(t.Nodes) || t.Nodes[l.A].Switch && t.Nodes[l.B].Switch {
			continue
		}
		hosts++
		if l.RateBps >= builtin.HighRateFrom {
			fast++
		}
	}
	if hosts > 0 && fast == hosts {
		return policy.HighRateSpec
	}
	return policy.BuiltinSpec
}

// loadStart loads the model a fine-tuning run starts from: builtin,
// builtin:400g (the embedded model for 400 Gb/s and faster ports), or
// model:REF from the registry db. It returns the policy spec the
// evaluation runs it as and its validated decision intervals.
func loadStart(from, db string) (ft train.FineTune, spec, valid string, err error) {
	switch ref, isModel := strings.CutPrefix(from, policy.ModelPrefix); {
	case from == policy.BuiltinSpec || from == policy.HighRateSpec:
		load := builtin.Model
		if from != policy.BuiltinSpec {
			load = builtin.HighRateModel
		}
		m, err := load()
		if err != nil {
			return ft, "", "", err
		}
		valid = builtin.ValidatedIntervalMin.String() + "-" + builtin.ValidatedIntervalMax.String()
		return train.FineTune{From: from, Model: m}, from, valid, nil
	case isModel && ref != "" && !strings.Contains(ref, ":"):
		m, err := models.Load(db, ref)
		if err != nil {
			return ft, "", "", fmt.Errorf("--from %s: %w", from, err)
		}
		spec = policy.ModelPrefix + m.Ref()
		return train.FineTune{From: spec, Model: m}, spec, m.Hyper["validated_interval"], nil
	}
	return ft, "", "", fmt.Errorf("--from %q: want builtin, builtin:400g or model:NAME[@V] (a learned ECN policy; no preference)", from)
}

var twinNameUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// twinModelName is the default model name of a fine-tuning on the twin
// named scenario: "twin-SCENARIO", cut to a valid name.
func twinModelName(scenario string) string {
	n := "twin-" + strings.Trim(twinNameUnsafe.ReplaceAllString(scenario, "-"), "-")
	if len(n) > 64 {
		n = n[:64]
	}
	return strings.TrimRight(n, "-.")
}

// twinCommand is the canonical command line of a fine-tuning run.
func (o trainOpts) twinCommand() string {
	var b strings.Builder
	b.WriteString("ecntune train --twin " + filepath.ToSlash(o.twin) + " --from " + o.from)
	extra := fmt.Sprintf(" --seeds %d", o.twinSeeds)
	if o.twinAgent != "" {
		extra += " --agent " + filepath.ToSlash(o.twinAgent)
	}
	for _, f := range o.twinRivals {
		extra += " --rival " + filepath.ToSlash(f)
	}
	if o.twinReplace {
		extra += " --replace-promoted"
	}
	o.writeRunFlags(&b, extra)
	if o.checkpointEvery != 0 {
		b.WriteString(" --checkpoint-every " + strconv.Itoa(o.checkpointEvery))
	}
	return b.String()
}
