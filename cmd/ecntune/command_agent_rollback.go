package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent"
	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/agent/journal"
)

// agentRollbackOpts are the flags of "ecntune agent rollback".
type agentRollbackOpts struct {
	cfgPath, target, to, db string
	dryRun                  bool
}

func newAgentRollbackCmd() *cobra.Command {
	var o agentRollbackOpts
	cmd := &cobra.Command{
		Use:   "rollback",
		Short: "Undo changes of one target from the audit log (the agent must be stopped)",
		Long: `Undo the agent's changes on one target. Without --to: each queue's last change, when the
agent made it; a queue whose last change is a rollback (of any kind) is left alone, so a second
run, or one after --to baseline, says "nothing to undo" instead of re-applying a change. With --to TIME:
every change made since that time. With --to baseline: every queue back to what it ran before
the agent's first change to it. Each write is journaled before it is sent and read back after,
like the agent's own; a queue already at the setting to restore is left alone. The agent
database is locked while an agent runs: stop it first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgentRollback(cmd, o) },
	}
	cmd.Flags().StringVar(&o.cfgPath, "config", "", "agent configuration (targets and db)")
	cmd.Flags().StringVar(&o.target, "target", "", "target to roll back")
	cmd.Flags().StringVar(&o.to, "to", "", "restore the settings as they were at this time (duration ago, e.g. 10m, or RFC 3339), or baseline: before the agent's first change")
	cmd.Flags().StringVar(&o.db, "db", "", "agent database (default: the config's db)")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the plan, change nothing")
	return cmd
}

// runAgentRollback works out the undo plan from the audit log, prints it
// and, unless --dry-run, applies it to the target.
func runAgentRollback(cmd *cobra.Command, o agentRollbackOpts) error {
	if o.target == "" {
		return errors.New("--target is required")
	}
	if o.cfgPath == "" {
		return errors.New("--config is required (it says how to reach the target and where the db is)")
	}
	cfg, err := config.Load(o.cfgPath)
	if err != nil {
		return err
	}
	var tc *config.Target
	for i := range cfg.Targets {
		if cfg.Targets[i].Name == o.target {
			tc = &cfg.Targets[i]
		}
	}
	if tc == nil {
		return fmt.Errorf("--target: %q is not a target of %s", o.target, o.cfgPath)
	}
	var toNs int64
	if o.to == "baseline" {
		toNs = agent.UndoBaseline
	} else if o.to != "" {
		t, err := parseSince(o.to, time.Now())
		if err != nil {
			return fmt.Errorf("--to: %w", err)
		}
		toNs = t.UnixNano()
	}
	db := o.db
	if db == "" {
		db = cfg.DB
	}
	j, err := openExistingJournal(db)
	if err != nil {
		return err
	}
	defer j.Close()
	es, err := j.Entries(o.target, 0)
	if err != nil {
		return err
	}
	plan := agent.UndoPlan(es, o.target, toNs)
	out := cmd.OutOrStdout()
	if len(plan) == 0 {
		fmt.Fprintln(out, "nothing to undo")
		return nil
	}
	for _, c := range plan {
		fmt.Fprintf(out, "%s: %s -> %s (%s)\n", c.Key, fmtSetting(c.Old), fmtSetting(c.New), c.Reason)
	}
	if o.dryRun {
		return nil
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return applyRollback(ctx, out, cfg, *tc, j, plan)
}

// applyRollback sets the plan on the target through the journal and
// prints each audit entry's outcome.
func applyRollback(ctx context.Context, out io.Writer, cfg *config.Config, tc config.Target, j *journal.Journal, plan []core.Change) error {
	sw, err := gnmiclient.Dial(ctx, tc, cfg.SampleInterval)
	if err != nil {
		return err
	}
	defer sw.Close()
	ctx, cancel := context.WithTimeout(ctx, tc.Timeout+5*time.Second)
	defer cancel()
	written, err := agent.ApplyManual(ctx, j, sw, plan, "rollback/"+cfg.Owner, time.Now)
	for _, e := range written {
		fmt.Fprintf(out, "audit %d %s: %s\n", e.Seq, e.Key, e.State)
	}
	return err
}
