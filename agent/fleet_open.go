package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/fleet"
)

// joinFleet makes the agent a member of its configuration's fleet: an
// etcd client, and a member whose ownership gates the agent's writes. The
// release closes both (the member gives its switches up).
func joinFleet(ctx context.Context, cfg *config.Config, setTimeout time.Duration, log *slog.Logger) (*fleet.Node, func() error, error) {
	f := cfg.Fleet
	cli, err := clientv3.New(clientv3.Config{Endpoints: f.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, nil, fmt.Errorf("fleet: etcd %v: %w", f.Endpoints, err)
	}
	sw := make([]fleet.Switch, len(cfg.Targets))
	for i, t := range cfg.Targets {
		sw[i] = fleet.Switch{Name: t.Name}
	}
	if setTimeout <= 0 {
		setTimeout = 5 * time.Second
	}
	jctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := fleet.Join(jctx, cli, fleet.Config{Name: f.Name, Member: fleet.Member{ID: f.Member, Zone: f.Zone}, Switches: sw,
		TTL: f.TTL, Takeover: f.Takeover, SetTimeout: setTimeout, Logger: log})
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	log.Info("fleet: joined", "fleet", f.Name, "member", f.Member, "endpoints", f.Endpoints)
	return n, func() error { n.Close(); return cli.Close() }, nil
}

// doner is a Gate that can end (a fleet member whose lease is gone).
type doner interface{ Done() <-chan struct{} }

// gateDone is closed when the agent's Gate ends (nil: never).
func (a *Agent) gateDone() <-chan struct{} {
	if d, ok := a.o.Gate.(doner); ok {
		return d.Done()
	}
	return nil
}

// noteOwners sets ecntune_agent_fleet_owner for every target (a fleet
// only).
func (a *Agent) noteOwners() {
	if a.o.Gate == nil {
		return
	}
	now := a.o.Clock()
	for _, n := range a.names {
		v := 0.0
		if _, ok := a.o.Gate.Writable(n, now); ok {
			v = 1
		}
		a.o.Instruments.FleetOwner.WithLabelValues(n).Set(v)
	}
}

// memoryKeeper is a Gate that keeps the guard's memory of each switch
// where the switch's next owner finds it (agent/fleet.Node): a failover
// keeps every hold and probation.
type memoryKeeper interface {
	PutMemory(ctx context.Context, target string, token int64, mems []core.QueueMemory) error
	Memory(ctx context.Context, target string) ([]core.QueueMemory, error)
}

// shareMemory writes the queues' memories that changed this interval to
// the fleet, for the switches this agent may write.
func (a *Agent) shareMemory(ctx context.Context, mems []core.QueueMemory) {
	mk, ok := a.o.Gate.(memoryKeeper)
	if !ok || len(mems) == 0 {
		return
	}
	by := map[string][]core.QueueMemory{}
	for _, m := range mems {
		by[m.Key.Target] = append(by[m.Key.Target], m)
	}
	for target, ms := range by {
		tok, ok := a.o.Gate.Writable(target, a.o.Clock())
		if !ok {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		if err := mk.PutMemory(cctx, target, tok, ms); err != nil {
			a.log.Warn("fleet: guard memory not shared", "target", target, "err", err)
		}
		cancel()
	}
}

// adoptMemory gives the guard the memory the previous owners of a switch
// kept, the first interval this agent may write it: holds, probations and
// bars carry over a failover. A switch lost is adopted again when won back.
func (a *Agent) adoptMemory(ctx context.Context) {
	mk, ok := a.o.Gate.(memoryKeeper)
	if !ok {
		return
	}
	if a.adopted == nil {
		a.adopted = map[string]bool{}
	}
	for _, n := range a.names {
		_, ok := a.o.Gate.Writable(n, a.o.Clock())
		if !ok {
			delete(a.adopted, n)
			continue
		}
		if a.adopted[n] {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		mems, err := mk.Memory(cctx, n)
		cancel()
		if err != nil {
			a.log.Warn("fleet: guard memory of a switch taken over not read; will retry", "target", n, "err", err)
			continue
		}
		for _, m := range mems {
			a.core.Guard().Restore(m)
		}
		a.adopted[n] = true
		if len(mems) > 0 {
			a.log.Info("fleet: guard memory taken over", "target", n, "queues", len(mems))
		}
	}
}
