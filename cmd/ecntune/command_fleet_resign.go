package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/fleet"
)

func newFleetResignCmd() *cobra.Command {
	var cfgPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resign",
		Short: "Make the fleet's leader give the lead up (before its maintenance); another member is elected",
		Long: `The leader answers, resigns and campaigns again behind the others: the member that has campaigned
longest leads next and places the switches. Owners keep their switches: only who places them changes.
Alone in its fleet, the leader is elected again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var h fleet.Handoff
			_, err := withFleet(cmd.Context(), cfgPath, func(ctx context.Context, cli *clientv3.Client, f *config.Fleet) (err error) {
				h, err = fleet.Resign(ctx, cli, f.Name, whoAsks())
				return err
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				return json.NewEncoder(out).Encode(h)
			case h.Reelected:
				fmt.Fprintf(out, "leader %s resigned and was elected again: no other member is up\n", h.From)
			default:
				fmt.Fprintf(out, "leader %s resigned; %s leads (after %v)\n", h.From, h.To, h.Took.Round(time.Millisecond))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "an agent configuration with a fleet: key")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the hand-off as JSON")
	return cmd
}

// whoAsks names the operator's request in the leader's log.
func whoAsks() string {
	h, _ := os.Hostname()
	return "ecntune fleet on " + h
}
