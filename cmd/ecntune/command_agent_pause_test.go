package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/journal"
)

// pause and resume on a stopped agent's database: the state is journaled
// with who and why, and the next agent starts from it.
func TestAgentPauseResumeInDB(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agent.db")
	j, err := journal.OpenJournal(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	out, _, err := runAgentCmd(t, context.Background(), "pause", "--db", db, "--by", "alice", "--reason", "incident 42")
	if err != nil || !strings.HasPrefix(out, "closed loop paused (by alice at ") || !strings.Contains(out, ": incident 42") {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	read := func() journal.Pause {
		j, err := journal.OpenJournal(db, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		p, err := j.Pause()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := read(); !p.Paused || p.By != "alice" || p.Reason != "incident 42" {
		t.Fatalf("journaled %+v", p)
	}
	if out, _, err = runAgentCmd(t, context.Background(), "resume", "--db", db, "--by", "bob"); err != nil || !strings.HasPrefix(out, "closed loop running (by bob") {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if p := read(); p.Paused || p.By != "bob" {
		t.Fatalf("journaled after resume %+v", p)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pause"}, "--url (a running agent) or --config/--db"},
		{[]string{"pause", "--url", "127.0.0.1:1", "--db", db}, "give one"},
		{[]string{"resume", "--db", db + ".missing"}, "does not exist"},
		{[]string{"pause", "--url", "127.0.0.1:1"}, "agent at http://127.0.0.1:1"},
	} {
		if _, _, err := runAgentCmd(t, context.Background(), c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
}

// pause --url posts to a running agent's /pause with who and why and
// prints the state it answers; its refusal is shown as it is.
func TestAgentPauseURL(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got = r.Method + " " + r.URL.Path + " by=" + r.PostForm.Get("by") + " reason=" + r.PostForm.Get("reason")
		if r.PostForm.Get("by") == "carol" {
			http.Error(w, "the agent runs in shadow mode", http.StatusConflict)
			return
		}
		w.Write([]byte(`{"paused": true, "by": "alice", "reason": "incident", "since_ns": 1}`))
	}))
	defer srv.Close()
	out, _, err := runAgentCmd(t, context.Background(), "pause", "--url", srv.URL, "--by", "alice", "--reason", "incident")
	if err != nil || got != "POST /pause by=alice reason=incident" || !strings.Contains(out, "closed loop paused (by alice") {
		t.Fatalf("pause --url: %v %q\n%s", err, got, out)
	}
	if _, _, err = runAgentCmd(t, context.Background(), "resume", "--url", srv.URL, "--by", "carol"); err == nil ||
		got != "POST /resume by=carol reason=" || !strings.Contains(err.Error(), "409 Conflict: the agent runs in shadow mode") {
		t.Fatalf("resume --url refused: %v %q", err, got)
	}
}

// pause --config while the agent runs (its db locked, an incident's usual
// case) asks it over HTTP at the configuration's metrics address; it said
// "stop it or use another db".
func TestAgentPauseConfigOfARunningAgent(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got = r.Method + " " + r.URL.Path + " by=" + r.PostForm.Get("by")
		w.Write([]byte(`{"paused": true, "by": "alice", "since_ns": 1}`))
	}))
	defer srv.Close()
	dir, db, _ := runningAgentDB(t)
	conf := filepath.Join(dir, "agent.yaml")
	body := "mode: closed-loop\ndb: " + db + "\nmetrics: " + strings.TrimPrefix(srv.URL, "http://") + "\ntargets:\n  sw0: {address: 127.0.0.1:1, insecure: true}\n"
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runAgentCmd(t, context.Background(), "pause", "--config", conf, "--by", "alice")
	if err != nil || got != "POST /pause by=alice" || !strings.Contains(out, "closed loop paused (by alice") || !strings.Contains(errOut, "asking it at "+srv.URL) {
		t.Fatalf("pause --config of a running agent: %v %q\n%s\n%s", err, got, out, errOut)
	}
}

// A stopped shadow agent's configuration may be paused (the pause stays in
// its db and holds once it is switched to closed-loop), and the command
// says that shadow mode writes nothing anyway (it was taken in silence).
func TestAgentPauseShadowConfigSaysSo(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "agent.yaml")
	for _, mode := range []string{"shadow", "closed-loop"} {
		db := filepath.Join(dir, mode+".db")
		j, err := journal.OpenJournal(db, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		j.Close()
		src := "mode: " + mode + "\ndb: " + db + "\ntargets:\n  leaf0: {address: \"127.0.0.1:1\", insecure: true}\n"
		if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := runAgentCmd(t, context.Background(), "pause", "--config", cfg, "--by", "alice")
		if err != nil || !strings.HasPrefix(out, "closed loop paused") {
			t.Fatalf("%s: %v\n%s", mode, err, out)
		}
		if said := strings.Contains(errOut, "runs in shadow mode, which writes nothing anyway"); said != (mode == "shadow") {
			t.Errorf("%s: stderr %q", mode, errOut)
		}
	}
}
