package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent"
	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/agent/journal"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// agentPauseOpts are the flags of "ecntune agent pause" and "agent resume".
type agentPauseOpts struct {
	url, cfgPath, db, by, reason string
}

func newAgentPauseCmd() *cobra.Command {
	var o agentPauseOpts
	cmd := &cobra.Command{
		Use:   "pause",
		Short: "Pause the closed loop fabric-wide: the agent records and writes nothing until resumed",
		Long: `Pause the closed loop on every target, as in an incident: from its next interval the agent
decides and records as in shadow mode (the dashboard and /recommendations show what it would do)
and writes nothing. The pause, who asked and why are kept in the agent database, so that it
survives a restart; 'ecntune agent resume' ends it. Give --url for a running agent (its HTTP
address), or --config (or --db) for a stopped one, which then starts paused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgentPause(cmd, o, true) },
	}
	o.flags(cmd, true)
	return cmd
}

// flags registers the flags pause and resume share.
func (o *agentPauseOpts) flags(cmd *cobra.Command, reason bool) {
	cmd.Flags().StringVar(&o.url, "url", "", "a running agent's HTTP address (http://HOST:PORT)")
	cmd.Flags().StringVar(&o.cfgPath, "config", "", "a stopped agent's configuration (its db)")
	cmd.Flags().StringVar(&o.db, "db", "", "a stopped agent's database (default: the config's db)")
	cmd.Flags().StringVar(&o.by, "by", defaultOperator(), "who asks (journaled)")
	if reason {
		cmd.Flags().StringVar(&o.reason, "reason", "", "why (journaled, shown on the dashboard and /healthz)")
	}
}

// defaultOperator is $USER, else "operator".
func defaultOperator() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "operator"
}

// runAgentPause pauses (or resumes) through a running agent's HTTP API or
// in a stopped agent's database, and prints the state.
func runAgentPause(cmd *cobra.Command, o agentPauseOpts, pause bool) error {
	var p journal.Pause
	var err error
	if strings.TrimSpace(o.by) == "" {
		// journaled as "by  at ..." (the HTTP form refuses it)
		return errors.New("--by: say who asks (it is journaled)")
	}
	for flag, v := range map[string]string{"--by": o.by, "--reason": o.reason} {
		if strings.IndexFunc(v, unicode.IsControl) >= 0 {
			return fmt.Errorf("%s: control characters (a newline, a tab, an escape) are not allowed", flag)
		}
	}
	switch {
	case o.url != "" && (o.cfgPath != "" || o.db != ""):
		return errors.New("--url, or --config/--db: give one")
	case o.url != "":
		p, err = postPause(cmd.Context(), agentBaseURL(o.url), o, pause)
	case o.cfgPath != "" || o.db != "":
		var cfg *config.Config // --config's, read once
		if o.cfgPath != "" {
			if cfg, err = config.Load(o.cfgPath); err != nil {
				return err
			}
		}
		p, err = pauseInDB(cmd.Context(), o, cfg, pause)
		if err == nil && pause && cfg != nil && cfg.Mode == config.ModeShadow {
			// taken, as it stays in the db: said, as it changes nothing
			// while the configuration runs in shadow mode
			fmt.Fprintf(cmd.ErrOrStderr(), "note: %s runs in shadow mode, which writes nothing anyway; the pause holds if it is switched to closed-loop\n", o.cfgPath)
		}
		if errors.Is(err, journal.ErrJournalLocked) {
			// the agent runs (in an incident, the usual case): ask it
			// over HTTP at its configuration's metrics address
			base := ""
			if cfg != nil && cfg.Metrics != "" {
				base = agentBaseURL(cfg.Metrics)
			}
			if base == "" {
				return fmt.Errorf("%w: give --url http://HOST:PORT of the running agent (its metrics address), or --config of a configuration that has one", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "the agent db is locked by the running agent: asking it at %s\n", base)
			p, err = postPause(cmd.Context(), base, o, pause)
		}
	default:
		return errors.New("--url (a running agent) or --config/--db (a stopped one) is required")
	}
	if err != nil {
		return err
	}
	state := "running"
	if p.Paused {
		state = "paused"
	}
	line := fmt.Sprintf("closed loop %s (by %s at %s)", state, p.By, time.Unix(0, p.SinceNs).UTC().Format(time.RFC3339))
	if p.Reason != "" {
		line += ": " + p.Reason
	}
	fmt.Fprintln(cmd.OutOrStdout(), line)
	return nil
}

// postPause asks a running agent.
func postPause(ctx context.Context, base string, o agentPauseOpts, pause bool) (journal.Pause, error) {
	path := "/resume"
	if pause {
		path = "/pause"
	}
	form := url.Values{"by": {o.by}, "reason": {o.reason}}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return journal.Pause{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return journal.Pause{}, fmt.Errorf("agent at %s: %w", base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return journal.Pause{}, fmt.Errorf("agent at %s: %s: %s", base, resp.Status, strings.TrimSpace(string(body)))
	}
	var p journal.Pause
	if err := json.Unmarshal(body, &p); err != nil {
		return p, fmt.Errorf("agent at %s: %w", base, err)
	}
	return p, nil
}

// pauseInDB writes the pause in a stopped agent's database (--db, else
// that of cfg, --config's; nil without one). In a fleet (the
// configuration's fleet: key) the pause is the fleet's too: every member
// follows it.
func pauseInDB(ctx context.Context, o agentPauseOpts, cfg *config.Config, pause bool) (journal.Pause, error) {
	db := o.db
	if cfg != nil && db == "" {
		db = cfg.DB
	}
	p := journal.Pause{Paused: pause, By: o.by, Reason: o.reason, SinceNs: time.Now().UnixNano()}
	if cfg != nil && cfg.Fleet != nil && !journal.FileExists(db) {
		// a host with no agent db (an operator's, or a member never
		// started): the fleet's pause lives in etcd, every member
		// follows it from there
		return pauseInFleet(ctx, o.cfgPath, p)
	}
	j, err := openExistingJournal(db)
	if err != nil {
		return journal.Pause{}, err
	}
	defer j.Close()
	if cfg == nil || cfg.Fleet == nil {
		return p, j.ChangePause(p)
	}
	var cur journal.Pause
	_, err = withFleet(ctx, o.cfgPath, func(ctx context.Context, cli *clientv3.Client, f *config.Fleet) error {
		read := func(ctx context.Context) (fleet.Pause, bool, error) { return fleet.ReadPause(ctx, cli, f.Name) }
		write := func(ctx context.Context, fp fleet.Pause) error { return fleet.SetPause(ctx, cli, f.Name, fp) }
		cur, _, err = agent.ChangeFleetPause(ctx, j, read, write, p)
		return err
	})
	return cur, err
}

// pauseInFleet writes the fleet's pause in etcd alone (no agent db here):
// one already in that state is kept as it is (who paused it, and when).
func pauseInFleet(ctx context.Context, cfgPath string, p journal.Pause) (journal.Pause, error) {
	cur := p
	_, err := withFleet(ctx, cfgPath, func(ctx context.Context, cli *clientv3.Client, f *config.Fleet) error {
		fp, ok, err := fleet.ReadPause(ctx, cli, f.Name)
		if err != nil {
			return fmt.Errorf("the fleet's pause could not be read (%w): nothing changed; try again", err)
		}
		if ok && fp.Paused == p.Paused {
			cur = journal.Pause{Paused: fp.Paused, By: fp.By, Reason: fp.Reason, SinceNs: fp.SinceNs}
			return nil
		}
		if err := fleet.SetPause(ctx, cli, f.Name, fleet.Pause{Paused: p.Paused, By: p.By, Reason: p.Reason, SinceNs: p.SinceNs}); err != nil {
			return fmt.Errorf("the fleet's pause could not be written (%w): nothing changed; try again", err)
		}
		return nil
	})
	return cur, err
}
