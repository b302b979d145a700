package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/ecntune/ecntune/agent/fleet"
)

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
