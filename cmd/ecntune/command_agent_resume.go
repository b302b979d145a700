package main

import "github.com/spf13/cobra"

func newAgentResumeCmd() *cobra.Command {
	var o agentPauseOpts
	cmd := &cobra.Command{
		Use:   "resume",
		Short: "End a pause of the closed loop: the agent applies again from its next interval",
		Long: `End 'ecntune agent pause': from its next interval the agent applies its changes again, inside
its guardrails. Who resumed is kept in the agent database. Give --url for a running agent, or
--config (or --db) for a stopped one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgentPause(cmd, o, false) },
	}
	o.flags(cmd, false)
	return cmd
}
