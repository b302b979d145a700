package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/policy"
)

func get(t *testing.T, h http.Handler, url string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, url, nil))
	return w
}

// The dashboard is served from the binary, its API answers what the page
// draws, and its pictures are PNGs; bad parameters are named.
func TestDashboardEndpoints(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	h := r.a.Handler()
	if w := get(t, h, "/dashboard/heatmap.png"); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "no interval") {
		t.Errorf("heatmap before any interval: %d %s", w.Code, w.Body)
	}
	r.obs.metrics[kA] = env.Metrics{IntervalNs: sec, Util: 0.9, MarkFrac: 0.25, MaxDelayNs: 8_000, AvgDelayNs: 4_000, PauseRxFrac: 0.1}
	r.obs.metrics[kB] = env.Metrics{IntervalNs: sec, Util: 0.5} // not hot: no marks
	for range 4 {
		r.interval(t)
	}
	page := get(t, h, "/")
	for _, want := range []string{"<title>ecntune dashboard</title>", `src="/static/app.js"`, `id="heatmap"`} {
		if !strings.Contains(page.Body.String(), want) {
			t.Errorf("/ lacks %q", want)
		}
	}
	if w := get(t, h, "/static/app.js"); w.Code != 200 || !strings.Contains(w.Body.String(), "/api/overview") {
		t.Errorf("/static/app.js: %d", w.Code)
	}
	if w := get(t, h, "/nothing-here"); w.Code != http.StatusNotFound {
		t.Errorf("/nothing-here: %d", w.Code)
	}

	var ov web.Overview
	if err := json.Unmarshal(get(t, h, "/api/overview").Body.Bytes(), &ov); err != nil {
		t.Fatal(err)
	}
	if ov.Mode != "closed-loop" || len(ov.Intervals) != 4 || len(ov.Targets) != 1 || ov.Targets[0].Queues != 2 || ov.Queues != 2 {
		t.Errorf("overview %+v", ov)
	}
	// The other queue is idle (no bytes, marks nor pauses): not listed.
	if len(ov.Hot) != 1 || ov.Hot[0].Key != kA || ov.Hot[0].DepthKB == nil || math.Abs(*ov.Hot[0].DepthKB-100) > 1e-3 {
		t.Errorf("hot %+v (want %v first with a peak of 8 us at 100G = 100KB)", ov.Hot, kA)
	}
	if len(ov.Changes) == 0 || ov.Changes[0].Kind != core.KindTune {
		t.Errorf("changes %+v", ov.Changes)
	}

	for _, url := range []string{"/dashboard/heatmap.png?metric=marks", "/dashboard/heatmap.png?metric=depth&view=time&top=5",
		"/dashboard/heatmap.png?ago=3", "/dashboard/queue.png?target=leaf0&port=" + kA.Port + "&queue=3"} {
		w := get(t, h, url)
		if w.Code != 200 || w.Header().Get("Content-Type") != "image/png" {
			t.Errorf("%s: %d %s", url, w.Code, w.Body)
			continue
		}
		if _, err := png.Decode(w.Body); err != nil {
			t.Errorf("%s: %v", url, err)
		}
	}
	for url, want := range map[string]string{
		"/dashboard/heatmap.png?metric=rtt":                    `metric "rtt"`,
		"/dashboard/heatmap.png?view=3d":                       `view "3d"`,
		"/dashboard/heatmap.png?ago=4":                         "beyond the kept history",
		"/dashboard/heatmap.png?ago=-1":                        "ago:",
		"/dashboard/queue.png?target=leaf0":                    "want target, port and queue",
		"/dashboard/queue.png?target=leaf0&port=x&queue=9":     "queue \"9\"",
		"/dashboard/queue.png?target=leaf9&port=eth1&queue=3":  "no history of leaf9",
		"/api/queue?target=leaf0&port=" + kA.Port + "&queue=5": "no history of leaf0",
	} {
		w := get(t, h, url)
		if w.Code < 400 || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s: %d %q, want an error with %q", url, w.Code, w.Body, want)
		}
	}

	var qs web.QueueSeries
	if err := json.Unmarshal(get(t, h, "/api/queue?target=leaf0&port="+kA.Port+"&queue=3").Body.Bytes(), &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs.TimesNs) != 4 || len(qs.Values[web.MetricUtil]) != 4 || qs.Values[web.MetricUtil][3] == nil || *qs.Values[web.MetricUtil][3] != 90 ||
		*qs.Values[web.MetricMarks][3] != 25 || len(qs.Settings) < 2 || qs.Settings[len(qs.Settings)-1].Setting != target {
		t.Errorf("queue series %+v", qs)
	}
}

func TestNaturalCompare(t *testing.T) {
	in := []string{"Ethernet12", "Ethernet4", "leaf10", "leaf2", "Ethernet004", "eth1/10", "eth1/9", "a"}
	slices.SortFunc(in, env.NaturalCompare)
	want := []string{"Ethernet4", "Ethernet004", "Ethernet12", "a", "eth1/9", "eth1/10", "leaf2", "leaf10"}
	if !slices.Equal(in, want) {
		t.Errorf("%v, want %v", in, want)
	}
}

// A target that is not configured is a 404 naming the targets, not an
// empty answer; every interval leaves one info line.
func TestUnknownTargetAndIntervalLog(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.interval(t)
	r.interval(t)
	h := r.a.Handler()
	for _, url := range []string{"/recommendations?target=leaf9", "/changes?target=leaf9", "/recommendations?target=leaf9&since=1m"} {
		w := get(t, h, url)
		if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), `target "leaf9" is not configured and has no history (targets: leaf0)`) {
			t.Errorf("%s: %d %q", url, w.Code, w.Body)
		}
	}
	if w := get(t, h, "/changes"); w.Code != 200 || !strings.Contains(w.Body.String(), `"changes": []`) {
		t.Errorf("/changes with no change: %d %s", w.Code, w.Body)
	}
	if n := strings.Count(logs.String(), "msg=interval queues=2 recommend_change=2 would_apply="); n != 2 {
		t.Errorf("%d interval lines in %s", n, logs.String())
	}
}

type intervalHoldPolicy struct{ fixedPolicy }

func (p *intervalHoldPolicy) Decide(obs []env.Observation) []policy.Decision {
	d := p.fixedPolicy.Decide(obs)
	for i := range d {
		d[i].Setting, d[i].Held = obs[i].Current, policy.HoldInterval
		d[i].Reason = "hold: counters over 1s, outside the decision intervals the model was validated for (20µs to 2ms)"
	}
	return d
}

// A policy holding queues for their interval is said once, loudly.
func TestAgentWarnsOnceAboutTheInterval(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.a.o.Policy = &intervalHoldPolicy{fixedPolicy{s: target, conf: 0.9}}
	for range 3 {
		r.interval(t)
	}
	if n := strings.Count(logs.String(), "level=WARN msg=\"the policy holds queues: counters over 1s"); n != 1 {
		t.Errorf("%d warnings:\n%s", n, logs.String())
	}
}

// spanHoldPolicy holds every queue for its counters' span, as a model
// validated for 200µs to 1s does.
type spanHoldPolicy struct{}

func (spanHoldPolicy) Name() string { return "span-hold" }
func (spanHoldPolicy) Decide(obs []env.Observation) []policy.Decision {
	d := make([]policy.Decision, len(obs))
	for i, o := range obs {
		d[i] = policy.Decision{Key: o.Key, Setting: o.Current, Held: policy.HoldInterval,
			Reason: fmt.Sprintf("hold: counters over %v, outside the decision intervals the model was validated for (200µs to 1s)", time.Duration(o.Metrics.IntervalNs))}
	}
	return d
}

// Counters spanning far less of the switch's clock than the wall time
// between its samples (a simulated switch behind real time) are blamed on
// the switch's clock, not on the agent's intervals (the warning said
// "change interval/sample-interval" of counters over 60µs a second apart).
func TestAgentWarnsOfASwitchClockBehind(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	var logs strings.Builder
	r.a.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.a.o.Policy = spanHoldPolicy{}
	r.obs.metrics[kA] = env.Metrics{IntervalNs: 60_000, Util: 0.5}
	r.obs.metrics[kB] = r.obs.metrics[kA]
	r.a.Ingest(r.sw.snapshot(r.tns)) // the first sample: no span yet
	for range 3 {
		r.clk.Add(time.Second)
		r.tns += 60_000
		r.a.Ingest(r.sw.snapshot(r.tns))
		if err := r.a.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := "the switch's clock (its counters' timestamps) advanced 60µs between samples received 1s apart, less than the wall clock: a simulated switch behind real time"
	if n := strings.Count(logs.String(), "level=WARN msg=\"the policy holds queues: "); n != 1 || !strings.Contains(logs.String(), want) ||
		strings.Contains(logs.String(), "change interval/sample-interval") {
		t.Errorf("%d warnings, want 1 saying %q:\n%s", n, want, logs.String())
	}
}

// The dashboard's counters read the audit log, not the page it shows: 40
// entries in the window count 40 though a page holds 25, and the overview
// says where the older page starts.
func TestOverviewCountsTheWholeAuditLog(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	h := r.a.Handler()
	r.interval(t) // the window starts at the first interval
	before, err := r.j.Entries("", 0)
	if err != nil {
		t.Fatal(err)
	}
	took := 0 // what the interval set
	for _, e := range before {
		if e.Took() {
			took++
		}
	}
	var es []core.AuditEntry
	for i := range 40 {
		es = append(es, core.AuditEntry{TimeNs: r.clk.Now().UnixNano() + int64(i), Target: "leaf0",
			Change: core.Change{Key: kA, Kind: core.KindTune, Old: cur, New: target, Reason: "test"}, State: core.StateApplied})
	}
	// what the switch did not take is no change: a dry run's, a failed
	// Set (the dashboard counted them, /metrics did not: 164 against 0)
	for i, st := range []core.AuditState{core.StateDryRun, core.StateFailed, core.StateMismatch} {
		es = append(es, core.AuditEntry{TimeNs: r.clk.Now().UnixNano() + int64(40+i), Target: "leaf0",
			Change: core.Change{Key: kA, Kind: core.KindTune, Old: cur, New: target, Reason: "test"}, State: st})
	}
	if _, err := r.j.Intent(es); err != nil {
		t.Fatal(err)
	}
	var ov web.Overview
	if err := json.Unmarshal(get(t, h, "/api/overview").Body.Bytes(), &ov); err != nil {
		t.Fatal(err)
	}
	changes := 0
	for _, tg := range ov.Targets {
		changes += tg.Changes
	}
	if ov.ChangesInWindow != 40+took || changes != ov.ChangesInWindow || len(ov.Changes) != 25 || ov.ChangesBefore == 0 {
		t.Fatalf("changes in window %d (targets %d), page %d, older before %d; want the 40 taken counted, a page of 25 and an older page",
			ov.ChangesInWindow, changes, len(ov.Changes), ov.ChangesBefore)
	}
	var older journal.ChangesPage
	if err := json.Unmarshal(get(t, h, fmt.Sprintf("/changes?limit=25&before=%d", ov.ChangesBefore)).Body.Bytes(), &older); err != nil {
		t.Fatal(err)
	}
	if len(older.Changes) == 0 || older.Changes[len(older.Changes)-1].Seq >= ov.ChangesBefore {
		t.Fatalf("older page %+v, want entries before %d", older.Changes, ov.ChangesBefore)
	}
}

// In shadow mode "would change" counts the changes the guard would let
// through this interval: a recommendation the guard rejects is not
// counted, a clamped one is, and it carries the setting the guard would
// set; once let through, the loop would run it (Would) until it decides
// otherwise, and the next intervals, the guard holding, count nothing
// (the switch, never written, still differs: the count stuck at every
// queue let through once, 48 of 48 while the guard planned 0 or 1).
// Differing counts the recommendations that differ from the switch, as
// /metrics' target_recommended_changes does.
func TestOverviewWouldChangeFollowsTheGuard(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	h := r.a.Handler()
	var ov web.Overview
	r.pol.conf = 0.01 // below the confidence gate: rejected (low confidence holds by default)
	r.interval(t)
	r.interval(t)
	if err := json.Unmarshal(get(t, h, "/api/overview").Body.Bytes(), &ov); err != nil {
		t.Fatal(err)
	}
	if ov.WouldChange != 0 {
		t.Fatalf("would change %d with every recommendation rejected: %+v", ov.WouldChange, ov.Recommendations)
	}
	r.pol.conf = 0.9
	far := target
	far.KminBytes, far.KmaxBytes = cur.KminBytes*8, cur.KmaxBytes*8 // beyond the max step: clamped
	r.pol.s = far
	r.interval(t)
	if err := json.Unmarshal(get(t, h, "/api/overview").Body.Bytes(), &ov); err != nil {
		t.Fatal(err)
	}
	clamped := 0
	for _, rec := range ov.Recommendations {
		if strings.HasPrefix(rec.Guard, "clamped:") {
			clamped++
			if rec.Allowed == nil || *rec.Allowed == rec.Recommended || rec.Allowed.KmaxBytes >= far.KmaxBytes {
				t.Errorf("%v clamped (%s) but allowed %+v, recommended %+v", rec.Key, rec.Guard, rec.Allowed, rec.Recommended)
			}
		}
	}
	if clamped == 0 || ov.WouldChange != clamped {
		t.Fatalf("would change %d, clamped %d: %+v", ov.WouldChange, clamped, ov.Recommendations)
	}
	for range 2 {
		r.pol.conf = 0.01 // unsure now: the loop would hold what it set
		r.interval(t)
	}
	if err := json.Unmarshal(get(t, h, "/api/overview").Body.Bytes(), &ov); err != nil {
		t.Fatal(err)
	}
	if ov.WouldChange != 0 {
		t.Fatalf("would change %d with the guard holding every queue (it let %d through two intervals before): %+v", ov.WouldChange, clamped, ov.Recommendations)
	}
	if ov.Differing != ov.Queues || ov.Queues == 0 {
		t.Errorf("differing %d of %d queues, every recommendation %+v far from the switch's %+v", ov.Differing, ov.Queues, far, cur)
	}
	for _, rec := range ov.Recommendations {
		if strings.HasPrefix(rec.Guard, "clamped:") || rec.Would == nil || *rec.Would == rec.Current {
			t.Errorf("%v: guard %q, would %+v, current %+v: want the clamped setting let through before", rec.Key, rec.Guard, rec.Would, rec.Current)
		}
	}
}

// A queue set back to the setting it left a few intervals before is a
// flap, counted on /metrics, the dashboard and in agent report.
func TestChurnCountsFlaps(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	store := true
	r.a.cfg.StoreRecommendations = &store
	h := r.a.Handler()
	r.interval(t) // tune to target
	if r.sw.setCount() == 0 {
		t.Fatal("no first change")
	}
	r.pol.s = cur // and back, once min-hold (5 s) and probation (3 intervals) allow
	for range 7 {
		r.interval(t)
	}
	if got := r.sw.get(kA); got != cur {
		t.Fatalf("queue not set back: %+v", got)
	}
	m := get(t, h, "/metrics").Body.String()
	if !strings.Contains(m, `ecntune_target_flaps_last_100_intervals{target="leaf0"} 2`) ||
		!strings.Contains(m, `ecntune_target_changes_last_100_intervals{target="leaf0"} 4`) {
		t.Errorf("/metrics churn:\n%s", grepLines(m, "last_100"))
	}
	var ov web.Overview
	if err := json.Unmarshal(get(t, h, "/api/overview").Body.Bytes(), &ov); err != nil || ov.Flaps != 2 {
		t.Errorf("overview flaps %d, %v", ov.Flaps, err)
	}
	// 4 changes of 2 queues over the 8 intervals kept: 25 per queue per 100
	if want := 4.0 / 2 * 100 / float64(len(ov.Intervals)); ov.ChangesPerQueuePer100 != want || ov.Rollbacks != 0 || ov.Repairs != 0 {
		t.Errorf("overview rate %g (want %g over %d intervals), rollbacks %d, repairs %d", ov.ChangesPerQueuePer100, want, len(ov.Intervals), ov.Rollbacks, ov.Repairs)
	}
	rf, err := web.WriteReport(r.j, t.TempDir(), web.ReportOptions{})
	if err != nil || rf.Flaps != 2 {
		t.Errorf("report flaps %d, %v", rf.Flaps, err)
	}
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Right after a restart, before the first interval, the audit window is
// empty: the changes of the previous run are not counted (the whole log
// was, then 0 at the first interval).
func TestOverviewWindowEmptyBeforeFirstInterval(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agent.db")
	r := newRig(t, config.ModeClosedLoop, false, db, nil)
	for range 3 {
		r.interval(t)
	}
	if es, err := r.j.Entries("", 0); err != nil || len(es) == 0 {
		t.Fatalf("no change in the first run: %v", err)
	}
	r.j.Close()
	s := newRig(t, config.ModeClosedLoop, false, db, r.sw)
	s.clk.t, s.tns = r.clk.t.Add(time.Hour), r.tns
	var ov web.Overview
	if err := json.Unmarshal(get(t, s.a.Handler(), "/api/overview").Body.Bytes(), &ov); err != nil {
		t.Fatal(err)
	}
	if len(ov.Intervals) != 0 || ov.ChangesInWindow != 0 || len(ov.Changes) == 0 {
		t.Errorf("before the first interval: %d intervals, %d changes in the window, %d in the log page; want 0 in the window, the log still listed",
			len(ov.Intervals), ov.ChangesInWindow, len(ov.Changes))
	}
}

// A switch gone silent keeps its changes in the window and its queues in
// the rate's divisor: 3 intervals of changes then 5 silent ticks read a
// rate over the 2 queues heard in the window (it divided by the queues
// still heard, none, and read 0.00 with 2 changes in the window).
func TestOverviewRateCountsSilentSwitchesQueues(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	h := r.a.Handler()
	for range 3 {
		r.interval(t)
	}
	for range 5 { // the switch goes silent
		r.clk.Add(time.Second)
		if err := r.a.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var ov web.Overview
	if err := json.Unmarshal(get(t, h, "/api/overview").Body.Bytes(), &ov); err != nil {
		t.Fatal(err)
	}
	want := float64(ov.ChangesInWindow) / 2 * 100 / float64(len(ov.Intervals))
	if ov.ChangesInWindow == 0 || ov.Queues != 0 || ov.WindowQueues != 2 || math.Abs(ov.ChangesPerQueuePer100-want) > 1e-9 {
		t.Errorf("silent switch: %d changes in the window, %d queues decided, %d heard in the window, rate %.2f; want %.2f over the 2 queues",
			ov.ChangesInWindow, ov.Queues, ov.WindowQueues, ov.ChangesPerQueuePer100, want)
	}
}

// The fabric heatmap is drawn at a kept interval named by its time (at=),
// as the page pins the one picked; one no longer kept is a 404 saying so.
func TestHeatmapAtAnInterval(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	h := r.a.Handler()
	r.obs.metrics[kA] = env.Metrics{IntervalNs: sec, Util: 0.9, MarkFrac: 0.25, MaxDelayNs: 8_000, AvgDelayNs: 4_000}
	for range 3 {
		r.interval(t)
	}
	var ov web.Overview
	if err := json.Unmarshal(get(t, h, "/api/overview").Body.Bytes(), &ov); err != nil || len(ov.Intervals) != 3 {
		t.Fatalf("%d intervals, %v", len(ov.Intervals), err)
	}
	// as the page's script names it: a double, some ns off
	at, ago := get(t, h, fmt.Sprintf("/dashboard/heatmap.png?at=%.0f", float64(ov.Intervals[1]+123))), get(t, h, "/dashboard/heatmap.png?ago=1")
	if at.Code != 200 || at.Header().Get("Content-Type") != "image/png" || !slices.Equal(at.Body.Bytes(), ago.Body.Bytes()) {
		t.Errorf("at the middle interval: %d, %d bytes; want the picture of ago=1 (%d bytes)", at.Code, at.Body.Len(), ago.Body.Len())
	}
	if w := get(t, h, fmt.Sprintf("/dashboard/heatmap.png?at=%d", ov.Intervals[0]-sec/2)); w.Code != 404 || !strings.Contains(w.Body.String(), "left the kept history") {
		t.Errorf("at a time not kept: %d %s", w.Code, w.Body)
	}
}
