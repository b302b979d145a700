package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/models"
	"github.com/ecntune/ecntune/policy"
)

// modelsFlags are the persistent flags of "models", shared by its
// subcommands.
type modelsFlags struct {
	db      string
	timeout time.Duration
}

// with opens the registry (read-only when ro; without creating it when
// mustExist), runs fn on it and closes it. Promote and rollback refuse a
// model this build cannot load unless force (the agent would refuse it at
// its next start).
func (f *modelsFlags) with(ro, mustExist, force bool, fn func(r *models.Registry) error) error {
	if f.timeout < 0 {
		return fmt.Errorf("--lock-timeout %v: must not be negative", f.timeout)
	}
	vet := func(m models.Model) error {
		if force {
			return nil
		}
		if err := policy.CheckModelSpec(m); err != nil {
			return fmt.Errorf("%w (--force promotes it anyway, for a fleet running the release that speaks it)", err)
		}
		if m.Weights != nil && m.ObsSpec != env.SwitchSpecVersion {
			// the network itself: one of 3 inputs labelled obs-v5 was
			// promoted, and every agent following it failed at its start
			if _, err := policy.LearnedFromModel(m.Name, m); err != nil {
				return fmt.Errorf("%w: no agent could run it", err)
			}
		}
		return nil
	}
	return withRegistry(modelsDBPath(f.db), models.Options{ReadOnly: ro, MustExist: mustExist, Timeout: f.timeout, Vet: vet}, fn)
}

// newModelsCmd builds the "models" command tree.
func newModelsCmd() *cobra.Command {
	f := &modelsFlags{}
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List, inspect, promote, roll back, export, import and delete trained models",
		Long: `models manages the model registry, a bbolt file holding trained policies with
their provenance (algorithm, spec versions, hyper-parameters, scenarios, seed,
evaluation, weights sha256). The file is --db, else $ECNTUNE_DB, else ` + modelsDefaultDB + `.

References: NAME (the promoted version, else the latest), NAME@N,
NAME@promoted, NAME@latest, or the numeric id.`,
		Args: cobra.NoArgs, // an unknown subcommand is an error, not the help and exit 0
		RunE: groupHelp,
	}
	cmd.PersistentFlags().StringVar(&f.db, "db", "", "registry file (default $ECNTUNE_DB or "+modelsDefaultDB+")")
	cmd.PersistentFlags().DurationVar(&f.timeout, "lock-timeout", models.DefaultTimeout, "how long to wait for another process holding the registry")
	cmd.AddCommand(newModelsListCmd(f), newModelsShowCmd(f), newModelsHistoryCmd(f), newModelsPromoteCmd(f),
		newModelsRollbackCmd(f), newModelsExportCmd(f), newModelsImportCmd(f), newModelsDeleteCmd(f), newModelsCompactCmd(f))
	return cmd
}

// modelsBefore describes the version retired by the last promotion event.
func modelsBefore(r *models.Registry, name string) string {
	h, err := r.History(name)
	if err != nil || len(h) == 0 || h[len(h)-1].Previous == 0 {
		return ""
	}
	return fmt.Sprintf("; %s@%d is retired", name, h[len(h)-1].Previous)
}
