package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/journal"
)

// historyLockWait is how long the read commands (history, recommendations,
// report) wait for the database's lock before they give up on it.
const historyLockWait = 500 * time.Millisecond

// journalFlags are the flags by which a read command finds the agent's
// database: --db, else the db of --config, else agent.db.
type journalFlags struct {
	db, cfgPath string
}

// journalSource is where a read command finds the agent's records: its
// journal, opened read-only, or, while a running agent holds the journal
// locked, that agent's HTTP API (base). Exactly one is set; Close the
// journal when it is.
type journalSource struct {
	j    *journal.Journal
	base string
	db   string
	// url: base was given (--url), not found for a db a running agent
	// holds locked
	url bool
}

// openJournalSource opens the agent's journal read-only. When a running
// agent holds it and canAsk is true, it returns that agent's HTTP API
// instead (the metrics address of --config); what names the records for
// the error ("audit log", "recommendations").
func openJournalSource(f journalFlags, canAsk bool, what string) (journalSource, error) {
	var cfg *config.Config
	if f.cfgPath != "" {
		var err error
		if cfg, err = config.Load(f.cfgPath); err != nil {
			return journalSource{}, err
		}
	}
	db := f.db
	switch {
	case db == "" && cfg != nil:
		db = cfg.DB
	case db == "":
		db = "agent.db"
	}
	j, err := journal.OpenJournalReadOnly(db, historyLockWait)
	if errors.Is(err, journal.ErrJournalLocked) {
		if !canAsk {
			return journalSource{}, fmt.Errorf("%w: stop the agent first, or see its live dashboard at its metrics address", err)
		}
		base, ferr := runningAgentURL(f, cfg, what)
		if ferr != nil {
			return journalSource{}, fmt.Errorf("%w: %v", err, ferr)
		}
		return journalSource{base: base, db: db}, nil
	}
	if err != nil {
		return journalSource{}, err
	}
	return journalSource{j: j, db: db}, nil
}

// noteDamage says on w what the read-only open of src's journal found
// damaged outside the audit log (those buckets are not read).
func noteDamage(w io.Writer, src journalSource) {
	if src.j == nil {
		return
	}
	if d := src.j.Damage(); d != "" {
		fmt.Fprintf(w, "agent db %s is %s: not read; the audit log is intact and read (the agent does not start on this db: move it aside)\n", src.db, d)
	}
}

// runningAgentURL is the HTTP API of the agent that holds the database:
// the metrics address of its configuration.
func runningAgentURL(f journalFlags, cfg *config.Config, what string) (string, error) {
	if cfg == nil {
		return "", fmt.Errorf("pass the running agent's --config (its metrics address serves the %s) or --url http://HOST:PORT", what)
	}
	if f.db != "" && !sameFile(f.db, cfg.DB) {
		return "", fmt.Errorf("--db %s is not the db of %s (%s): its metrics address serves another agent's %s", f.db, f.cfgPath, cfg.DB, what)
	}
	if cfg.Metrics == "" {
		return "", fmt.Errorf("%s serves no HTTP API (metrics: \"\"): stop the agent, or give it a metrics address", f.cfgPath)
	}
	return agentBaseURL(cfg.Metrics), nil
}

// sameFile compares two paths made absolute.
func sameFile(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}
