package web

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/metrics"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// Source is what the endpoint reads of a running agent (*agent.Agent).
type Source interface {
	// Recommendations are the newest per queue of target ("": all), in
	// key order.
	Recommendations(target string) []core.Recommendation
	// LastChanges is the last batch the guard let through.
	LastChanges() []core.Change
	// Targets is what the agent knows of each target, by name.
	Targets() []TargetInfo
	// Health is the agent's problems (none: healthy) and each target's
	// telemetry age.
	Health() (problems []string, ages map[string]time.Duration)
	// Heard says which targets have sent telemetry.
	Heard() map[string]bool
	// TargetNames are the configured targets, sorted.
	TargetNames() []string
	// Pause and Resume pause the closed loop fabric-wide and end the
	// pause; PauseState is the pause as journaled.
	Pause(by, reason string) error
	Resume(by string) error
	PauseState() (journal.Pause, error)
	// Pending are the changes waiting for approval (approve mode);
	// Approve approves those of keys (all of them with all) for by;
	// PendingRequests are their Set requests as gnmic request files, per
	// target.
	Pending() []core.Pending
	Approve(keys []env.QueueKey, all bool, by string, plans []string) ([]core.Pending, error)
	PendingRequests() (map[string][]gnmipath.GnmicRequest, error)
}

// Options are what the endpoint serves from.
type Options struct {
	Source      Source
	Journal     *journal.Journal
	Instruments *metrics.Instruments
	// History is the dashboard's per-queue intervals (nil: none kept).
	History  *History
	Clock    func() time.Time
	Mode     string
	Policy   string
	Interval time.Duration
	// Approve: closed loop in approve mode (config approve: true), its
	// tunes wait for an operator (Source.Pending).
	Approve bool
}

// TargetInfo is what the agent knows about one target's capabilities: the
// device profile it runs with and why, the optional telemetry its queues
// lack, and the subscription groups the switch refused. GET /targets
// serves it; the agent logs every change once.
type TargetInfo struct {
	Target    string   `json:"target"`
	Device    string   `json:"device,omitempty"`
	DeviceWhy string   `json:"device_why,omitempty"`
	Missing   []string `json:"missing,omitempty"` // optional telemetry no queue of the target has
	Refused   []string `json:"refused_groups,omitempty"`
	// Skipped is the telemetry the agent did not understand and skipped,
	// by path shape, with cumulative counts.
	Skipped []gnmipath.Skipped `json:"skipped,omitempty"`
	// Connections is how many gRPC connections are open to the switch.
	Connections int `json:"connections,omitempty"`
	// Unreachable is why the target's telemetry fails, in a few words
	// ("connection refused", "timed out", "TLS handshake failed: ..."),
	// while it fails.
	Unreachable string `json:"unreachable,omitempty"`
	// Unserved: another member of the fleet serves the target now (this
	// agent neither hears nor tunes it: not stale, not silent).
	Unserved bool `json:"unserved,omitempty"`
	// AbsentPorts are the ports the configuration names (ports,
	// fabric-ports) that the switch has reported no queue of: a typo, or
	// a port that is down or gone.
	AbsentPorts []string `json:"absent_ports,omitempty"`
	// AbsentQueues are the configured queues (queues:) the switch reports
	// on none of its ports: never tuned.
	AbsentQueues []int `json:"absent_queues,omitempty"`
}

// server answers the endpoint's requests.
type server struct{ o Options }

func Handler(o Options) http.Handler {
	a := &server{o}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.o.Instruments.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/recommendations", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		target, since := r.URL.Query().Get("target"), r.URL.Query().Get("since")
		// a target no longer configured may still have stored ones (as
		// /changes reads its history)
		stored := func() bool {
			recs, err := a.o.Journal.Recommendations(target, 0, 1)
			return err == nil && len(recs) > 0
		}
		if !(since != "" && target != "" && !a.configured(target) && stored()) && !a.knownTarget(w, target) {
			return
		}
		if since != "" {
			StoredRecommendations(w, r, a.o.Journal, a.o.Clock)
			return
		}
		recs := a.o.Source.Recommendations(target)
		if l := r.URL.Query().Get("limit"); l != "" {
			// the live set, one per queue: its first limit in key order
			// (limit was ignored here)
			n, err := strconv.Atoi(l)
			if err != nil || n < 1 || n > MaxRecommendationsLimit {
				http.Error(w, fmt.Sprintf("limit: want a whole number from 1 to %d", MaxRecommendationsLimit), http.StatusBadRequest)
				return
			}
			recs = recs[:min(n, len(recs))]
		}
		writeJSON(w, recs)
	})
	changes := ChangesHandler(a.o.Journal, a.o.Clock)
	mux.HandleFunc("/changes", func(w http.ResponseWriter, r *http.Request) {
		// A target no longer configured may still have history.
		t := r.URL.Query().Get("target")
		if !a.configured(t) && t != "" {
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
		cs := append([]core.Change{}, a.o.Source.LastChanges()...) // [] in JSON, never null
		writeJSON(w, cs)
	})
	mux.HandleFunc("/targets", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, a.o.Source.Targets())
	})
	mux.HandleFunc("/healthz", a.healthz)
	mux.HandleFunc("/pending", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		if !a.approving(w) {
			return
		}
		writeJSON(w, a.o.Source.Pending())
	})
	mux.HandleFunc("/pending/gnmic", a.pendingGnmic)
	mux.HandleFunc("/approve", NotFromBrowser(a.approve))
	mux.HandleFunc("/pause", NotFromBrowser(a.pause))
	mux.HandleFunc("/resume", NotFromBrowser(a.pause))
	a.dashboard(mux)
	return mux
}

// NotFromBrowser refuses a request a web page sent (it carries Origin or
// Sec-Fetch-Site, which browsers add and the CLI and curl do not) before
// h sees it: the endpoints that change what the agent does (approve,
// pause, resume, the fleet's drain, rebalance and resign) take no
// credentials, so any page an operator had open could post a form to them
// (cross-site request forgery: 18 changes approved "by evil" and applied),
// DNS rebinding included. No page of the agent's posts to them.
func NotFromBrowser(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		origin, site := r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")
		if origin != "" || (site != "" && site != "none") {
			from := origin
			if from == "" {
				from = "Sec-Fetch-Site: " + site
			}
			http.Error(w, fmt.Sprintf("%s %s from a web page (%s) refused: it changes what the agent does and takes no credentials; use the ecntune CLI or curl",
				r.Method, r.URL.Path, from), http.StatusForbidden)
			return
		}
		h(w, r)
	}
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
				q.SinceNs = unixNanoClamped(t)
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
func (a *server) knownTarget(w http.ResponseWriter, target string) bool {
	if target == "" {
		return true
	}
	if a.configured(target) {
		return true
	}
	http.Error(w, fmt.Sprintf("target %q is not configured and has no history (targets: %s)", target, strings.Join(a.o.Source.TargetNames(), ", ")), http.StatusNotFound)
	return false
}

// configured says whether target is one of the agent's.
func (a *server) configured(target string) bool {
	return slices.Contains(a.o.Source.TargetNames(), target)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// healthz answers 200 "ok" when Health finds nothing wrong, else 503 with
// one problem per line.
func (a *server) healthz(w http.ResponseWriter, _ *http.Request) {
	problems, _ := a.o.Source.Health()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	// What a target's switch does not export is not a fault (the agent
	// decides without it) but belongs with its health: one line each.
	var notes []string
	if p, err := a.o.Source.PauseState(); err != nil || p.Paused {
		notes = append(notes, fmt.Sprintf("closed loop paused by %s since %s: %s (recording, writing nothing)",
			p.By, time.Unix(0, p.SinceNs).UTC().Format(time.RFC3339), p.Reason))
	}
	for _, ti := range a.o.Source.Targets() {
		if len(ti.Missing) > 0 {
			notes = append(notes, fmt.Sprintf("%s (device %s): without %s", ti.Target, ti.Device, strings.Join(ti.Missing, ", ")))
		}
		if len(ti.Refused) > 0 {
			notes = append(notes, fmt.Sprintf("%s: subscriptions refused by the switch: %s", ti.Target, strings.Join(ti.Refused, ", ")))
		}
	}
	if n := a.yieldNote(); n != "" {
		notes = append(notes, n)
	}
	if len(problems) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "unhealthy\n%s\n", strings.Join(append(problems, notes...), "\n"))
		return
	}
	fmt.Fprintln(w, "ok")
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

// yieldNote says when the loop yields to another writer (the guard's
// external-writer rule) on most of the queues of fresh telemetry: the
// agent is up but tunes almost nothing, which "ok" alone hid; "" when not.
func (a *server) yieldNote() string {
	fresh := a.o.Clock().Add(-config.HealthStaleIntervals * a.o.Interval).UnixNano()
	n, yield := 0, 0
	for _, r := range a.o.Source.Recommendations("") {
		if r.TimeNs < fresh {
			continue
		}
		n++
		if r.Guard == core.RuleExternal {
			yield++
		}
	}
	if n == 0 || 2*yield <= n {
		return ""
	}
	return fmt.Sprintf("the loop yields to another writer on %d of %d queues (external-writer: the switches run other settings than the agent set): "+
		"nothing is tuned there until the hold ends; if the switches were restarted or rewritten on purpose, their settings are the new baseline once it does", yield, n)
}

// StoredRecommendations answers GET /recommendations?since=D[&limit=N]
// [&target=T][&changing=1] from the journal: the newest N (default 10,000,
// at most MaxRecommendationsLimit) stored recommendations of the last D
// (with changing=1, of those that differ from what the queue ran).
func StoredRecommendations(w http.ResponseWriter, r *http.Request, j *journal.Journal, clock func() time.Time) {
	q := r.URL.Query()
	d, err := time.ParseDuration(q.Get("since"))
	if err != nil || d < 0 {
		http.Error(w, "since: want a duration such as 5m", http.StatusBadRequest)
		return
	}
	limit := 10000
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > MaxRecommendationsLimit {
			http.Error(w, fmt.Sprintf("limit: want a whole number from 1 to %d", MaxRecommendationsLimit), http.StatusBadRequest)
			return
		}
	}
	// Streamed, a row at a time (StreamRecommendations reads them in chunks):
	// 100,000 rows decoded and indented in one buffer took a running
	// agent from 88 MB to 1 GB.
	bw := bufio.NewWriterSize(w, 64<<10)
	n := 0
	var keep func(*core.Recommendation) bool
	if q.Get("changing") == "1" { // the newest limit changing ones (agent recommendations --changing)
		keep = journal.Changing
	}
	err = j.StreamRecommendationsWhere(q.Get("target"), clock().Add(-d).UnixNano(), limit, keep, func(r core.Recommendation) error {
		b, err := json.MarshalIndent(r, "  ", "  ") // as writeJSON indents
		if err != nil {
			return err
		}
		if n == 0 {
			w.Header().Set("Content-Type", "application/json")
			bw.WriteString("[\n  ")
		} else {
			bw.WriteString(",\n  ")
		}
		n++
		_, err = bw.Write(b)
		return err
	})
	if err != nil && n == 0 {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if err != nil {
		// the rows were checked before the first was written: this is the
		// client gone, or a row pruned and damaged meanwhile; the answer
		// ends unclosed, which no JSON reader takes for a whole one
		bw.Flush()
		return
	}
	if n == 0 {
		w.Header().Set("Content-Type", "application/json")
		bw.WriteString("[]\n")
	} else {
		bw.WriteString("\n]\n")
	}
	bw.Flush()
}

// MaxRecommendationsLimit bounds GET /recommendations?since=...&limit=:
// the newest rows up to it are read, not more (an unbounded limit served
// the whole retention window).
const MaxRecommendationsLimit = 100000

// unixNanoClamped is t in ns since the epoch, clamped to what int64
// holds (1678-2262): beyond, UnixNano wraps, and a since before 1678 read
// as one after it.
func unixNanoClamped(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// What an operator's POST may carry: who (by) and why (reason) are
// journaled and shown on every poll of /healthz and the dashboard, so
// they are bounded (a 9 MB reason made each poll 9 MB).
const (
	MaxWhoBytes    = 128
	MaxReasonBytes = 1024
	maxFormBytes   = 64 << 10
)

// formText is form field name, trimmed: an error when longer than max,
// or empty when required says what it is for.
// parseForm reads a POST's form, at most maxFormBytes, from the query,
// a urlencoded body or a multipart one (curl -F): every field is read
// from r.Form after it. A body too large is said so (it read as a
// missing field).
func parseForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	var err error
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		err = r.ParseMultipartForm(maxFormBytes)
	} else {
		err = r.ParseForm()
	}
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return fmt.Errorf("the form is larger than %d bytes", maxFormBytes)
		}
		return fmt.Errorf("the form: %w", err)
	}
	return nil
}

func formText(r *http.Request, name string, max int, required string) (string, error) {
	v := strings.TrimSpace(r.FormValue(name))
	switch {
	case len(v) > max:
		return "", fmt.Errorf("%s: %d bytes, at most %d", name, len(v), max)
	case v == "" && required != "":
		return "", fmt.Errorf("%s: %s", name, required)
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		// journaled and shown on /healthz and in logs: a newline forged
		// lines there, an escape cleared the reader's terminal
		return "", fmt.Errorf("%s: control characters (a newline, a tab, an escape) are not allowed", name)
	}
	return v, nil
}

// pause answers GET /pause with the pause state, and POST /pause (by,
// reason) and POST /resume (by) with the state after the change; by is who
// asks (required: the change is journaled with it).
func (a *server) pause(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/pause" {
		p, err := a.o.Source.PauseState()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, p)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST to change, GET /pause to read", http.StatusMethodNotAllowed)
		return
	}
	if err := parseForm(w, r); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	by, err := formText(r, "by", MaxWhoBytes, "say who pauses or resumes (it is journaled)")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.URL.Path == "/pause" {
		var reason string
		if reason, err = formText(r, "reason", MaxReasonBytes, ""); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		err = a.o.Source.Pause(by, reason)
	} else {
		err = a.o.Source.Resume(by)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	p, err := a.o.Source.PauseState()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, p)
}

// GnmicFile is one pending Set request of a target as a file gnmic sends
// unchanged (gnmic set --set-proto-request-file: gnmipath.Gnmic): GET
// /pending/gnmic answers, per target, the files in the order the agent
// would send them.
type GnmicFile struct {
	// PrefixTarget is the request prefix's target, to show: the file
	// carries it.
	PrefixTarget string `json:"prefix_target,omitempty"`
	Prototext    string `json:"prototext"`
}

// GnmicFiles are reqs as GET /pending/gnmic answers them.
func GnmicFiles(reqs map[string][]gnmipath.GnmicRequest) map[string][]GnmicFile {
	out := map[string][]GnmicFile{}
	for t, rs := range reqs {
		for _, x := range rs {
			out[t] = append(out[t], GnmicFile{PrefixTarget: x.Target, Prototext: string(x.File)})
		}
	}
	return out
}

func (a *server) pendingGnmic(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	if !a.approving(w) {
		return
	}
	reqs, err := a.o.Source.PendingRequests()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, GnmicFiles(reqs))
}

// approving answers 409 with the reason when the source (an agent) says
// nothing can wait for approval: not in approve mode. It says whether the
// request goes on.
func (a *server) approving(w http.ResponseWriter) bool {
	ap, ok := a.o.Source.(interface{ Approving() error })
	if !ok {
		return true
	}
	if err := ap.Approving(); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return false
	}
	return true
}

// approve answers POST /approve (by, queue=TARGET/PORT/qN repeated, or
// all=true; plan=ID repeated: only those reviewed changes) with the
// changes approved.
func (a *server) approve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST by=NAME with queue=TARGET/PORT/qN (repeat) or all=true", http.StatusMethodNotAllowed)
		return
	}
	if err := parseForm(w, r); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	by, err := formText(r, "by", MaxWhoBytes, "say who approves (it is journaled with each change)")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	all := r.Form.Get("all") == "true"
	var keys []env.QueueKey
	for _, q := range r.Form["queue"] {
		k, err := env.ParseQueueKey(q)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		keys = append(keys, k)
	}
	if all == (len(keys) > 0) {
		http.Error(w, "give queue=TARGET/PORT/qN (repeat) or all=true, not both", http.StatusBadRequest)
		return
	}
	out, err := a.o.Source.Approve(keys, all, by, r.Form["plan"])
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	writeJSON(w, out)
}
