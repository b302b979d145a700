package demo

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard's refresh does not wait for the fleet panel: with /fleet
// not answering (etcd down) the overview still refreshes every interval,
// the panel says it got no answer, then shows the stale status /fleet
// serves, marked so. Before, every refresh awaited /fleet: the whole page
// stalled ~17 s a refresh.
func TestDashboardRefreshesWhileFleetHangs(t *testing.T) {
	exe := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := running(t, ctx, Config{Scenario: smallFabric(), Listen: "127.0.0.1:0", Timescale: 100, Interval: 200 * time.Millisecond})
	// the agent's page behind a proxy whose /fleet hangs 8 s the first
	// time, then answers as an agent with etcd down does
	u, err := url.Parse(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	release := make(chan struct{})
	defer close(release)
	mux := http.NewServeMux()
	mux.Handle("/", httputil.NewSingleHostReverseProxy(u))
	mux.HandleFunc("/fleet", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if asked.Add(1) == 1 {
			select {
			case <-time.After(8 * time.Second):
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusGatewayTimeout)
		w.Write([]byte(`{"name":"dc1","self":"a","leader":"a","members":[{"id":"a","owns":1,"assigned":1,"lease_ttl_s":4}],"owned":["leaf0"],` +
			`"stale":true,"as_of":"2026-01-02T03:04:05Z","error":"fleet dc1: etcd at 127.0.0.1:2379 did not answer"}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	bctx := headless(t, ctx, exe)
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	waitJS := func(what, expr string, limit time.Duration) {
		t.Helper()
		pollJS(t, bctx, what, expr, limit, 100*time.Millisecond, func() string {
			return fmt.Sprintf("fleet panel: %q, refreshes %s", eval(`document.getElementById("fleet-msg").textContent`), eval(`document.body.dataset.refreshes || "0"`))
		})
	}
	if _, err := chromedp.Run(bctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	waitJS("/fleet asked", `true`, time.Second)
	for asked.Load() == 0 {
		time.Sleep(50 * time.Millisecond)
	}
	hung := time.Now()
	waitJS("the page refreshes while /fleet hangs", `Number(document.body.dataset.refreshes || 0) >= 3`, 4500*time.Millisecond)
	if time.Since(hung) > 4500*time.Millisecond {
		t.Fatalf("3 refreshes took %v beside a /fleet that hangs", time.Since(hung))
	}
	waitJS("the panel says /fleet did not answer", `document.getElementById("fleet-msg").textContent === "fleet status not read: no answer in 5 s"`, 10*time.Second)
	waitJS("the stale status shown, marked so", `document.getElementById("fleet-msg").textContent.startsWith("stale: fleet status as of 2026-01-02 03:04:05") &&
		document.getElementById("fleet-msg").textContent.endsWith("etcd did not answer: fleet dc1: etcd at 127.0.0.1:2379 did not answer") &&
		document.getElementById("fleet-owned").textContent === "leaf0" && !document.getElementById("fleet").hidden`, 10*time.Second)
}
