package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
)

// TestDashboardPageHasItsPictures: the page's first HTML carries the
// fabric heatmap and the most congested queue's chart inline and the
// overview as JSON, so that it is complete at load, without a fetch;
// before any interval it is the plain page.
func TestDashboardPageHasItsPictures(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	h := r.a.Handler()
	if body := get(t, h, "/").Body.String(); strings.Contains(body, "data:image/png") || !strings.Contains(body, `id="heatmap"`) {
		t.Errorf("page before any interval: %.300s", body)
	}
	r.obs.metrics[kA] = env.Metrics{IntervalNs: sec, Util: 0.9, MarkFrac: 0.25, MaxDelayNs: 8_000, AvgDelayNs: 4_000}
	for range 3 {
		r.interval(t)
	}
	body := get(t, h, "/").Body.String()
	for _, re := range []string{
		`<img id="heatmap" alt="fabric heatmap" src="data:image/png;base64,iVBOR[^"]+" data-src="/dashboard/heatmap.png\?metric=depth&amp;view=fabric&amp;ago=0&amp;v=\d+">`,
		`<img id="queue-chart" alt="queue time series" src="data:image/png;base64,iVBOR[^"]+" data-src="/dashboard/queue.png\?target=leaf0&amp;port=` + kA.Port + `&amp;queue=3&amp;v=\d+">`,
		`<script id="initial" type="application/json">\{"mode":"shadow".*"intervals_ns":\[\d+,\d+,\d+\]`,
	} {
		if !regexp.MustCompile(re).MatchString(body) {
			t.Errorf("the page lacks %s", re)
		}
	}
}

// TestDashboardScriptTimesAndIdle: app.js (in Node.js, skipped without)
// draws the inline overview at load, writes times as the audit log does
// (UTC, 24-hour, with the date) and says "idle" instead of listing queues
// with nothing in them.
func TestDashboardScriptTimesAndIdle(t *testing.T) {
	if app, err := os.ReadFile("web/static/app.js"); err != nil || strings.Contains(string(app), "toLocale") {
		t.Errorf("app.js writes a time in the browser's locale (%v)", err)
	}
	ov := `{"mode":"shadow","policy":"builtin","interval_s":1,"now_ns":1795960862000000000,"intervals_ns":[1795960861000000000,1795960862000000000],
"healthy":true,"problems":[],"targets":[],"hot":[],"recommendations":[],"queues":2,"would_change":0,
"changes":[{"time_ns":1795960862123000000,"target":"leaf0","key":{"target":"leaf0","port":"Ethernet0","queue":3},"kind":"tune","state":"applied",
"old":{"kmin_bytes":1,"kmax_bytes":2,"pmax":0.1},"new":{"kmin_bytes":1,"kmax_bytes":2,"pmax":0.1},"reason":"r"}],
"changes_in_window":1,"flaps_in_window":0,"changes_per_queue_per_100_intervals":0,"rollbacks_in_window":0,"repairs_in_window":0,"fallbacks_in_window":0,"pause":{}}`
	out := runAppScript(t, `els["initial"] = { textContent: `+strconvQuote(ov)+` };`, `
const text = (id) => els[id].tBodies[0].children.map((tr) => tr.children.map((td) => String(td.textContent)).join("|"));
console.log(JSON.stringify({ updated: els["updated"].textContent, hot: text("hot"), audit: text("audit") }));
`)
	var got struct {
		Updated    string
		Hot, Audit []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Updated != "updated 2026-11-29 14:01:02 UTC" {
		t.Errorf("updated %q", got.Updated)
	}
	if len(got.Hot) != 1 || !strings.HasPrefix(got.Hot[0], "idle") {
		t.Errorf("most congested queues of an idle fabric: %q", got.Hot)
	}
	if len(got.Audit) != 1 || !strings.HasPrefix(got.Audit[0], "2026-11-29 14:01:02.123 UTC|") {
		t.Errorf("audit rows %q", got.Audit)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// runAppScript runs the dashboard's app.js in Node.js (the test is
// skipped without node) on the fake document, with before ahead of it
// and after behind it, and returns what it printed.
func runAppScript(t *testing.T, before, after string) []byte {
	t.Helper()
	nodeJS, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node to run the dashboard's script")
	}
	app, err := os.ReadFile("web/static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(nodeJS, "-e", fakeDOM+before+"\n"+string(app)+"\n"+after).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	return out
}

// TestDashboardScriptNumbers: the dashboard writes whole numbers with
// their zeros (Pmax 100% read "1%", 1 GB "1MB") and a size that rounds
// to 1000 of a unit in the next one (999999 B read "1KB").
func TestDashboardScriptNumbers(t *testing.T) {
	out := runAppScript(t, "", `
console.log(JSON.stringify([fmtBytes(999999), fmtBytes(1e9), fmtBytes(1000), fmtBytes(999), fmtBytes(1536000), fmtBytes(400000),
  setting({ kmin_bytes: 400000, kmax_bytes: 1600000, pmax: 1 }), setting({ kmin_bytes: 5000, kmax_bytes: 200000, pmax: 0.003 }),
  setting({ kmin_bytes: 1, kmax_bytes: 2, pmax: 0.2 })]));
`)
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []string{"1MB", "1GB", "1KB", "999B", "1.536MB", "400KB",
		"kmin 400KB kmax 1.6MB pmax 100%", "kmin 5KB kmax 200KB pmax 0.3%", "kmin 1B kmax 2B pmax 20%"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("numbers\n got %q\nwant %q", got, want)
	}
}

// TestDashboardScriptSilentIsNotIdle: with no queue busy in the newest
// interval, targets whose telemetry is stale are not called idle (a
// fabric whose switches had all gone silent read "idle").
func TestDashboardScriptSilentIsNotIdle(t *testing.T) {
	hot := func(targets string) string {
		ov := `{"mode":"shadow","policy":"builtin","interval_s":1,"now_ns":1795960862000000000,"intervals_ns":[1795960861000000000,1795960862000000000],
"healthy":false,"problems":[],"targets":` + targets + `,"hot":[],"recommendations":[],"queues":2,"would_change":0,"changes":[],
"changes_in_window":0,"flaps_in_window":0,"changes_per_queue_per_100_intervals":0,"rollbacks_in_window":0,"repairs_in_window":0,"fallbacks_in_window":0,"pause":{}}`
		out := runAppScript(t, `els["initial"] = { textContent: `+strconvQuote(ov)+` };`,
			`console.log(JSON.stringify(els["hot"].tBodies[0].children.map((tr) => tr.children.map((td) => String(td.textContent)).join("|"))));`)
		var rows []string
		if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 1 {
			t.Fatalf("%v: %s", err, out)
		}
		return rows[0]
	}
	tg := func(name string, stale bool) string {
		return `{"target":"` + name + `","telemetry_age_s":1,"stale":` + map[bool]string{true: "true", false: "false"}[stale] + `,"heard":true,"queues":1,"changes_in_window":0}`
	}
	if got := hot("[" + tg("leaf0", true) + "," + tg("leaf1", true) + "]"); !strings.HasPrefix(got, "no telemetry: none of the 2 targets reports") {
		t.Errorf("every target silent: %q", got)
	}
	if got := hot("[" + tg("leaf0", false) + "," + tg("leaf1", true) + "]"); !strings.HasPrefix(got, "idle: ") || !strings.HasSuffix(got, "no telemetry from leaf1") {
		t.Errorf("one target silent: %q", got)
	}
	if got := hot("[" + tg("leaf0", false) + "]"); got != "idle: no queue held bytes, marked or was paused in the newest interval" {
		t.Errorf("every target reporting: %q", got)
	}
	// a fleet member: the switches another member serves are not silent
	other := `{"target":"leaf1","telemetry_age_s":0,"stale":false,"heard":false,"queues":0,"changes_in_window":0,"unserved":true}`
	if got := hot("[" + tg("leaf0", false) + "," + other + "]"); got != "idle: no queue held bytes, marked or was paused in the newest interval" {
		t.Errorf("a switch another member serves: %q", got)
	}
}

// TestDashboardScriptHighlightsWhatTheGuardLetsThrough: the table's
// highlighted rows are the changes the guard lets through, those "would
// change" counts; a recommendation it rejects shows its setting and rule,
// not highlighted (every row differing from the switch was).
func TestDashboardScriptHighlightsWhatTheGuardLetsThrough(t *testing.T) {
	rec := func(port string, changes bool, guard string) string {
		return `{"key":{"target":"leaf0","port":"` + port + `","queue":3},"current":{"kmin_bytes":100000,"kmax_bytes":400000,"pmax":0.2},
"recommended":{"kmin_bytes":200000,"kmax_bytes":800000,"pmax":0.2},"confidence":0.9,"reason":"r","guard":"` + guard + `","changes":` +
			map[bool]string{true: "true", false: "false"}[changes] + `}`
	}
	ov := `{"mode":"shadow","policy":"builtin","interval_s":1,"now_ns":1795960862000000000,"intervals_ns":[1795960861000000000,1795960862000000000],
"healthy":true,"problems":[],"targets":[],"hot":[],"recommendations":[` + rec("Ethernet0", true, "") + `,` + rec("Ethernet1", false, "min-hold") + `],
"queues":2,"would_change":1,"differing":2,"changes":[],
"changes_in_window":0,"flaps_in_window":0,"changes_per_queue_per_100_intervals":0,"rollbacks_in_window":0,"repairs_in_window":0,"fallbacks_in_window":0,"pause":{}}`
	out := runAppScript(t, `els["initial"] = { textContent: `+strconvQuote(ov)+` };`,
		`console.log(JSON.stringify(els["recs"].tBodies[0].children.map((tr) => tr.className + "|" + tr.children.map((td) => String(td.textContent)).join("|"))));`)
	var rows []string
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.HasPrefix(rows[0], "change|leaf0 Ethernet0 q3|") || strings.HasPrefix(rows[1], "change|") ||
		!strings.Contains(rows[1], "|kmin 200KB kmax 800KB pmax 20%|90%|min-hold|") {
		t.Errorf("rows %q: want the change let through highlighted, the held one not, with its setting and rule", rows)
	}
}

// TestDashboardShowsPendingApprovals: in approve mode the overview says
// so and carries what waits for approval (plan IDs, who approved), as
// GET /pending does, and the page lists it (the overview said "0 changed
// in the last interval" and nothing of the 2 changes waiting).
func TestDashboardShowsPendingApprovals(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.a.cfg.Approve = true
	h := r.a.Handler()
	r.interval(t)
	r.interval(t)
	pend := r.a.Pending()
	if len(pend) != 2 {
		t.Fatalf("%d pending, want both queues' tunes", len(pend))
	}
	if _, err := r.a.Approve([]env.QueueKey{pend[0].Key}, false, "carol", []string{pend[0].Plan}); err != nil {
		t.Fatal(err)
	}
	body := get(t, h, "/api/overview").Body.String()
	var ov web.Overview
	if err := json.Unmarshal([]byte(body), &ov); err != nil {
		t.Fatal(err)
	}
	if !ov.Approve || ov.PendingN != 2 || len(ov.Pending) != 2 || ov.Pending[0].Plan != pend[0].Plan ||
		!ov.Pending[0].Approved || ov.Pending[0].ApprovedBy != "carol" || ov.Pending[1].Approved {
		t.Fatalf("overview approve %v, %d pending: %+v; want both, the first approved by carol", ov.Approve, ov.PendingN, ov.Pending)
	}
	out := runAppScript(t, `els["initial"] = { textContent: `+strconvQuote(body)+` };`, `
console.log(JSON.stringify({ hidden: els["approvals"].hidden, mode: els["mode"].textContent, n: String(els["pending-n"].textContent),
  rows: els["pending"].tBodies[0].children.map((tr) => tr.children.map((td) => String(td.textContent)).join("|")) }));
`)
	var got struct {
		Hidden  bool
		Mode, N string
		Rows    []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Hidden || !strings.Contains(got.Mode, "approve mode: 2 waiting for approval") || got.N != "2" || len(got.Rows) != 2 ||
		!strings.Contains(got.Rows[0], "|"+pend[0].Plan+"|") || !strings.Contains(got.Rows[0], "|by carol at ") || !strings.Contains(got.Rows[1], "|no|") {
		t.Errorf("page: %+v", got)
	}
}

// TestDashboardScriptSliderHoldsItsInterval: with live off, the interval
// picked on the slider stays on screen (the picture asked for by its
// time, at=) as newer intervals come, and once it has left the kept
// history the page says so (the slider counted back from the newest, so
// the picture and its label moved on at every refresh).
func TestDashboardScriptSliderHoldsItsInterval(t *testing.T) {
	const s0 = int64(1795960861000000000)
	ov := func(from, to int) string {
		var iv []string
		for i := from; i <= to; i++ {
			iv = append(iv, fmt.Sprint(s0+int64(i)*1e9))
		}
		return `{"mode":"shadow","policy":"builtin","interval_s":1,"now_ns":` + iv[len(iv)-1] + `,"intervals_ns":[` + strings.Join(iv, ",") + `],
"healthy":true,"problems":[],"targets":[],"hot":[],"recommendations":[],"queues":2,"would_change":0,"changes":[],
"changes_in_window":0,"flaps_in_window":0,"changes_per_queue_per_100_intervals":0,"rollbacks_in_window":0,"repairs_in_window":0,"fallbacks_in_window":0,"pause":{}}`
	}
	out := runAppScript(t, `els["live"] = Object.assign(el("live"), { checked: true }); els["view"] = Object.assign(el("view"), { value: "fabric" });`, `
const E = (id) => document.getElementById(id);
const seen = () => ({ label: E("ago-label").textContent, src: String(E("heatmap").src), ago: String(E("ago").value), msg: E("heatmap-msg").textContent });
const got = [];
render(JSON.parse(`+strconvQuote(ov(1, 5))+`));
els["ago"].value = 2; agoPicked(); got.push(seen());
render(JSON.parse(`+strconvQuote(ov(2, 6))+`)); got.push(seen());
render(JSON.parse(`+strconvQuote(ov(4, 8))+`)); got.push(seen());
els["live"].checked = true; render(JSON.parse(`+strconvQuote(ov(4, 8))+`)); got.push(seen());
console.log(JSON.stringify(got));
`)
	var got []struct{ Label, Src, Ago, Msg string }
	if err := json.Unmarshal(out, &got); err != nil || len(got) != 4 {
		t.Fatalf("%v: %s", err, out)
	}
	at := fmt.Sprintf("at=%d", s0+3e9)
	if !strings.HasPrefix(got[0].Label, "2026-11-29 14:01:04.000 UTC") || !strings.Contains(got[0].Src, at) {
		t.Errorf("picked: %+v; want the interval at 14:01:04 (%s)", got[0], at)
	}
	if got[1].Label[:27] != got[0].Label[:27] || !strings.Contains(got[1].Src, at) || got[1].Ago != "3" {
		t.Errorf("a newer interval came: %+v; want the one picked, %+v, 3 back", got[1], got[0])
	}
	if !strings.Contains(got[2].Label, "no longer kept") || !strings.Contains(got[2].Msg, "has left the kept history") {
		t.Errorf("the interval picked left the history: %+v", got[2])
	}
	if got[3].Label != "newest" || !strings.Contains(got[3].Src, "ago=0") {
		t.Errorf("live again: %+v", got[3])
	}
}
