package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ecntune/ecntune/agent/web"
	"net/http"
	"sync"
	"time"

	"github.com/ecntune/ecntune/agent/fleet"
)

// fleetStatuser is a Gate that can show its fleet (agent/fleet.Node).
type fleetStatuser interface {
	Status(ctx context.Context) (fleet.Status, error)
}

// fleetOperator is a Gate that can steer its fleet (agent/fleet.Node).
type fleetOperator interface {
	Drain(ctx context.Context, member string, on bool) error
	Rebalance(ctx context.Context) (fleet.Result, error)
	Resign(ctx context.Context) (fleet.Handoff, error)
}

// withFleet adds, when the agent is in a fleet, GET /fleet (the fleet's
// members, leader and owners, as ecntune fleet status --json shows them,
// with this member and the switches it holds) and the operator's POST
// /fleet/drain?member=M[&undo=1], /fleet/rebalance and /fleet/resign, as
// the ecntune fleet commands do. Each answers JSON; another method is a
// 405, a missing or unknown member a 400.
func (a *Agent) withFleet(h http.Handler) http.Handler {
	fs, ok := a.o.Gate.(fleetStatuser)
	if !ok {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	last := &a.lastFleet
	mux.HandleFunc("/fleet", fleetJSONWithin(http.MethodGet, FleetStatusTimeout, func(ctx context.Context, _ *http.Request) (any, error) {
		st, err := fs.Status(ctx)
		last.Lock()
		defer last.Unlock()
		if err == nil {
			last.st, last.at = st, time.Now()
			return st, nil
		}
		if last.at.IsZero() {
			return nil, err
		}
		// etcd does not answer (in time): the last status read, said to
		// be stale, beside the error
		return nil, staleStatus{err, StaleFleetStatus{Status: last.st, Stale: true, AsOf: last.at.UTC(), Error: err.Error()}}
	}))
	op, ok := a.o.Gate.(fleetOperator)
	if !ok {
		return mux
	}
	mux.HandleFunc("/fleet/drain", web.NotFromBrowser(fleetJSON(http.MethodPost, func(ctx context.Context, r *http.Request) (any, error) {
		m, undo := r.URL.Query().Get("member"), r.URL.Query().Get("undo")
		if m == "" {
			return nil, badRequest{errors.New("member: required (POST /fleet/drain?member=M, &undo=1 to end a drain)")}
		}
		if undo != "" && undo != "0" && undo != "1" && undo != "true" && undo != "false" {
			return nil, badRequest{fmt.Errorf("undo: %q: want 1 or 0", undo)}
		}
		on := undo == "" || undo == "0" || undo == "false"
		if err := op.Drain(ctx, m, on); err != nil {
			if errors.Is(err, fleet.ErrNoMember) {
				err = badRequest{err}
			}
			if errors.Is(err, fleet.ErrLastMember) {
				err = conflict{err}
			}
			return nil, err
		}
		return map[string]any{"member": m, "draining": on}, nil
	})))
	mux.HandleFunc("/fleet/rebalance", web.NotFromBrowser(fleetJSON(http.MethodPost, func(ctx context.Context, _ *http.Request) (any, error) {
		return op.Rebalance(ctx)
	})))
	mux.HandleFunc("/fleet/resign", web.NotFromBrowser(fleetJSON(http.MethodPost, func(ctx context.Context, _ *http.Request) (any, error) {
		return op.Resign(ctx)
	})))
	return mux
}

// badRequest is an error of the request itself (400).
type badRequest struct{ error }

// conflict is an error the request meets in the fleet's state (409): the
// drain of its last active member.
type conflict struct{ error }

// lastFleetStatus is the last fleet status read, and when.
type lastFleetStatus struct {
	sync.Mutex
	st fleet.Status
	at time.Time
}

// FleetStatusTimeout bounds GET /fleet: with etcd down it answers within
// it (the last status read, marked stale) instead of after 15 s, which
// held the dashboard's every refresh.
const FleetStatusTimeout = 2 * time.Second

// StaleFleetStatus is GET /fleet's answer (503 or 504) when etcd does not
// answer: the last status read, when, and why no newer one.
type StaleFleetStatus struct {
	fleet.Status
	Stale bool      `json:"stale"`
	AsOf  time.Time `json:"as_of"`
	Error string    `json:"error"`
}

// staleStatus is an error answered with a stale status as its body.
type staleStatus struct {
	error
	body StaleFleetStatus
}

func (s staleStatus) Unwrap() error { return s.error }

// fleetJSON serves f for method only, within 15 s, as JSON: its value, or
// {"error": ...} with 400 (badRequest), 409 (conflict), 405 (another method), 504 (no
// answer in time) or 503.
func fleetJSON(method string, f func(context.Context, *http.Request) (any, error)) http.HandlerFunc {
	return fleetJSONWithin(method, 15*time.Second, f)
}

// fleetJSONWithin is fleetJSON within limit; an error that carries a
// stale status (staleStatus) is answered with it.
func fleetJSONWithin(method string, limit time.Duration, f func(context.Context, *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			w.Header().Set("Allow", method)
			w.WriteHeader(http.StatusMethodNotAllowed)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": r.Method + " " + r.URL.Path + ": use " + method})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), limit)
		defer cancel()
		v, err := f(ctx, r)
		if err != nil {
			code := http.StatusServiceUnavailable
			var br badRequest
			switch {
			case errors.As(err, &br):
				code = http.StatusBadRequest
			case errors.As(err, new(conflict)):
				code = http.StatusConflict
			case errors.Is(err, context.DeadlineExceeded):
				code = http.StatusGatewayTimeout
			}
			w.WriteHeader(code)
			var st staleStatus
			if errors.As(err, &st) {
				_ = json.NewEncoder(w).Encode(st.body)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
}
