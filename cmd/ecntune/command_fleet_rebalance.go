package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/fleet"
)

func newFleetRebalanceCmd() *cobra.Command {
	var cfgPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rebalance",
		Short: "Ask the fleet's leader for a rebalance round now (at most its max-moves switches move)",
		Long: `The leader re-places every switch at once, moving switches from members above their fair share to
members below it (a member that joined late), at most MaxMoves (32) a round as every round; the answer
says how many moved and how many a rebalance would still move (run it again, or wait for the leader's
rounds, one every ttl).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var r fleet.Result
			_, err := withFleet(cmd.Context(), cfgPath, func(ctx context.Context, cli *clientv3.Client, f *config.Fleet) (err error) {
				r, err = fleet.Rebalance(ctx, cli, f.Name, whoAsks())
				return err
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(out).Encode(r)
			}
			fmt.Fprintf(out, "leader %s placed %d members' switches: %d moved (%d rebalanced); %d more to move in later rounds\n",
				r.Leader, r.Members, r.Moved, r.Rebalanced, r.Pending)
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "an agent configuration with a fleet: key")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the leader's answer as JSON")
	return cmd
}
