package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/env"
	dto "github.com/prometheus/client_model/go"
)

// An operator pauses the closed loop over HTTP: the agent keeps deciding
// and recording and writes nothing; the pause is on /pause, /healthz, the
// overview and /metrics, survives a restart, and resuming applies again.
func TestPauseStopsWritesAndSurvivesRestart(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	srv := httptest.NewServer(r.a.Handler())
	defer srv.Close()
	post := func(path string, v url.Values) (int, string) {
		t.Helper()
		resp, err := http.PostForm(srv.URL+path, v)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("/pause", url.Values{"reason": {"incident"}}); code != http.StatusBadRequest || !strings.Contains(body, "by:") {
		t.Fatalf("pause without by: %d %s", code, body)
	}
	if code, body := post("/pause", url.Values{"by": {"alice"}, "reason": {"incident 42"}}); code != 200 || !strings.Contains(body, `"paused": true`) {
		t.Fatalf("pause: %d %s", code, body)
	}
	// A second pause does not replace the first's record (who, why,
	// since); a blank or oversized by or reason is refused (a 9 MB reason
	// was journaled and served on every poll).
	for _, c := range []struct {
		v    url.Values
		code int
		want string
	}{
		{url.Values{"by": {"eve"}, "reason": {"second"}}, http.StatusConflict, "already paused by alice since"},
		{url.Values{"by": {"  "}}, http.StatusBadRequest, "by: say who"},
		{url.Values{"by": {strings.Repeat("b", web.MaxWhoBytes+1)}}, http.StatusBadRequest, "by: 129 bytes, at most 128"},
		{url.Values{"by": {"eve"}, "reason": {strings.Repeat("r", web.MaxReasonBytes+1)}}, http.StatusBadRequest, "reason: 1025 bytes, at most 1024"},
	} {
		if code, body := post("/pause", c.v); code != c.code || !strings.Contains(body, c.want) {
			t.Fatalf("pause %.40v: %d %s", c.v, code, body)
		}
	}
	r.interval(t)
	r.interval(t)
	if n := r.sw.setCount(); n != 0 {
		t.Fatalf("%d Sets while paused", n)
	}
	if recs := r.a.Recommendations(""); len(recs) != 2 || recs[0].Recommended != target {
		t.Fatalf("recommendations while paused: %+v", recs)
	}
	hz := get(t, r.a.Handler(), "/healthz")
	if hz.Code != 200 || !strings.Contains(hz.Body.String(), "closed loop paused by alice") || !strings.Contains(hz.Body.String(), "incident 42") {
		t.Errorf("/healthz while paused: %d %s", hz.Code, hz.Body)
	}
	var ov web.Overview
	if err := json.Unmarshal(get(t, r.a.Handler(), "/api/overview").Body.Bytes(), &ov); err != nil || !ov.Pause.Paused || ov.Pause.By != "alice" {
		t.Errorf("overview pause %+v, %v", ov.Pause, err)
	}
	if m := get(t, r.a.Handler(), "/metrics").Body.String(); !strings.Contains(m, "ecntune_agent_paused 1") {
		t.Error("/metrics lacks ecntune_agent_paused 1")
	}

	// A restart on the same database starts paused.
	r.j.Close()
	j, err := journal.OpenJournal(r.db, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := j.Pause()
	j.Close()
	if err != nil || !p.Paused || p.By != "alice" || p.Reason != "incident 42" {
		t.Fatalf("journaled pause %+v, %v", p, err)
	}
	r3 := newRig(t, config.ModeClosedLoop, false, r.db, nil)
	r3.interval(t)
	if n := r3.sw.setCount(); n != 0 {
		t.Fatalf("%d Sets after a restart of a paused loop", n)
	}
	if err := r3.a.Resume("bob"); err != nil {
		t.Fatal(err)
	}
	if err := r3.a.Resume("bob"); !errors.Is(err, journal.ErrPauseUnchanged) || !strings.Contains(err.Error(), "not paused") {
		t.Fatalf("resume of a running loop: %v", err)
	}
	r3.interval(t)
	if n := r3.sw.setCount(); n == 0 {
		t.Fatal("no Set after resume")
	}
	if p, _ := r3.a.PauseState(); p.Paused || p.By != "bob" {
		t.Fatalf("after resume: %+v", p)
	}
}

// Shadow mode has no closed loop to pause: the request says so.
func TestPauseInShadowModeRefused(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	if err := r.a.Pause("alice", "x"); !errors.Is(err, ErrNotClosedLoop) {
		t.Fatalf("pause in shadow mode: %v", err)
	}
	w := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/pause", strings.NewReader("by=alice"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.a.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "shadow mode") {
		t.Fatalf("POST /pause in shadow mode: %d %s", w.Code, w.Body)
	}
}

// A shadow agent on a db whose closed loop was paused is not paused:
// /healthz answered "closed loop paused" and the dashboard showed it,
// while /metrics said 0 and /resume was refused.
func TestShadowOnAPausedDBIsNotPaused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agent.db")
	r := newRig(t, config.ModeClosedLoop, false, db, nil)
	if err := r.a.Pause("alice", "incident"); err != nil {
		t.Fatal(err)
	}
	r.j.Close()
	s := newRig(t, config.ModeShadow, false, db, nil)
	s.interval(t)
	if p, err := s.a.PauseState(); err != nil || p.Paused {
		t.Fatalf("pause state in shadow mode: %+v %v", p, err)
	}
	if h := get(t, s.a.Handler(), "/healthz"); strings.Contains(h.Body.String(), "paused") {
		t.Fatalf("/healthz in shadow mode on a paused db: %d %s", h.Code, h.Body)
	}
	// the pause is kept for the closed loop
	s.j.Close()
	c := newRig(t, config.ModeClosedLoop, false, db, nil)
	if p, err := c.a.PauseState(); err != nil || !p.Paused || p.By != "alice" {
		t.Fatalf("closed loop after shadow: %+v %v", p, err)
	}
}

// slowRead holds Reads until gate closes (a slow switch).
type slowRead struct {
	*fakeSwitch
	gate chan struct{}
}

func (s slowRead) Read(ctx context.Context, keys []env.QueueKey) (map[env.QueueKey]env.Setting, error) {
	<-s.gate
	return s.fakeSwitch.Read(ctx, keys)
}

// An operator pauses while an interval's read before write is out (a slow
// switch, past Run's IOWait): once Pause has returned, no Set goes out
// (before, the flight landed and its Set went out anyway).
func TestPauseStopsAWriteWhoseReadIsOut(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA)
	r := newRig(t, config.ModeClosedLoop, false, "", sw)
	gate := make(chan struct{})
	r.a.switches["leaf0"] = slowRead{sw, gate}
	r.a.ioWait = 20 * time.Millisecond // as Run sets it
	r.interval(t)
	if r.a.inFlight != 1 || sw.setCount() != 0 {
		t.Fatalf("setup: %d flights, %d Sets; want the read out", r.a.inFlight, sw.setCount())
	}
	if err := r.a.Pause("oncall", "incident"); err != nil {
		t.Fatal(err)
	}
	close(gate)
	r.a.land(context.Background(), <-r.a.ioc) // Run's loop lands it
	r.a.waitIO(context.Background(), 0)
	if n := sw.setCount(); n != 0 {
		t.Fatalf("paused, yet %d Set(s) went out after Pause returned", n)
	}
	if es, _ := r.j.Entries("", 0); len(es) != 0 {
		t.Fatalf("audit entries written while paused: %+v", es)
	}
}

// While paused nothing is set: "changed in the last interval" is empty
// and the churn gauge goes on ageing out of its window (both showed the
// last batch before the pause for as long as it lasted).
func TestPauseClearsTheLastBatchAndAgesTheChurn(t *testing.T) {
	r := newRig(t, config.ModeClosedLoop, false, "", nil)
	r.interval(t)
	if len(r.a.LastChanges()) == 0 || r.sw.setCount() == 0 {
		t.Fatal("no change to start from")
	}
	r.a.churn(r.clk.Now())
	churn := func() float64 {
		var m dto.Metric
		if err := r.a.o.Instruments.ChurnChanges.WithLabelValues("leaf0").Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetGauge().GetValue()
	}
	if churn() == 0 {
		t.Fatal("churn 0 after a change")
	}
	if err := r.a.Pause("alice", "incident"); err != nil {
		t.Fatal(err)
	}
	r.interval(t)
	if n := len(r.a.LastChanges()); n != 0 {
		t.Fatalf("%d changes in the last interval of a paused loop", n)
	}
	for range ChurnIntervals + 10 {
		r.interval(t)
	}
	if c := churn(); c != 0 {
		t.Fatalf("churn %g changes in the last %d intervals, the last change %d intervals ago", c, ChurnIntervals, ChurnIntervals+11)
	}
}
