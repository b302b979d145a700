package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
)

// getChanges fetches one page of /changes.
func getChanges(t *testing.T, base, query string) (journal.ChangesPage, int) {
	t.Helper()
	resp, err := http.Get(base + "/changes?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p journal.ChangesPage
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatalf("/changes?%s: %v", query, err)
		}
	}
	return p, resp.StatusCode
}

// /changes serves the audit log, not only the last batch: filtered by
// target and time, newest first in pages of a bounded size, each page in
// order, with the cursor of the next (older) one.
func TestHTTPChangesPages(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	t0 := time.Unix(1_700_000_000, 0)
	var es []core.AuditEntry
	for i := 0; i < 250; i++ {
		tg := []string{"leaf0", "leaf1"}[i%2]
		es = append(es, core.AuditEntry{TimeNs: t0.Add(time.Duration(i) * time.Second).UnixNano(), Target: tg,
			Change: core.Change{Key: env.QueueKey{Target: tg, Port: "Ethernet0", Queue: 3}, Kind: core.KindTune, Reason: fmt.Sprint(i)}, State: core.StateApplied})
	}
	if _, err := r.j.Intent(es); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r.a.Handler())
	defer srv.Close()

	// Paging back through leaf0's 125 entries, 50 at a time.
	var all []core.AuditEntry
	before := ""
	for pages := 0; ; pages++ {
		p, code := getChanges(t, srv.URL, "target=leaf0&limit=50"+before)
		if code != http.StatusOK || len(p.Changes) == 0 || len(p.Changes) > 50 || pages > 3 {
			t.Fatalf("page %d: status %d, %d entries", pages, code, len(p.Changes))
		}
		for i, e := range p.Changes {
			if e.Target != "leaf0" || (i > 0 && e.Seq <= p.Changes[i-1].Seq) {
				t.Fatalf("page %d: entry %d: %+v", pages, i, e)
			}
		}
		all = append(p.Changes, all...)
		if p.NextBefore == 0 {
			break
		}
		if p.NextBefore != p.Changes[0].Seq {
			t.Fatalf("next_before %d, first seq %d", p.NextBefore, p.Changes[0].Seq)
		}
		before = fmt.Sprintf("&before=%d", p.NextBefore)
	}
	if len(all) != 125 || all[0].Seq != 1 || all[124].Seq != 249 {
		t.Fatalf("leaf0: %d entries, %d..%d", len(all), all[0].Seq, all[len(all)-1].Seq)
	}
	// The default page is the newest 100; since= is a time or a duration.
	if p, _ := getChanges(t, srv.URL, ""); len(p.Changes) != 100 || p.Changes[99].Seq != 250 || p.NextBefore != 151 {
		t.Fatalf("default page: %d entries, next %d", len(p.Changes), p.NextBefore)
	}
	since := url.QueryEscape(t0.Add(240 * time.Second).Format(time.RFC3339Nano))
	if p, _ := getChanges(t, srv.URL, "since="+since); len(p.Changes) != 10 || p.Changes[0].Seq != 241 || p.NextBefore != 0 {
		t.Fatalf("since %s: %+v", since, p)
	}
	r.clk.t = t0.Add(250 * time.Second)
	if p, _ := getChanges(t, srv.URL, "since=5s&target=leaf1"); len(p.Changes) != 3 || p.Changes[0].Seq != 246 {
		t.Fatalf("since 5s: %+v", p)
	}
	for _, q := range []string{"limit=0", fmt.Sprintf("limit=%d", journal.MaxChangesPage+1), "limit=x", "before=-1", "before=x", "since=yesterday"} {
		if _, code := getChanges(t, srv.URL, q); code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", q, code)
		}
	}
	// A time past what ns since 1970 hold is clamped, not wrapped (1600
	// read as a time after every change, 2300 before them)
	if p, _ := getChanges(t, srv.URL, "since=1600-01-01T00:00:00Z&limit=1000"); len(p.Changes) != 250 {
		t.Errorf("since 1600: %d changes, want all 250", len(p.Changes))
	}
	if p, _ := getChanges(t, srv.URL, "since=2300-01-01T00:00:00Z"); len(p.Changes) != 0 {
		t.Errorf("since 2300: %d changes, want none", len(p.Changes))
	}
	for _, q := range []string{"limit=0", fmt.Sprintf("limit=%d", web.MaxRecommendationsLimit+1)} {
		if code := get(t, r.a.Handler(), "/recommendations?since=1h&"+q).Code; code != http.StatusBadRequest {
			t.Errorf("/recommendations %s: status %d, want 400", q, code)
		}
	}
}

// Before any interval (and for a target with nothing stored) every list
// endpoint answers an empty JSON list, never null; an unknown target is
// 404 naming the configured ones.
func TestHTTPEmptyListsAreNotNull(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	srv := httptest.NewServer(r.a.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	for path, want := range map[string]string{
		"/recommendations":                       "[]",
		"/recommendations?target=leaf0":          "[]",
		"/recommendations?since=1h":              "[]",
		"/recommendations?since=1h&target=leaf0": "[]",
		"/changes/last":                          "[]",
		"/changes":                               `"changes": []`,
		"/changes?target=leaf0&since=1h":         `"changes": []`,
	} {
		code, body := get(path)
		if code != http.StatusOK || !strings.Contains(body, want) || strings.Contains(body, "null") {
			t.Errorf("%s: %d %s, want 200 with %s", path, code, body, want)
		}
	}
	for _, path := range []string{"/recommendations?target=leaf9", "/recommendations?target=leaf9&since=1h", "/changes?target=leaf9"} {
		if code, body := get(path); code != http.StatusNotFound || !strings.Contains(body, "leaf9") || !strings.Contains(body, "targets: leaf0") {
			t.Errorf("%s: %d %s, want 404 naming leaf0", path, code, body)
		}
	}
	// a target no longer configured whose recommendations the db keeps:
	// served, as /changes serves its history (it was 404 "has no history")
	k9 := env.QueueKey{Target: "leaf9", Port: "Ethernet0", Queue: 3}
	if err := r.j.PutRecommendations([]core.Recommendation{{TimeNs: r.clk.t.UnixNano(), Key: k9}}); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/recommendations?target=leaf9&since=1h"); code != http.StatusOK || !strings.Contains(body, `"target": "leaf9"`) {
		t.Errorf("a removed target's stored recommendations: %d %s", code, body)
	}
}
