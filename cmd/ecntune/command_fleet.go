package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/fleet"
)

func newFleetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "See and steer a fleet of agents on etcd (the configuration's fleet:)",
		Long: `A fleet is several closed-loop agents sharing a fabric on etcd: one elected agent places the
switches, each switch is written by its owner only. 'status' shows the members, the leader and who
owns each switch with its fencing token; 'drain' moves a member's switches to the others (before a
maintenance) and --undo gives it its share back; 'rebalance' asks the leader for a rebalance round now;
'resign' makes the leader hand the lead to another member. Each agent answers the same over HTTP:
GET /fleet, POST /fleet/drain?member=M[&undo=1], POST /fleet/rebalance, POST /fleet/resign.`,
		Args: cobra.NoArgs, // an unknown subcommand is an error, not the help and exit 0
		RunE: groupHelp,
	}
	cmd.AddCommand(newFleetStatusCmd(), newFleetDrainCmd(), newFleetRebalanceCmd(), newFleetResignCmd())
	return cmd
}

// fleetClient connects to the etcd of the fleet a configuration names
// (over TLS with fleet.tls).
func fleetClient(ctx context.Context, cfgPath string) (*clientv3.Client, *config.Fleet, error) {
	if cfgPath == "" {
		return nil, nil, errors.New("--config is required (an agent configuration with a fleet: key)")
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Fleet == nil {
		return nil, nil, fmt.Errorf("%s has no fleet: key (this agent is not in a fleet)", cfgPath)
	}
	tc, err := cfg.Fleet.TLS.Config()
	if err != nil {
		return nil, nil, err
	}
	cli, err := fleet.Dial(ctx, cfg.Fleet.Endpoints, tc)
	if err != nil {
		return nil, nil, err
	}
	return cli, cfg.Fleet, nil
}

// withFleet runs f against the etcd of the fleet a configuration names,
// within 10 s, and returns the fleet.
func withFleet(ctx context.Context, cfgPath string, f func(context.Context, *clientv3.Client, *config.Fleet) error) (*config.Fleet, error) {
	cli, fl, err := fleetClient(ctx, cfgPath)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return fl, f(ctx, cli, fl)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
