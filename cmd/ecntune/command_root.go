package main

import "github.com/spf13/cobra"

// newRootCmd builds the whole command tree (a fresh one per call, so that
// tests get fresh flags).
func newRootCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "ecntune",
		Short:         "Tune ECN (Kmin/Kmax/Pmax) and PFC headroom of RoCEv2 fabrics with a learned policy",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.AddCommand(
		newSimCmd(),
		newEvalCmd(),
		newTrainCmd(),
		newModelsCmd(),
		newAgentCmd(),
		newSimswitchCmd(),
		newBenchCmd(),
	)
	return cmd
}
