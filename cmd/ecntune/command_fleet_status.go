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

func newFleetStatusCmd() *cobra.Command {
	var cfgPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the fleet's members, leader and each switch's owner",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st fleet.Status
			_, err := withFleet(cmd.Context(), cfgPath, func(ctx context.Context, cli *clientv3.Client, f *config.Fleet) (err error) {
				st, err = fleet.ReadStatus(ctx, cli, f.Name)
				return err
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				e := json.NewEncoder(out)
				e.SetIndent("", "  ")
				return e.Encode(st)
			}
			fmt.Fprintf(out, "fleet %s: %d members, leader %s, %d switches\n", st.Name, len(st.Members), orNone(st.Leader), len(st.Switches))
			fmt.Fprintf(out, "%-16s %-8s %-9s %5s %8s %9s\n", "MEMBER", "ZONE", "STATE", "OWNS", "ASSIGNED", "LEASE")
			for _, m := range st.Members {
				state := "active"
				if m.Draining {
					state = "draining"
				}
				if m.Leader {
					state += "*"
				}
				fmt.Fprintf(out, "%-16s %-8s %-9s %5d %8d %8ds\n", m.ID, orNone(m.Zone), state, m.Owns, m.Assigned, m.LeaseTTL)
			}
			fmt.Fprintf(out, "\n%-20s %-16s %-16s %s\n", "SWITCH", "ASSIGNED", "OWNER", "TOKEN")
			for _, s := range st.Switches {
				fmt.Fprintf(out, "%-20s %-16s %-16s %d\n", s.Switch, orNone(s.Assigned), orNone(s.Owner), s.Token)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "an agent configuration with a fleet: key")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
