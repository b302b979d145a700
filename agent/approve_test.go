package agent

import (
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
)

// Approve mode: the closed loop sets nothing an operator did not approve;
// /pending lists the proposals, POST /approve approves one queue, which
// the next interval sets with the approver in its audit entry; the other
// queue still waits. Outside approve mode approvals are refused.
func TestApproveModeAppliesOnlyApproved(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	if _, err := r.a.Approve(nil, true, "alice", nil); err != ErrNotApproveMode {
		t.Fatalf("approve outside approve mode: %v", err)
	}
	r.a.cfg.Approve = true
	srv := httptest.NewServer(r.a.Handler())
	defer srv.Close()
	r.interval(t)
	r.interval(t)
	if n := r.sw.setCount(); n != 0 {
		t.Fatalf("%d Sets without an approval", n)
	}
	var ps []core.Pending
	resp, err := http.Get(srv.URL + "/pending")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&ps)
	resp.Body.Close()
	if len(ps) != 2 || ps[0].Key != kA || ps[0].New != target || ps[0].Kind != core.KindTune {
		t.Fatalf("/pending %+v", ps)
	}
	post := func(v url.Values) (int, string) {
		resp, err := http.PostForm(srv.URL+"/approve", v)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(url.Values{"by": {"alice"}}); code != http.StatusBadRequest {
		t.Fatalf("approve without a queue: %d %s", code, body)
	}
	if code, body := post(url.Values{"by": {" "}, "queue": {kA.String()}}); code != http.StatusBadRequest || !strings.Contains(body, "by: say who approves") {
		t.Fatalf("approve without who: %d %s", code, body) // it was 409
	}
	// paused, the plan is not decided: an approval then was taken (200)
	// and dropped at resume
	if err := r.a.Pause("ops", "incident"); err != nil {
		t.Fatal(err)
	}
	if code, body := post(url.Values{"by": {"carol"}, "queue": {kA.String()}}); code != http.StatusConflict || !strings.Contains(body, "the closed loop is paused") {
		t.Fatalf("approve while paused: %d %s", code, body)
	}
	// nor is the plan of before the pause offered (it and its gnmic
	// export were served all through an incident)
	r.interval(t)
	if ps := r.a.Pending(); len(ps) != 0 {
		t.Fatalf("pending while paused: %+v", ps)
	}
	if err := r.a.Resume("ops"); err != nil {
		t.Fatal(err)
	}
	r.interval(t) // the plan decided again
	if ps := r.a.Pending(); len(ps) != 2 {
		t.Fatalf("pending after the resume: %+v", ps)
	}
	if code, body := post(url.Values{"by": {"alice"}, "queue": {"leaf0/Ethernet0"}}); code != http.StatusBadRequest || !strings.Contains(body, "TARGET/PORT/qN") {
		t.Fatalf("approve a malformed queue: %d %s", code, body)
	}
	// a plan other than the one pending (the proposal changed since it
	// was reviewed) approves nothing: 409, naming what is pending now
	if code, body := post(url.Values{"by": {"alice"}, "queue": {kA.String()}, "plan": {"0badf00d"}}); code != http.StatusConflict || !strings.Contains(body, "now proposes") {
		t.Fatalf("approve a plan not pending: %d %s", code, body)
	}
	if code, body := post(url.Values{"by": {"alice"}, "queue": {kA.String()}, "plan": {ps[0].Plan}}); code != 200 || !strings.Contains(body, `"approved_by": "alice"`) {
		t.Fatalf("approve: %d %s", code, body)
	}
	r.interval(t)
	if n := r.sw.setCount(); n != 1 {
		t.Fatalf("%d Sets after one approval, want 1", n)
	}
	es, err := r.j.Entries("", 0)
	if err != nil || len(es) != 1 || es[0].Key != kA || es[0].ApprovedBy != "alice" || es[0].State != core.StateApplied {
		t.Fatalf("audit %+v, %v", es, err)
	}
	if p := r.a.Pending(); len(p) != 1 || p[0].Key != kB {
		t.Fatalf("still pending %+v, want %v only", p, kB)
	}
	if lc := r.a.LastChanges(); len(lc) != 1 || lc[0].Key != kA {
		t.Fatalf("last changes %+v", lc)
	}
	r.interval(t) // nothing approved: the last interval changed nothing
	if lc := r.a.LastChanges(); len(lc) != 0 {
		t.Fatalf("last changes %+v after an interval without any", lc)
	}
}

// The forms of POST /pause and /approve are read alike: from the query,
// a urlencoded body or a multipart one; a body too large is said so (it
// read as "by" missing), and /approve takes all= and queue= wherever by=
// is taken.
func TestPostFormsReadAlike(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.a.cfg.Approve = true
	srv := httptest.NewServer(r.a.Handler())
	defer srv.Close()
	r.interval(t)
	do := func(path, ctype string, body io.Reader) (int, string) {
		resp, err := http.Post(srv.URL+path, ctype, body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	big := "by=alice&reason=" + strings.Repeat("x", 70_000)
	if code, body := do("/pause", "application/x-www-form-urlencoded", strings.NewReader(big)); code != http.StatusBadRequest || !strings.Contains(body, "larger than") {
		t.Fatalf("POST /pause with a body too large: %d %s", code, body)
	}
	if code, body := do("/approve?by=me&all=true", "application/x-www-form-urlencoded", nil); code != http.StatusOK || strings.Count(body, `"key"`) != 2 {
		t.Fatalf("POST /approve?by=me&all=true: %d %s", code, body)
	}
	var mp strings.Builder
	mw := multipart.NewWriter(&mp)
	mw.WriteField("by", "me")
	mw.WriteField("all", "true")
	mw.Close()
	if code, body := do("/approve", mw.FormDataContentType(), strings.NewReader(mp.String())); code != http.StatusOK {
		t.Fatalf("POST /approve multipart: %d %s", code, body) // 400 "by: say who approves"
	}
}

// An approval given before a restart waits on after it: the change is
// applied at the first interval the guard proposes it again, with its
// approver in the audit entry (approvals were held in memory only, and a
// restart lost them: the change was pending again).
func TestApprovalSurvivesRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agent.db")
	approve := func(c *config.Config) { c.Approve = true }
	r := newRigWith(t, config.ModeClosedLoop, false, db, nil, approve)
	r.interval(t)
	if _, err := r.a.Approve([]env.QueueKey{kA}, false, "alice", nil); err != nil {
		t.Fatal(err)
	}
	r.j.Close()
	s := newRigWith(t, config.ModeClosedLoop, false, db, r.sw, approve)
	s.clk.t, s.tns = r.clk.t, r.tns
	s.interval(t)
	es, err := s.j.Entries("", 0)
	if err != nil || len(es) != 1 || es[0].Key != kA || es[0].ApprovedBy != "alice" || es[0].State != core.StateApplied {
		t.Fatalf("audit after the restart %+v, %v", es, err)
	}
	if p := s.a.Pending(); len(p) != 1 || p[0].Key != kB || p[0].Approved {
		t.Fatalf("pending after the restart %+v, want %v only, not approved", p, kB)
	}
	// applied, the approval is gone from the db too
	s.j.Close()
	u := newRigWith(t, config.ModeClosedLoop, false, db, r.sw, approve)
	if as, err := u.j.Approvals(); err != nil || len(as) != 0 {
		t.Fatalf("approvals kept after their change was applied: %+v %v", as, err)
	}
}

// GET /pending (and /pending/gnmic) of an agent not in approve mode is
// refused, saying it applies its changes by itself (shadow: writes
// nothing), as POST /approve is: it answered [] and `agent pending` said
// "nothing pending", exit 0.
func TestPendingOutsideApproveMode(t *testing.T) {
	for _, mode := range []config.Mode{config.ModeClosedLoop, config.ModeShadow} {
		r := newRig(t, mode, false, "", nil)
		srv := httptest.NewServer(r.a.Handler())
		r.interval(t)
		for _, path := range []string{"/pending", "/pending/gnmic"} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := map[config.Mode]string{config.ModeClosedLoop: "applies its changes by itself", config.ModeShadow: "writes nothing"}[mode]
			if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "does not run in approve mode") || !strings.Contains(string(b), want) {
				t.Errorf("%s of a %s agent: %d %s", path, mode, resp.StatusCode, b)
			}
		}
		srv.Close()
	}
}
