package demo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// chromium finds a Chromium to drive: $ECNTUNE_CHROMIUM, else Debian's
// package (.ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ECNTUNE_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Skip("CANNOT RUN the dashboard's browser test: no Chromium found (install Debian's chromium package, " +
		"as .ci/run does, or set ECNTUNE_CHROMIUM to a Chromium binary)")
	return ""
}

// artefacts is where browser tests leave their screenshots:
// $ECNTUNE_ARTEFACTS, else artefacts/ at the repository's root.
func artefacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ECNTUNE_ARTEFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "artefacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDashboardInChromium opens the closed-loop demo's dashboard in
// headless Chromium and checks what an operator sees: the heatmap and the
// queue chart drawn, every switch with its device profile, recommendations
// with reasons, the audit log filling, the page refreshing by itself and
// the time slider moving the heatmap back; then saves a screenshot.
func TestDashboardInChromium(t *testing.T) {
	exe := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := running(t, ctx, Config{Scenario: smallFabric(), Listen: "127.0.0.1:0", Timescale: 100,
		Interval: 200 * time.Millisecond, ClosedLoop: true})

	bctx := headless(t, ctx, exe)

	// waitJS polls a boolean expression of the page until it holds.
	waitJS := func(what, expr string, limit time.Duration) {
		t.Helper()
		pollJS(t, bctx, what, expr, limit, 200*time.Millisecond, func() string {
			html, _ := chromedp.Run(bctx, chromedp.OuterHTML("body"))
			if len(html) > 3000 {
				html = html[:3000]
			}
			return "page: " + html
		})
	}
	if _, err := chromedp.Run(bctx, chromedp.Navigate(d.URL())); err != nil {
		t.Fatal(err)
	}
	imgOK := `(id) => { const i = document.getElementById(id); return i.complete && i.naturalWidth > 300 && !i.hidden; }`
	waitJS("heatmap drawn", `(`+imgOK+`)("heatmap")`, 60*time.Second)
	waitJS("queue chart drawn", `(`+imgOK+`)("queue-chart")`, 30*time.Second)
	waitJS("a switch per target with its device", `[...document.querySelectorAll("#targets tbody tr")].length === 3 &&
		[...document.querySelectorAll("#targets tbody tr")].every(r => r.cells[1].textContent === "ecntune")`, 30*time.Second)
	waitJS("recommendations with reasons", `[...document.querySelectorAll("#recs tbody tr")].some(r => r.cells[5].textContent.length > 10)`, 30*time.Second)
	waitJS("the audit log shows a change", `document.querySelectorAll("#audit tbody tr").length > 0`, 60*time.Second)
	// More than a page of changes (30 manual entries written beside the
	// agent's): the log pages back and forth, and its counter is the
	// log's, not the page's.
	var manual []core.AuditEntry
	for i := range 30 {
		k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3}
		manual = append(manual, core.AuditEntry{TimeNs: time.Now().UnixNano() + int64(i), Target: "leaf0",
			Change: core.Change{Key: k, Kind: core.KindManual, Reason: "browser test"}, State: core.StateApplied})
	}
	if _, err := d.Agent().Journal().Intent(manual); err != nil {
		t.Fatal(err)
	}
	waitJS("an older page of the audit log", `!document.getElementById("audit-older").hidden &&
		Number(document.getElementById("n-audit").textContent) >= 30`, 30*time.Second)
	if _, err := chromedp.Run(bctx, chromedp.Click("#audit-older")); err != nil {
		t.Fatal(err)
	}
	waitJS("the older page shown", `document.getElementById("audit-page").textContent.startsWith("entries before #") &&
		document.querySelectorAll("#audit tbody tr").length > 0 && !document.getElementById("audit-newest").hidden`, 30*time.Second)
	if _, err := chromedp.Run(bctx, chromedp.Click("#audit-newest")); err != nil {
		t.Fatal(err)
	}
	waitJS("back to the newest page", `document.getElementById("audit-page").textContent === "newest entries"`, 30*time.Second)
	waitJS("healthy", `document.getElementById("health").textContent === "healthy"`, 30*time.Second)
	n0, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.dataset.refreshes`))
	if err != nil {
		t.Fatal(err)
	}
	waitJS("the page refreshes by itself", `Number(document.body.dataset.refreshes) > `+n0+`+1`, 30*time.Second)

	// The slider takes the heatmap back in time.
	waitJS("a few intervals kept", `Number(document.getElementById("ago").max) >= 3`, 30*time.Second)
	src, err := chromedp.Run(bctx,
		chromedp.Evaluate[string](`(() => { const s = document.getElementById("ago"); s.value = 3; s.dispatchEvent(new Event("input")); return document.getElementById("heatmap").src; })()`))
	if err != nil {
		t.Fatal(err)
	}
	// the interval picked, by its time: it stays as newer ones come
	if !strings.Contains(src, "&at=") {
		t.Errorf("after the slider moved, the heatmap is %s", src)
	}
	waitJS("heatmap 3 intervals back drawn", `(`+imgOK+`)("heatmap") && document.getElementById("ago-label").textContent.includes("before the newest")`, 30*time.Second)
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { document.getElementById("live").checked = true; return true; })()`)); err != nil {
		t.Fatal(err)
	}
	waitJS("back to the newest", `document.getElementById("ago-label").textContent === "newest" && (`+imgOK+`)("heatmap")`, 30*time.Second)

	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(artefacts(t), "dashboard.png")
	if err := os.WriteFile(p, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", p, len(shot))
}
