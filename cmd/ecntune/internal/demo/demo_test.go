package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/internal/await"
	"github.com/ecntune/ecntune/simenv"
)

// smallFabric is a 2-leaf, 1-spine fabric of 6 hosts whose traffic (web
// search-like flows and an incast every 200us) ends with the scenario, at
// 2 ms.
func smallFabric() simenv.Config {
	c := simenv.DefaultConfig()
	c.Name = "small"
	c.Topology = simenv.LeafSpineTopology(2, 1, 3, 100e9, 100e9, simenv.Microsecond)
	c.Duration = 2 * simenv.Millisecond
	cdf := []simenv.CDFPoint{{Bytes: 0, Percent: 0}, {Bytes: 10_000, Percent: 50}, {Bytes: 1_000_000, Percent: 100}}
	c.Workloads = []simenv.Workload{
		{Kind: simenv.WorkloadCDF, Priority: 3, CDF: cdf, Load: 0.5, End: 2 * simenv.Millisecond},
		{Kind: simenv.WorkloadIncast, Priority: 3, Fanin: 4, SizeBytes: 200_000, Every: 200 * simenv.Microsecond, End: 2 * simenv.Millisecond},
	}
	return c
}

// txBytes sums ecntune_target_tx_bytes_total over every target of a
// /metrics page.
func txBytes(t *testing.T, url string) float64 {
	t.Helper()
	resp, err := http.Get(url + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "ecntune_target_tx_bytes_total{") {
			v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			sum += v
		}
	}
	return sum
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return resp.StatusCode
}

// TestDemoRecommendsKeepsTrafficAndStops: the demo starts on port 0,
// the agent recommends within a bounded simulated time, the traffic goes
// on past the scenario's end, and cancelling the context stops it all:
// Run returns, the address refuses connections and no goroutine is left.
func TestDemoRecommendsKeepsTrafficAndStops(t *testing.T) {
	base := runtime.NumGoroutine()
	for _, closed := range []bool{false, true} {
		const timescale, interval = 100, 100 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		d, err := Start(ctx, Config{Scenario: smallFabric(), Listen: "127.0.0.1:0", Timescale: timescale,
			Interval: interval, ClosedLoop: closed})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if !strings.HasPrefix(d.URL(), "http://127.0.0.1:") || strings.HasSuffix(d.URL(), ":0/") {
			t.Fatalf("URL %q", d.URL())
		}
		firsts := make(chan FirstRecommendation, 1)
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx, func(f FirstRecommendation) { firsts <- f }) }()

		var first FirstRecommendation
		select {
		case first = <-firsts:
		case err := <-done:
			cancel()
			t.Fatalf("closed=%v: Run returned before any recommendation: %v", closed, err)
		case <-time.After(30 * time.Second):
			cancel()
			t.Fatalf("closed=%v: no recommendation after 30 s of wall time", closed)
		}
		// The agent needs two samples for a first measured interval; with
		// the start-up, it recommends well within 10 intervals.
		bound := simenv.FromDuration(10*interval) / timescale
		if first.Simulated > bound || first.Queues == 0 {
			t.Errorf("closed=%v: first recommendations at simulated %v (bound %v) for %d queues", closed, first.Simulated, bound, first.Queues)
		}
		t.Logf("closed=%v: first recommendations after %v wall, %v simulated, %d queues", closed, first.Wall.Round(time.Millisecond), first.Simulated, first.Queues)
		var recs []json.RawMessage
		if code := getJSON(t, d.URL()+"recommendations", &recs); code != 200 || len(recs) == 0 {
			t.Errorf("closed=%v: /recommendations %d with %d entries", closed, code, len(recs))
		}

		// traffic past the scenario's end (2 ms): wait for 2 more
		// repetitions and see the counters move there
		end := smallFabric().Duration
		waitSim(t, d, 2*end)
		tx1 := txBytes(t, d.URL())
		waitSim(t, d, 3*end)
		tx2 := txBytes(t, d.URL())
		if !(tx2 > tx1) {
			t.Errorf("closed=%v: no traffic between simulated %v and %v, after the scenario's end (tx %g -> %g bytes)", closed, 2*end, 3*end, tx1, tx2)
		}
		var st Status
		getJSON(t, d.URL()+"demo", &st)
		if st.ScenarioEnded || !st.Loop || st.FirstRecommend == nil || st.FirstRecommend.SimulatedNs != first.Simulated.Duration().Nanoseconds() || st.Switches != 3 {
			t.Errorf("closed=%v: /demo %+v", closed, st)
		}
		// /healthz judges telemetry age in wall time: on a slow machine
		// (or under -race) a sample can be late for a moment, so the
		// check is that the demo is healthy while it runs, within a
		// generous ceiling, not at one instant.
		healthy, code := false, 0
		for end := time.Now().Add(30 * time.Second); !healthy && time.Now().Before(end); {
			resp, err := http.Get(d.URL() + "healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			code = resp.StatusCode
			healthy = code == 200
			if !healthy {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if !healthy {
			t.Errorf("closed=%v: /healthz %d while the demo runs", closed, code)
		}

		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("closed=%v: Run: %v", closed, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("closed=%v: Run still running 10 s after cancel", closed)
		}
		if _, err := http.Get(d.URL() + "healthz"); err == nil {
			t.Errorf("closed=%v: the HTTP address still answers after Run returned", closed)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	leaked(t, base)
}

// TestDemoOnceSaysTheScenarioEnded: with Once the traffic stops at the
// scenario's end and /healthz, the dashboard's pill and /demo say so.
func TestDemoOnceSaysTheScenarioEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := Start(ctx, Config{Scenario: smallFabric(), Listen: "127.0.0.1:0", Timescale: 100, Interval: 100 * time.Millisecond, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, nil) }()
	waitSim(t, d, 2*smallFabric().Duration)
	deadline := time.Now().Add(10 * time.Second)
	for !d.Switches().Ended() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var st Status
	getJSON(t, d.URL()+"demo", &st)
	if !st.ScenarioEnded || st.Loop {
		t.Errorf("/demo %+v, want the scenario ended", st)
	}
	resp, err := http.Get(d.URL() + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		body.WriteString(sc.Text() + "\n")
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body.String(), "scenario small ended at simulated 2ms") {
		t.Errorf("/healthz %d %q, want 503 saying the scenario ended", resp.StatusCode, body.String())
	}
	// The dashboard's pill reads the same health.
	var ov struct {
		Healthy  bool     `json:"healthy"`
		Problems []string `json:"problems"`
	}
	getJSON(t, d.URL()+"api/overview", &ov)
	if ov.Healthy || !strings.Contains(strings.Join(ov.Problems, "\n"), "scenario small ended") {
		t.Errorf("overview healthy %v, problems %q, want what /healthz says", ov.Healthy, ov.Problems)
	}
	cancel()
	<-done
}

// waitSim waits until the simulation reaches at (await.Reached).
func waitSim(t *testing.T, d *Demo, at simenv.Time) {
	t.Helper()
	await.Reached(t, "simulated time (ns)", func() int64 { now, _ := d.Switches().Status(); return int64(now) }, int64(at))
}

// leaked fails when, 10 s after everything stopped, more goroutines run
// than before the demo started.
func leaked(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines after the demos stopped, %d before:\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
