package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
)

// Handler serves /metrics (Prometheus), /recommendations (JSON: the newest
// recommendation per queue; ?target=T filters, ?since=DURATION&db=1 reads
// the stored history instead), /changes (the audit log, in pages: see
// ChangesHandler), /changes/last (the last batch the guard let through,
// with confidences and clamping rules) and /healthz.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.o.Instruments.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/recommendations", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		target := r.URL.Query().Get("target")
		if !a.knownTarget(w, target) {
			return
		}
		if s := r.URL.Query().Get("since"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				http.Error(w, "since: want a duration such as 5m", http.StatusBadRequest)
				return
			}
			limit := 10000
			if l := r.URL.Query().Get("limit"); l != "" {
				if limit, err = strconv.Atoi(l); err != nil || limit < 1 {
					http.Error(w, "limit: want a positive integer", http.StatusBadRequest)
					return
				}
			}
			recs, err := a.o.Journal.Recommendations(target, a.o.Clock().Add(-d).UnixNano(), limit)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			writeJSON(w, recs)
			return
		}
		writeJSON(w, a.Recommendations(target))
	})
	changes := ChangesHandler(a.o.Journal, a.o.Clock)
	mux.HandleFunc("/changes", func(w http.ResponseWriter, r *http.Request) {
		// A target no longer configured may still have history.
		t := r.URL.Query().Get("target")
		if _, ok := a.targets[t]; !ok && t != "" {
			if p, err := a.o.Journal.ChangesPage(journal.ChangesQuery{Target: t, Limit: 1}); err == nil && len(p.Changes) > 0 {
				changes.ServeHTTP(w, r)
				return
			}
		}
		if a.knownTarget(w, t) {
			changes.ServeHTTP(w, r)
		}
	})
	mux.HandleFunc("/changes/last", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		cs := append([]core.Change{}, a.lastPlan...) // [] in JSON, never null
		a.mu.Unlock()
		writeJSON(w, cs)
	})
	mux.HandleFunc("/targets", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, a.Targets())
	})
	mux.HandleFunc("/healthz", a.healthz)
	a.dashboard(mux)
	return mux
}

// ChangesHandler serves the audit log of j as JSON pages (ChangesPage),
// so that it can be read while the agent holds the database:
// ?target=T keeps one target, ?since= a duration ago (10m) or an RFC 3339
// time, ?limit=N the newest N matches (default DefaultChangesPage, at most
// MaxChangesPage), ?before=SEQ those older than next_before of the
// previous page. now is the clock since= counts back from.
func ChangesHandler(j *journal.Journal, now func() time.Time) http.Handler {
	if now == nil {
		now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		v := r.URL.Query()
		q := journal.ChangesQuery{Target: v.Get("target")}
		if s := v.Get("since"); s != "" {
			if d, err := time.ParseDuration(s); err == nil && d >= 0 {
				q.SinceNs = now().Add(-d).UnixNano()
			} else if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				q.SinceNs = t.UnixNano()
			} else {
				http.Error(w, "since: want a duration such as 10m or an RFC 3339 time", http.StatusBadRequest)
				return
			}
		}
		if s := v.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > journal.MaxChangesPage {
				http.Error(w, fmt.Sprintf("limit: want 1..%d", journal.MaxChangesPage), http.StatusBadRequest)
				return
			}
			q.Limit = n
		}
		if s := v.Get("before"); s != "" {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil || n == 0 {
				http.Error(w, "before: want a sequence number (next_before of the previous page)", http.StatusBadRequest)
				return
			}
			q.Before = n
		}
		p, err := j.ChangesPage(q)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, p)
	})
}

// knownTarget answers 404, naming the configured targets, when target is
// set and not one of them (a typo should not read as "no data").
func (a *Agent) knownTarget(w http.ResponseWriter, target string) bool {
	if target == "" {
		return true
	}
	if _, ok := a.targets[target]; ok {
		return true
	}
	http.Error(w, fmt.Sprintf("target %q is not configured and has no history (targets: %s)", target, strings.Join(a.names, ", ")), http.StatusNotFound)
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
