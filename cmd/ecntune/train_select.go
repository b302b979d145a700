package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/eval"
	"github.com/ecntune/ecntune/policy"
	"github.com/ecntune/ecntune/simenv/scenario"
	"github.com/ecntune/ecntune/train"
	"github.com/ecntune/ecntune/train/rl"
)

// Defaults of train --select-on.
const (
	selectDefaultSeeds = 4
	selectDefaultEvery = 50
)

// addSelectFlags registers the flags of train --select-on.
func addSelectFlags(f *pflag.FlagSet, o *trainOpts) {
	f.StringArrayVar(&o.selectOn, "select-on", nil, "validation scenario (YAML; repeat): every --select-every rounds the network is judged on them "+
		"against the frontier of fixed settings (geometric mean frontier ratio, any drop disqualifies), and the run stores the best network judged, "+
		"not its last (never give a held-out scenario here; an ECN model without a preference input: not with --preference-scale or --headroom-for)")
	f.IntVar(&o.selectSeeds, "select-seeds", 0, fmt.Sprintf("with --select-on: seeds per validation scenario (default %d)", selectDefaultSeeds))
	f.IntVar(&o.selectEvery, "select-every", 0, fmt.Sprintf("with --select-on: rounds between judgements (default %d; and after the last)", selectDefaultEvery))
}

// selectFlags checks --select-on's flags and fills in their defaults.
func (o *trainOpts) selectFlags(changed func(string) bool) error {
	if len(o.selectOn) == 0 {
		for _, fl := range []string{"select-seeds", "select-every"} {
			if changed(fl) {
				return fmt.Errorf("--%s goes with --select-on FILE", fl)
			}
		}
		return nil
	}
	// the judge runs the network as an ECN policy without a preference
	// input (policy.NewLearned): these failed at the first judgement,
	// after the frontier and --select-every rounds, storing nothing
	switch {
	case o.prefScale != 0:
		return fmt.Errorf("--select-on with --preference-scale: the judge runs an ECN policy without a preference input and cannot judge a preference-conditioned model; leave one out")
	case o.headroomFor != "":
		return fmt.Errorf("--select-on with --headroom-for: the judge runs an ECN policy and cannot judge a switch-level headroom model; leave one out")
	}
	// an explicit 0 is refused below, as 1 and -1 are (it ran as the
	// default)
	if !changed("select-seeds") {
		o.selectSeeds = selectDefaultSeeds
	}
	if !changed("select-every") {
		o.selectEvery = selectDefaultEvery
	}
	switch {
	case o.selectSeeds < 2 || o.selectSeeds > 100:
		return fmt.Errorf("--select-seeds %d: allowed 2..100 (a frontier ratio needs paired seeds)", o.selectSeeds)
	case o.selectEvery < 1:
		return fmt.Errorf("--select-every %d: want at least 1 round", o.selectEvery)
	}
	for _, v := range o.selectOn {
		for _, s := range o.scenarios {
			if filepath.Clean(v) == filepath.Clean(s) {
				return fmt.Errorf("--select-on %s is also a training --scenario: judge on scenarios the model does not train on", v)
			}
		}
	}
	return nil
}

// writeSelectFlags adds --select-on's flags to a recorded command line.
func (o trainOpts) writeSelectFlags(b *strings.Builder) {
	for _, v := range o.selectOn {
		b.WriteString(" --select-on " + filepath.ToSlash(v))
	}
	if len(o.selectOn) > 0 {
		b.WriteString(" --select-seeds " + strconv.Itoa(o.selectSeeds) + " --select-every " + strconv.Itoa(o.selectEvery))
	}
}

// selector builds the judge of train --select-on: the frontier of fixed
// settings on the validation scenarios, run once now (it says so on w),
// then each snapshot as a learned policy against it. basis names what it
// judges by (train.Hooks.SelectBasis): each scenario's file and sha256,
// and the seeds.
func (o trainOpts) selector(w io.Writer, cat env.Catalogue) (judge func(train.Round, *rl.Net) (float64, string, error), basis string, err error) {
	var scs []eval.Scenario
	var names []string
	for _, p := range o.selectOn {
		sc, err := scenario.LoadNamed(p)
		if err != nil {
			return nil, "", fmt.Errorf("--select-on: %w", err)
		}
		scs = append(scs, eval.Scenario{Named: sc})
		names = append(names, sc.Path+"@"+sc.SHA256)
	}
	basis = strings.Join(names, ",") + " seeds " + strconv.Itoa(o.selectSeeds)
	fmt.Fprintf(w, "select: running the fixed settings on %d validation scenario(s), %d seeds each\n", len(scs), o.selectSeeds)
	y, err := eval.NewYardstick(scs, eval.Options{Seeds: o.selectSeeds, Workers: o.workers})
	if err != nil {
		return nil, "", fmt.Errorf("--select-on: %w", err)
	}
	best := 0.0
	return func(r train.Round, net *rl.Net) (float64, string, error) {
		pol, err := policy.NewLearned(o.name, net, cat, 0)
		if err != nil {
			return 0, "", err
		}
		j, err := y.Judge(pol, o.name)
		if err != nil {
			return 0, "", err
		}
		note := fmt.Sprintf("frontier ratio %.3f over %d validation scenarios, %d seeds; worst %.3f on %s", j.Score,
			len(scs), o.selectSeeds, j.Worst, j.WorstScenario)
		if j.Drops > 0 {
			note = fmt.Sprintf("%d drops on the validation scenarios", j.Drops)
		}
		mark := ""
		if best == 0 || j.Score < best {
			best, mark = j.Score, " (best so far)"
		}
		fmt.Fprintf(w, "select: round %d (episode %d): %s%s\n", r.Round, r.Episodes, note, mark)
		return j.Score, note, nil
	}, basis, nil
}
