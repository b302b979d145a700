package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent"
	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// agentRollbackOpts are the flags of "ecntune agent rollback".
type agentRollbackOpts struct {
	cfgPath, target, to, db string
	dryRun, all, force      bool
	// fleetAudit: in a fleet, the audit entries kept in etcd per switch
	// (every member's); nil outside one
	fleetAudit map[string][]core.AuditEntry
	// share: in a fleet, how the rollback's own entries reach the
	// fleet's audit (nil outside one, and in a dry run)
	share *agent.ManualShare
}

func newAgentRollbackCmd() *cobra.Command {
	var o agentRollbackOpts
	cmd := &cobra.Command{
		Use:   "rollback",
		Short: "Undo changes of one target, or of all, from the audit log (the agent must be stopped)",
		Long: `Undo the agent's changes on one target (--target), or on every target of the configuration
(--all: in an incident, the whole fabric back; one target that fails does not stop the others,
and the command fails naming each that did). Without --to: each queue's last change, when the
agent made it; a queue whose last change is a rollback (of any kind: the guard's rollback,
read-back or revert, a safety repair, a manual rollback) is left alone, so a second run, one
after --to baseline, or one after the guard backed a change out, says "nothing to undo" instead
of re-applying a change. With --to TIME:
every change made since that time. With --to baseline: every queue back to what it ran before
the agent's first change to it. Each write is journaled before it is sent and read back after,
like the agent's own; a queue already at the setting to restore is left alone, and so is one
that no longer runs the setting the audit log says the agent left (the switch restarted, or
another writer set it): a write there would overwrite that setting, not undo the agent's
(--force writes it all the same). --dry-run reads the switch too, when it answers, and says
which queues would be left alone. The agent database is locked while an agent runs: stop it first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgentRollback(cmd, o) },
	}
	cmd.Flags().StringVar(&o.cfgPath, "config", "", "agent configuration (targets and db)")
	cmd.Flags().StringVar(&o.target, "target", "", "target to roll back")
	cmd.Flags().BoolVar(&o.all, "all", false, "roll back every target of the configuration")
	cmd.Flags().StringVar(&o.to, "to", "", "restore the settings as they were at this time (duration ago, e.g. 10m, or RFC 3339), or baseline: before the agent's first change")
	cmd.Flags().StringVar(&o.db, "db", "", "agent database (default: the config's db)")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the plan, change nothing")
	cmd.Flags().BoolVar(&o.force, "force", false, "also write queues that no longer run the setting the audit log says the agent left")
	return cmd
}

// runAgentRollback works out each target's undo plan from the audit log,
// prints it and, unless --dry-run, applies it to the target.
func runAgentRollback(cmd *cobra.Command, o agentRollbackOpts) error {
	switch {
	case o.all && o.target != "":
		return errors.New("--target and --all: give one")
	case !o.all && o.target == "":
		return errors.New("--target is required (or --all for every target)")
	case o.cfgPath == "":
		return errors.New("--config is required (it says how to reach the target and where the db is)")
	}
	cfg, err := config.Load(o.cfgPath)
	if err != nil {
		return err
	}
	targets, terr := rollbackTargets(cfg, o)
	toNs, err := rollbackTo(o.to)
	if err != nil {
		return err
	}
	if cfg.Fleet != nil && !o.dryRun {
		fence, err := rollbackFleetCheck(cmd.Context(), o.cfgPath, targets)
		if err != nil {
			return err
		}
		// the rollback's entries go to the fleet's audit too, as the
		// loop's, under the condition just checked (they went to this
		// member's log alone: a rollback or history --fleet from etcd
		// did not see them)
		cfgPath := o.cfgPath
		o.share = &agent.ManualShare{Member: cfg.Fleet.Member, Put: func(ctx context.Context, target string, es []core.AuditEntry, mems []core.QueueMemory) error {
			_, err := withFleet(ctx, cfgPath, func(ctx context.Context, cli *clientv3.Client, f *config.Fleet) error {
				return fleet.RecordManual(ctx, cli, f.Name, fence, target, es, mems)
			})
			return err
		}, Memory: func(ctx context.Context, target string) (ms []core.QueueMemory, err error) {
			_, err = withFleet(ctx, cfgPath, func(ctx context.Context, cli *clientv3.Client, f *config.Fleet) error {
				ms, err = fleet.ReadMemory(ctx, cli, f.Name, target)
				return err
			})
			return ms, err
		}}
	}
	db := o.db
	if db == "" {
		db = cfg.DB
	}
	if terr != nil {
		// a target the configuration no longer lists: said with what the
		// log keeps of it, if the log can be read
		if j, err := openExistingJournal(db); err == nil {
			left := leftBehind(j, cfg, o.target)
			j.Close()
			if len(left) > 0 {
				return fmt.Errorf("%w, but the agent db has %s: add it back to the configuration (its address) to roll it back", terr, left[0])
			}
		}
		return terr
	}
	j, err := openExistingJournal(db)
	if err != nil {
		return err
	}
	defer j.Close()
	if o.all {
		// the targets the configuration no longer lists keep what the agent
		// set on them: named, not passed over in silence
		for _, l := range leftBehind(j, cfg, "") {
			fmt.Fprintf(cmd.ErrOrStderr(), "not rolled back: %s, not in %s (add it back, its address, to roll it back)\n", l, o.cfgPath)
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := cmd.OutOrStdout()
	if cfg.Fleet != nil {
		// the switches' changes by the other members (a previous owner's
		// before a failover) are in the fleet's audit, not in this log: a
		// plan from this log alone took the setting a previous owner
		// left for the baseline
		if o.fleetAudit, err = rollbackFleetAudit(ctx, o.cfgPath); err != nil {
			if !o.dryRun {
				return err
			}
			fmt.Fprintf(out, "the plan below is from this member's audit log only, without the other members' changes: %v\n", err)
		}
	}
	var failed []error
	for _, tc := range targets {
		if o.all {
			fmt.Fprintf(out, "target %s:\n", tc.Name)
		}
		if err := rollbackTarget(ctx, out, cfg, tc, j, toNs, o); err != nil {
			if !o.all {
				return err
			}
			fmt.Fprintf(out, "  failed: %v\n", err)
			failed = append(failed, fmt.Errorf("target %s: %w", tc.Name, err))
		}
	}
	return errors.Join(failed...)
}

// rollbackFleetCheck refuses a rollback in a fleet while a live member
// owns one of the targets and the fleet is not paused: the rollback would
// be a second writer beside the owner, unfenced (it wrote switches other
// members were writing, from a plan of this member's old audit log). With
// the fleet paused (ecntune agent pause), no member writes. It returns the
// fence the rollback's entries are written to the fleet's audit under.
func rollbackFleetCheck(ctx context.Context, cfgPath string, targets []config.Target) (fleet.ManualFence, error) {
	var fence fleet.ManualFence
	_, err := withFleet(ctx, cfgPath, func(ctx context.Context, cli *clientv3.Client, f *config.Fleet) error {
		var p fleet.Pause
		var err error
		p, fence, err = fleet.ReadManualFence(ctx, cli, f.Name)
		if err != nil {
			return err
		}
		if p.Paused {
			return nil
		}
		st, err := fleet.ReadStatus(ctx, cli, f.Name)
		if err != nil {
			return err
		}
		owner := map[string]string{}
		for _, s := range st.Switches {
			owner[s.Switch] = s.Owner
		}
		var owned []string
		for _, t := range targets {
			if m := owner[t.Name]; m != "" {
				owned = append(owned, fmt.Sprintf("%s (member %s)", t.Name, m))
			}
		}
		if len(owned) > 0 {
			return fmt.Errorf("fleet %s is running and its members own %s: a rollback now would write beside them; pause the fleet first "+
				"(ecntune agent pause --url http://MEMBER:PORT --reason ..., or --config for a stopped member: every member stops writing), roll back, then resume",
				f.Name, strings.Join(owned, ", "))
		}
		return nil
	})
	return fence, err
}

// rollbackFleetAudit reads the audit entries the fleet keeps in etcd, per
// switch.
func rollbackFleetAudit(ctx context.Context, cfgPath string) (map[string][]core.AuditEntry, error) {
	out := map[string][]core.AuditEntry{}
	fl, err := withFleet(ctx, cfgPath, func(ctx context.Context, cli *clientv3.Client, f *config.Fleet) error {
		es, err := fleet.ReadAudit(ctx, cli, f.Name, "")
		for _, e := range es {
			out[e.Target] = append(out[e.Target], e)
		}
		return err
	})
	if err != nil {
		name := ""
		if fl != nil {
			name = " " + fl.Name
		}
		return nil, fmt.Errorf("the fleet%s's audit (the changes of its other members, a previous owner's) is needed for the plan: %w", name, err)
	}
	return out, nil
}

// rollbackTargets are the targets --target or --all name.
func rollbackTargets(cfg *config.Config, o agentRollbackOpts) ([]config.Target, error) {
	if o.all {
		return cfg.Targets, nil
	}
	for _, t := range cfg.Targets {
		if t.Name == o.target {
			return []config.Target{t}, nil
		}
	}
	return nil, fmt.Errorf("--target: %q is not a target of %s", o.target, o.cfgPath)
}

// leftBehind names the targets (only is one, "" every one) the audit log
// has changes the switch took of while cfg does not list them: "leaf0 (12
// changes applied, the last at TIME)".
func leftBehind(j *journal.Journal, cfg *config.Config, only string) []string {
	es, err := j.Entries(only, 0)
	if err != nil {
		return nil
	}
	listed := map[string]bool{}
	for _, t := range cfg.Targets {
		listed[t.Name] = true
	}
	n, last := map[string]int{}, map[string]int64{}
	for _, e := range es {
		if listed[e.Target] || !e.Took() || e.Kind == core.KindManual {
			continue
		}
		n[e.Target]++
		last[e.Target] = max(last[e.Target], e.TimeNs)
	}
	var out []string
	for _, t := range slices.Sorted(maps.Keys(n)) {
		out = append(out, fmt.Sprintf("%s (%d changes applied, the last at %s)", t, n[t], time.Unix(0, last[t]).UTC().Format(time.RFC3339)))
	}
	return out
}

// rollbackTo reads --to: "" (each queue's last change), baseline, a
// duration ago or an RFC 3339 time.
func rollbackTo(to string) (int64, error) {
	switch to {
	case "":
		return 0, nil
	case "baseline":
		return agent.UndoBaseline, nil
	}
	t, err := parseSince(to, time.Now())
	if err != nil {
		return 0, fmt.Errorf("--to: %w", err)
	}
	return t.UnixNano(), nil
}

// rollbackTarget prints one target's undo plan and, unless dryRun,
// applies it. Audit entries a stopped or crashed agent left open are first
// judged by what the switch runs (agent.ReconcileOpen), so that the plan
// undoes a change the switch took (with dryRun, judged and not recorded).
func rollbackTarget(ctx context.Context, out io.Writer, cfg *config.Config, tc config.Target, j *journal.Journal, toNs int64, o agentRollbackOpts) error {
	dryRun := o.dryRun
	es, err := j.Entries(tc.Name, 0)
	if err != nil {
		return err
	}
	var sw *gnmiclient.Switch
	defer func() {
		if sw != nil {
			sw.Close()
		}
	}()
	dial := func() (*gnmiclient.Switch, error) {
		if sw == nil {
			if sw, err = gnmiclient.Dial(ctx, tc, cfg.SampleInterval); err != nil {
				sw = nil
				return nil, err
			}
		}
		return sw, nil
	}
	if slices.ContainsFunc(es, func(e core.AuditEntry) bool { return e.State == core.StateIntent || e.State == core.StateUnreachable }) {
		res, err := reconcileOpen(ctx, tc, j, dial, dryRun)
		switch {
		case err != nil && dryRun:
			// the plan without them, said: an unreachable switch is what
			// a dry run in an incident meets
			fmt.Fprintf(out, "open audit entries (a change set but not judged) left out of the plan: %v\n", err)
		case err != nil:
			return fmt.Errorf("open audit entries (a change set but not judged) need the switch's current settings: %w", err)
		}
		byseq := map[uint64]core.Resolution{}
		var waiting []string
		for _, r := range res {
			byseq[r.Seq] = r
			why := ""
			if r.Msg != "" {
				why = " (" + r.Msg + ")"
			}
			if r.Wait {
				// its confirmed commit may still be pending: the switch
				// has not said yet
				fmt.Fprintf(out, "audit %d open, left open: %s\n", r.Seq, r.Msg)
				waiting = append(waiting, fmt.Sprint(r.Seq))
				continue
			}
			fmt.Fprintf(out, "audit %d open, the switch says: %s%s\n", r.Seq, r.State, why)
		}
		if len(waiting) > 0 {
			// Which setting such a queue keeps is not known until the
			// switch confirms or reverts the commit, and it refuses other
			// writes meanwhile: a plan now could undo the wrong change,
			// and its Set would be refused or race the revert.
			if !dryRun {
				return fmt.Errorf("target %s: the confirmed commit of audit %s may still be pending on the switch: run agent rollback again once it has settled (the time is above)",
					tc.Name, strings.Join(waiting, ", "))
			}
			fmt.Fprintf(out, "the plan below is not final: audit %s may still be pending on the switch\n", strings.Join(waiting, ", "))
		}
		for i, e := range es {
			if r, ok := byseq[e.Seq]; ok {
				es[i].State, es[i].Got = r.State, r.Got
			}
		}
	}
	if o.fleetAudit != nil {
		es = agent.MergeFleetAudit(es, o.fleetAudit[tc.Name])
	}
	plan := agent.UndoPlan(es, tc.Name, toNs)
	if len(plan) == 0 {
		fmt.Fprintln(out, "nothing to undo")
		return nil
	}
	for _, c := range plan {
		fmt.Fprintf(out, "%s: %s -> %s (%s)\n", c.Key, fmtSetting(c.Old), fmtSetting(c.New), c.Reason)
	}
	if dryRun {
		dryRunReads(ctx, out, tc, dial, plan, o.force)
		return nil
	}
	s, err := dial()
	if err != nil {
		return err
	}
	if o.force {
		plan = forced(plan)
	}
	ctx, cancel := context.WithTimeout(ctx, tc.Timeout+5*time.Second)
	defer cancel()
	written, skipped, err := agent.ApplyManualShared(ctx, j, s, plan, "rollback/"+cfg.Owner, time.Now, o.share)
	for _, e := range written {
		fmt.Fprintf(out, "audit %d %s: %s\n", e.Seq, e.Key, e.State)
	}
	printLeftAlone(out, skipped)
	return err
}

// forced is plan to be written whatever each queue runs (--force): no Old
// for ApplyManual to hold it to.
func forced(plan []core.Change) []core.Change {
	out := slices.Clone(plan)
	for i := range out {
		out[i].Old = env.Setting{}
	}
	return out
}

// printLeftAlone says which queues an undo left alone: they no longer run
// the setting the audit log says the agent left.
func printLeftAlone(out io.Writer, skipped []core.Change) {
	for _, c := range skipped {
		fmt.Fprintf(out, "%s: left alone: the switch runs %s, not what the agent left (restarted, or set by another); --force writes %s over it\n",
			c.Key, fmtSetting(c.Old), fmtSetting(c.New))
	}
}

// dryRunReads reads what the plan's queues run, when the switch answers,
// and says which the rollback would leave alone (those that no longer run
// the setting the audit log says) or find already restored.
func dryRunReads(ctx context.Context, out io.Writer, tc config.Target, dial func() (*gnmiclient.Switch, error), plan []core.Change, force bool) {
	s, err := dial()
	var cur map[env.QueueKey]env.Setting
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, tc.Timeout+5*time.Second)
		defer cancel()
		keys := make([]env.QueueKey, len(plan))
		for i, c := range plan {
			keys[i] = c.Key
		}
		cur, err = s.Read(rctx, keys)
	}
	if err != nil {
		fmt.Fprintf(out, "(the switch was not read: %v; applied, the rollback reads it first and leaves alone a queue that no longer runs the setting the audit log says)\n", err)
		return
	}
	if force {
		plan = forced(plan)
	}
	_, skipped, there := agent.SortManual(plan, cur)
	for _, c := range there {
		fmt.Fprintf(out, "%s: already runs %s: nothing to write\n", c.Key, fmtSetting(c.Old))
	}
	printLeftAlone(out, skipped)
}

// reconcileOpen judges the target's open audit entries by what its switch
// runs (agent.ReconcileOpen; with dryRun, nothing is recorded).
func reconcileOpen(ctx context.Context, tc config.Target, j *journal.Journal, dial func() (*gnmiclient.Switch, error), dryRun bool) ([]core.Resolution, error) {
	s, err := dial()
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, tc.Timeout+5*time.Second)
	defer cancel()
	return agent.ReconcileOpen(rctx, j, s, time.Now, dryRun)
}
