package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ecntune/ecntune/agent/config"
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

// fleetStatuser is a Gate that can show its fleet (agent/fleet.Node).
type fleetStatuser interface {
	Status(ctx context.Context) (fleet.Status, error)
}

// withFleet adds GET /fleet (the fleet's members, leader and owners, as
// ecntune fleet status --json shows them) when the agent is in a fleet.
func (a *Agent) withFleet(h http.Handler) http.Handler {
	fs, ok := a.o.Gate.(fleetStatuser)
	if !ok {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("GET /fleet", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		st, err := fs.Status(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
	return mux
}
