package agent

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/internal/etcdtest"
)

// do serves one request with a's handler and decodes its JSON answer.
func do(t *testing.T, a *Agent, method, target string, v any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: Content-Type %q: %s", method, target, ct, rec.Body.String())
	}
	if v != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, target, err, rec.Body.String())
		}
	}
	return rec.Code
}

func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Two agents of a fleet: GET /fleet shows the fleet as each sees it (its
// own id and switches), the gauges of members and leader agree with it,
// and the operator's POSTs work on either agent: a drain (and its undo),
// a rebalance and a resign, each answering JSON; a wrong method is a 405
// and a missing or unknown member a 400.
func TestFleetHTTP(t *testing.T) {
	ep, names, sws, mu, writers := fleetSwitches(t)
	defer feedSwitches(sws)()
	a, cancelA, doneA := startFleetAgent(t, ep, "a", names, sws, mu, writers, 200*time.Millisecond)
	defer func() { cancelA(); <-doneA; a.Close() }()
	b, cancelB, doneB := startFleetAgent(t, ep, "b", names, sws, mu, writers, 200*time.Millisecond)
	defer func() { cancelB(); <-doneB; b.Close() }()
	var st fleet.Status
	within(t, 30*time.Second, "both members own switches, one leads, the gauges say so", func() bool {
		var sa, sb fleet.Status
		if do(t, a, "GET", "/fleet", &sa) != 200 || do(t, b, "GET", "/fleet", &sb) != 200 {
			return false
		}
		st = sa
		leaders := testutilCounter(t, a, "ecntune_agent_fleet_leader", "") + testutilCounter(t, b, "ecntune_agent_fleet_leader", "")
		return len(sa.Owned) > 0 && len(sb.Owned) > 0 && len(sa.Owned)+len(sb.Owned) == 4 && sa.Leader != "" &&
			testutilCounter(t, a, "ecntune_agent_fleet_members", "") == 2 && testutilCounter(t, b, "ecntune_agent_fleet_members", "") == 2 &&
			leaders == 1
	})
	if st.Self != "a" || st.Name != "t" || len(st.Members) != 2 || len(st.Switches) != 4 {
		t.Fatalf("GET /fleet on a: %+v", st)
	}
	fleetPanel(t, a)
	var e struct{ Error string }
	for _, c := range []struct {
		method, target string
		code           int
		want           string
	}{
		{"GET", "/fleet/drain?member=a", 405, "use POST"},
		{"POST", "/fleet", 405, "use GET"},
		{"PUT", "/fleet/resign", 405, "use POST"},
		{"POST", "/fleet/drain", 400, "member: required"},
		{"POST", "/fleet/drain?member=zz", 400, `no member "zz"`},
		{"POST", "/fleet/drain?member=a&undo=maybe", 400, "undo"},
	} {
		if code := do(t, b, c.method, c.target, &e); code != c.code || !strings.Contains(e.Error, c.want) {
			t.Errorf("%s %s: %d %q, want %d %q", c.method, c.target, code, e.Error, c.code, c.want)
		}
	}
	fleetHTTPSteer(t, a, b)
}

// fleetHTTPSteer drains a from b's HTTP and back, rebalances and makes the
// leader resign.
func fleetHTTPSteer(t *testing.T, a, b *Agent) {
	var d struct {
		Member   string
		Draining bool
	}
	if code := do(t, b, "POST", "/fleet/drain?member=a", &d); code != 200 || d.Member != "a" || !d.Draining {
		t.Fatalf("drain: %d %+v", code, d)
	}
	owned := func(x *Agent) int { var s fleet.Status; do(t, x, "GET", "/fleet", &s); return len(s.Owned) }
	within(t, 30*time.Second, "b owns every switch", func() bool { return owned(b) == 4 && owned(a) == 0 })
	if code := do(t, a, "POST", "/fleet/drain?member=a&undo=1", &d); code != 200 || d.Draining {
		t.Fatalf("undo: %d %+v", code, d)
	}
	var r fleet.Result
	if code := do(t, a, "POST", "/fleet/rebalance", &r); code != 200 || r.Kind != "rebalance" || r.Members != 2 || r.Leader == "" {
		t.Fatalf("rebalance: %d %+v", code, r)
	}
	within(t, 30*time.Second, "a owns switches again", func() bool { return owned(a) > 0 })
	var h fleet.Handoff
	if code := do(t, a, "POST", "/fleet/resign", &h); code != 200 || h.From == h.To || h.To == "" || h.Reelected {
		t.Fatalf("resign: %d %+v", code, h)
	}
	lead := map[string]*Agent{"a": a, "b": b}[h.To]
	within(t, 30*time.Second, h.To+"'s ecntune_agent_fleet_leader is 1", func() bool {
		return testutilCounter(t, lead, "ecntune_agent_fleet_leader", "") == 1
	})
	t.Logf("rebalance: %+v; resign: %s → %s in %v", r, h.From, h.To, h.Took.Round(time.Millisecond))
}

// fleetPanel: the dashboard has the fleet panel and its script reads
// GET /fleet, whose answer has every field the panel shows: the fleet's
// name, this member, the leader, each member's switch counts and lease,
// and the switches this agent owns.
func fleetPanel(t *testing.T, a *Agent) {
	t.Helper()
	page, script := httptest.NewRecorder(), httptest.NewRecorder()
	a.Handler().ServeHTTP(page, httptest.NewRequest("GET", "/", nil))
	a.Handler().ServeHTTP(script, httptest.NewRequest("GET", "/static/app.js", nil))
	for _, id := range []string{`id="fleet"`, `id="fleet-self"`, `id="fleet-leader"`, `id="fleet-members"`, `id="fleet-owned"`} {
		if !strings.Contains(page.Body.String(), id) {
			t.Errorf("the dashboard has no %s", id)
		}
	}
	var raw map[string]any
	if do(t, a, "GET", "/fleet", &raw) != 200 {
		t.Fatalf("GET /fleet: %v", raw)
	}
	for _, k := range []string{"name", "self", "leader", "members", "owned", "switches"} {
		if raw[k] == nil || !strings.Contains(script.Body.String(), "st."+k) {
			t.Errorf("GET /fleet's %q: %v; the script reads it: %v", k, raw[k], strings.Contains(script.Body.String(), "st."+k))
		}
	}
	m := raw["members"].([]any)[0].(map[string]any)
	for _, k := range []string{"id", "owns", "assigned", "lease_ttl_s"} {
		if _, ok := m[k]; !ok || !strings.Contains(script.Body.String(), "m."+k) {
			t.Errorf("a member's %q: %v", k, m)
		}
	}
}

// With etcd down, GET /fleet answers within FleetStatusTimeout: the last
// status read, marked stale, with when and why (it waited 15 s, and the
// dashboard's every refresh with it).
func TestFleetStatusFailsFastWithEtcdDown(t *testing.T) {
	c := etcdtest.Cluster(t, 1)
	sws := map[string]*fakeSwitch{"leaf0": newFakeSwitch("leaf0", env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: 3})}
	defer feedSwitches(sws)()
	a, cancelA, doneA := startFleetAgent(t, c.Endpoints()[0], "a", []string{"leaf0"}, sws, &sync.Mutex{}, map[string]map[string]int{}, time.Hour)
	defer func() { cancelA(); <-doneA; a.Close() }()
	within(t, 20*time.Second, "a owns leaf0", func() bool { var st fleet.Status; return do(t, a, "GET", "/fleet", &st) == 200 && len(st.Owned) == 1 })
	c.Stop(0)
	start := time.Now()
	var st StaleFleetStatus
	code := do(t, a, "GET", "/fleet", &st)
	took := time.Since(start)
	if took > FleetStatusTimeout+time.Second || code/100 != 5 || !st.Stale || st.Error == "" || st.Name == "" || len(st.Members) != 1 || time.Since(st.AsOf) > time.Minute {
		t.Fatalf("GET /fleet with etcd down: %d in %v: %+v", code, took, st)
	}
}
