package agent

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /metrics (Prometheus), /recommendations (JSON: the newest
// recommendation per queue; ?target=T filters, ?since=DURATION&db=1 reads
// the stored history instead), /changes (the last batch of changes) and
// /healthz.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.o.Instruments.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/recommendations", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		target := r.URL.Query().Get("target")
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
	mux.HandleFunc("/changes", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		cs := append([]Change(nil), a.lastPlan...)
		a.mu.Unlock()
		writeJSON(w, cs)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
