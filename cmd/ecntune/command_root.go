package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/train"
)

// newRootCmd builds the whole command tree (a fresh one per call, so that
// tests get fresh flags).
func newRootCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "ecntune",
		Short:         "Tune ECN (Kmin/Kmax/Pmax) and PFC headroom of RoCEv2 fabrics with a learned policy",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetVersionTemplate("ecntune {{.Version}}\n")
	cmd.AddCommand(
		newDemoCmd(),
		newSimCmd(),
		newEvalCmd(),
		newTrainCmd(),
		newModelsCmd(),
		newAgentCmd(),
		newSimswitchCmd(),
		newBenchCmd(),
		newFleetCmd(),
		newTwinCmd(),
	)
	return cmd
}

// version is what --version prints: the module version (or "devel"), the
// VCS revision the binary was built from, the observation and action
// specs a model must have been trained with, and the Go version.
func version() string {
	mod := "devel"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		mod = info.Main.Version
	}
	rev := train.BuildRevision()
	if rev == "" {
		rev = "unknown revision"
	}
	return fmt.Sprintf("%s (%s; models %s/%s; %s)", mod, rev, env.SpecVersion, env.ActionSpecVersion, runtime.Version())
}

// groupHelp runs a command that only groups others: it prints the help.
// With Args: cobra.NoArgs beside it, a mistyped subcommand ("models
// promte") is an error that names it and exits 1; without, cobra printed
// the help and exited 0, and "ecntune models promte x && deploy" went on.
func groupHelp(cmd *cobra.Command, _ []string) error { return cmd.Help() }
