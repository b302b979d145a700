package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent"
	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/journal"
)

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
/recommendations, /changes (the audit log, paged: ?target=&since=&limit=&before=),
/changes/last (the last batch), /healthz (503 with the reasons when a target's telemetry is older
than 3 intervals or no target has sent any). Per-queue metrics cover the metrics-queues most
congested queues (default 20, or all); agent/metrics/METRICS.md lists the series.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuneGCForAgent()
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
	cmd.AddCommand(newAgentPendingCmd(), newAgentApproveCmd(), newAgentHistoryCmd(), newAgentRecommendationsCmd(), newAgentReportCmd(), newAgentRollbackCmd(),
		newAgentPauseCmd(), newAgentResumeCmd())
	return cmd
}

// runAgent builds the agent from a resolved configuration and runs it
// until ctx ends.
func runAgent(ctx context.Context, cfg *config.Config, dryRun bool, log *slog.Logger) error {
	if dryRun && cfg.Mode != config.ModeClosedLoop {
		return fmt.Errorf("--dry-run runs a closed loop without its Sets; this configuration's mode is %s, which never writes: drop --dry-run, or set mode: closed-loop", cfg.Mode)
	}
	a, err := agent.Open(ctx, cfg, agent.Deps{Resolver: policyResolver(cfg.Registry), Logger: log, DryRun: dryRun})
	if err != nil {
		return err
	}
	defer a.Close()
	go watchPromotions(ctx, cfg.Policy, a.Model(), registryModelInfo(cfg.Registry), log, promotionCheckEvery)
	return a.Run(ctx)
}

// loadAgentConfig reads a configuration file (presets resolved).
func loadAgentConfig(path string) (*config.Config, error) { return config.Load(path) }

func openExistingJournal(path string) (*journal.Journal, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		// said as history and report say it (it read "does not exist")
		return nil, fmt.Errorf("agent db %s is a directory: give the agent's db file", path)
	}
	if !journal.FileExists(path) {
		return nil, fmt.Errorf("agent db %s does not exist", path)
	}
	return journal.OpenJournal(path, agent.DefaultLockTimeout)
}
