package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/fleet"
)

func newFleetDrainCmd() *cobra.Command {
	var cfgPath, member string
	var undo bool
	cmd := &cobra.Command{
		Use:   "drain",
		Short: "Move a member's switches to the other members (--undo: give it its share back)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if member == "" {
				return errors.New("--member is required (ecntune fleet status lists the members)")
			}
			f, err := withFleet(cmd.Context(), cfgPath, func(ctx context.Context, cli *clientv3.Client, f *config.Fleet) error {
				return fleet.Drain(ctx, cli, f.Name, member, !undo)
			})
			if err != nil {
				return err
			}
			verb := "draining: its switches move to the other members at the leader's next placement"
			if undo {
				verb = "active again: it takes its share over the next rebalance rounds"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "member %s of fleet %s is %s\n", member, f.Name, verb)
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "an agent configuration with a fleet: key")
	cmd.Flags().StringVar(&member, "member", "", "the member to drain")
	cmd.Flags().BoolVar(&undo, "undo", false, "end the drain")
	return cmd
}
