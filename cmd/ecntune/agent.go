package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/policy"
)

func init() { rootCmd.AddCommand(newAgentCmd()) }

func presetLookup(name string) (env.Setting, error) {
	p, err := policy.Preset(name)
	if err != nil {
		return env.Setting{}, err
	}
	return p.Setting(units.RefRateBps), nil
}

// loadAgentConfig reads a configuration file and resolves its presets.
func loadAgentConfig(path string) (*agent.Config, error) {
	cfg, err := agent.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	if err := cfg.ResolvePresets(presetLookup); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", format)
}

func newAgentCmd() *cobra.Command {
	var (
		cfgPath   string
		dryRun    bool
		logFormat string
		logLevel  string
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the tuning agent against switches over gNMI (shadow mode or closed loop)",
		Long: `Run the tuning agent: subscribe to the switches' telemetry over gNMI, decide per lossless
queue with the configured policy, and either record recommendations (mode: shadow) or apply them
through the guardrails with a write-ahead audit log and read-back (mode: closed-loop).
Metrics and recommendations are served over HTTP (config key metrics): /metrics,
/recommendations, /changes, /healthz.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfgPath == "" {
				return errors.New("--config is required (see examples/agent-shadow.yaml)")
			}
			log, err := newLogger(cmd.ErrOrStderr(), logFormat, logLevel)
			if err != nil {
				return err
			}
			cfg, err := loadAgentConfig(cfgPath)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runAgent(ctx, cfg, dryRun, log)
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "agent configuration (YAML)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "closed loop without Sets: run the guardrails and audit what would be set")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	cmd.AddCommand(newAgentHistoryCmd(), newAgentRollbackCmd())
	return cmd
}

// runAgent builds the agent from a resolved configuration and runs it
// until ctx ends.
func runAgent(ctx context.Context, cfg *agent.Config, dryRun bool, log *slog.Logger) error {
	a, err := agent.Open(ctx, cfg, agent.Deps{Resolver: policyResolver(cfg.Registry), Logger: log, DryRun: dryRun})
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}

// parseSince accepts a duration back from now ("10m") or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := units.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (10m, 2h) nor an RFC 3339 time (2026-01-02T15:04:05Z)", s)
	}
	return t, nil
}

func openExistingJournal(path string) (*agent.Journal, error) {
	if !agent.FileExists(path) {
		return nil, fmt.Errorf("agent db %s does not exist", path)
	}
	return agent.OpenJournal(path, agent.DefaultLockTimeout)
}

func fmtSetting(s env.Setting) string {
	out := fmt.Sprintf("%s/%s/%s", units.FormatBytes(s.KminBytes), units.FormatBytes(s.KmaxBytes), env.FormatPmax(s.Pmax))
	if s.HeadroomBytes > 0 {
		out += " hr " + units.FormatBytes(s.HeadroomBytes)
	}
	return out
}

func newAgentHistoryCmd() *cobra.Command {
	var (
		db, target, since string
		asJSON            bool
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show the agent's audit log of changes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, err := parseSince(since, time.Now())
			if err != nil {
				return fmt.Errorf("--since: %w", err)
			}
			j, err := openExistingJournal(db)
			if err != nil {
				return err
			}
			defer j.Close()
			var fromNs int64
			if !from.IsZero() {
				fromNs = from.UnixNano()
			}
			es, err := j.Entries(target, fromNs)
			if err != nil {
				return err
			}
			return printHistory(cmd.OutOrStdout(), es, asJSON)
		},
	}
	cmd.Flags().StringVar(&db, "db", "agent.db", "agent database")
	cmd.Flags().StringVar(&target, "target", "", "only this target")
	cmd.Flags().StringVar(&since, "since", "", "only changes since a duration ago (10m) or an RFC 3339 time")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON lines")
	return cmd
}

func printHistory(w io.Writer, es []agent.AuditEntry, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, e := range es {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	if len(es) == 0 {
		fmt.Fprintln(w, "no changes recorded")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tQUEUE\tKIND\tSTATE\tOLD\tNEW\tMODEL\tREASON")
	for _, e := range es {
		reason := e.Reason
		if e.Error != "" {
			reason += " [" + e.Error + "]"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq,
			time.Unix(0, e.TimeNs).UTC().Format("2006-01-02T15:04:05.000Z"), e.Key, e.Kind, e.State,
			fmtSetting(e.Old), fmtSetting(e.New), e.Model, strings.ReplaceAll(reason, "\t", " "))
	}
	return tw.Flush()
}

func newAgentRollbackCmd() *cobra.Command {
	var (
		cfgPath, target, to, db string
		dryRun                  bool
	)
	cmd := &cobra.Command{
		Use:   "rollback",
		Short: "Undo changes of one target from the audit log (the agent must be stopped)",
		Long: `Undo the agent's changes on one target: without --to, the last applied change of each queue;
with --to, every change made after that time. Each write is journaled before it is sent
and read back after, like the agent's own. The agent database is locked while an agent runs:
stop it first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target == "" {
				return errors.New("--target is required")
			}
			if cfgPath == "" {
				return errors.New("--config is required (it says how to reach the target and where the db is)")
			}
			cfg, err := agent.LoadConfig(cfgPath)
			if err != nil {
				return err
			}
			var tc *agent.TargetConfig
			for i := range cfg.Targets {
				if cfg.Targets[i].Name == target {
					tc = &cfg.Targets[i]
				}
			}
			if tc == nil {
				return fmt.Errorf("--target: %q is not a target of %s", target, cfgPath)
			}
			var toNs int64
			if to != "" {
				t, err := parseSince(to, time.Now())
				if err != nil {
					return fmt.Errorf("--to: %w", err)
				}
				toNs = t.UnixNano()
			}
			if db == "" {
				db = cfg.DB
			}
			j, err := openExistingJournal(db)
			if err != nil {
				return err
			}
			defer j.Close()
			es, err := j.Entries(target, 0)
			if err != nil {
				return err
			}
			plan := agent.UndoPlan(es, target, toNs)
			out := cmd.OutOrStdout()
			if len(plan) == 0 {
				fmt.Fprintln(out, "nothing to undo")
				return nil
			}
			for _, c := range plan {
				fmt.Fprintf(out, "%s: %s -> %s (%s)\n", c.Key, fmtSetting(c.Old), fmtSetting(c.New), c.Reason)
			}
			if dryRun {
				return nil
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			sw, err := agent.DialSwitch(ctx, *tc, cfg.SampleInterval)
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
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "agent configuration (targets and db)")
	cmd.Flags().StringVar(&target, "target", "", "target to roll back")
	cmd.Flags().StringVar(&to, "to", "", "restore the settings as they were at this time (duration ago, e.g. 10m, or RFC 3339)")
	cmd.Flags().StringVar(&db, "db", "", "agent database (default: the config's db)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan, change nothing")
	return cmd
}
