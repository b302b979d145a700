package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/fleet"
	"github.com/ecntune/ecntune/agent/journal"
)

// agentHistoryOpts are the flags of "ecntune agent history".
type agentHistoryOpts struct {
	db, cfgPath, url, target, since string
	asJSON, fleet                   bool
}

func newAgentHistoryCmd() *cobra.Command {
	var o agentHistoryOpts
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show the agent's audit log of changes",
		Long: `Show the agent's audit log of changes, oldest first. The database is read-only here.
A running agent holds its database locked (bbolt lets no reader past a writer), so while
it runs the log is read from its HTTP API (/changes, page by page) instead: at the metrics
address of --config, or at --url.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgentHistory(cmd, o) },
	}
	cmd.Flags().StringVar(&o.db, "db", "", "agent database (default: the db of --config, else agent.db)")
	cmd.Flags().StringVar(&o.cfgPath, "config", "", "the agent's configuration: its db, and its metrics address to ask while it runs")
	cmd.Flags().StringVar(&o.url, "url", "", "read from a running agent's HTTP API at this address (http://HOST:PORT) instead of the db")
	cmd.Flags().StringVar(&o.target, "target", "", "only this target")
	cmd.Flags().StringVar(&o.since, "since", "", "only changes since a duration ago (10m) or an RFC 3339 time")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON lines")
	cmd.Flags().BoolVar(&o.fleet, "fleet", false, "read the audit the fleet of --config keeps in etcd (every member's, the newest 128 entries per switch) instead of this agent's db")
	return cmd
}

// runAgentHistory prints the audit log from the database or, while an
// agent holds it, from that agent's HTTP API.
func runAgentHistory(cmd *cobra.Command, o agentHistoryOpts) error {
	from, err := parseSince(o.since, time.Now())
	if err != nil {
		return fmt.Errorf("--since: %w", err)
	}
	out := cmd.OutOrStdout()
	if o.fleet {
		es, err := fleetHistory(cmd.Context(), o.cfgPath, o.target, from)
		if err != nil {
			return err
		}
		return printHistory(out, es, o.asJSON)
	}
	if o.url != "" {
		es, err := fetchHistory(cmd.Context(), agentBaseURL(o.url), o.target, from)
		if err != nil {
			return err
		}
		return printHistory(out, es, o.asJSON)
	}
	src, err := openJournalSource(journalFlags{o.db, o.cfgPath}, true, "audit log")
	if err != nil {
		return err
	}
	if src.j == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "agent db %s is locked by the running agent: reading its audit log from %s\n", src.db, src.base)
		es, err := fetchHistory(cmd.Context(), src.base, o.target, from)
		if err != nil {
			return err
		}
		if err := unknownTarget(o, es); err != nil {
			return err
		}
		return printHistory(out, es, o.asJSON)
	}
	j := src.j
	defer j.Close()
	noteDamage(cmd.ErrOrStderr(), src)
	var fromNs int64
	if !from.IsZero() {
		fromNs = from.UnixNano()
	}
	es, err := j.Entries(o.target, fromNs)
	if err != nil {
		return err
	}
	if err := unknownTarget(o, es); err != nil {
		return err
	}
	return printHistory(out, es, o.asJSON)
}

// unknownTarget refuses a --target that names no target of --config when
// the log has nothing of it either (a misspelt name printed "no changes
// recorded" with exit 0, where agent rollback refuses it); a target no
// longer configured whose changes the log keeps is still shown.
func unknownTarget(o agentHistoryOpts, es []core.AuditEntry) error {
	if o.target == "" || o.cfgPath == "" || len(es) > 0 {
		return nil
	}
	cfg, err := config.Load(o.cfgPath)
	if err != nil {
		return err
	}
	var names []string
	for _, t := range cfg.Targets {
		if t.Name == o.target {
			return nil
		}
		names = append(names, t.Name)
	}
	return fmt.Errorf("--target: %q is not a target of %s (its targets: %s) and the log has no change of it", o.target, o.cfgPath, strings.Join(names, ", "))
}

// agentBaseURL turns a listen address (":9273", "0.0.0.0:9273") or a URL
// into the base URL to ask: an unspecified host is this machine.
func agentBaseURL(addr string) string {
	if strings.Contains(addr, "://") {
		return strings.TrimRight(addr, "/")
	}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		switch host {
		case "", "0.0.0.0":
			host = "127.0.0.1"
		case "::":
			host = "::1"
		}
		addr = net.JoinHostPort(host, port)
	}
	return "http://" + strings.TrimRight(addr, "/")
}

// fetchHistory reads every page of the audit log (newest page first) from
// an agent's /changes and returns the entries oldest first.
func fetchHistory(ctx context.Context, base, target string, from time.Time) ([]core.AuditEntry, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	var pages [][]core.AuditEntry
	var before uint64
	for {
		q := url.Values{"limit": {strconv.Itoa(journal.MaxChangesPage)}}
		if target != "" {
			q.Set("target", target)
		}
		if !from.IsZero() {
			q.Set("since", from.UTC().Format(time.RFC3339Nano))
		}
		if before > 0 {
			q.Set("before", strconv.FormatUint(before, 10))
		}
		p, err := getChangesPage(ctx, client, base+"/changes?"+q.Encode())
		if err != nil {
			return nil, fmt.Errorf("agent at %s: %w", base, err)
		}
		pages = append(pages, p.Changes)
		if p.NextBefore == 0 {
			break
		}
		if before != 0 && p.NextBefore >= before {
			return nil, fmt.Errorf("agent at %s: /changes: next_before %d does not go back from %d", base, p.NextBefore, before)
		}
		before = p.NextBefore
	}
	var es []core.AuditEntry
	for i := len(pages) - 1; i >= 0; i-- {
		es = append(es, pages[i]...)
	}
	return es, nil
}

// getChangesPage fetches and decodes one page.
func getChangesPage(ctx context.Context, client *http.Client, u string) (journal.ChangesPage, error) {
	var p journal.ChangesPage
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return p, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return p, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return p, fmt.Errorf("/changes: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&p); err != nil {
		return p, fmt.Errorf("/changes: %w (is this an ecntune agent?)", err)
	}
	return p, nil
}

func printHistory(w io.Writer, es []core.AuditEntry, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, e := range es {
			if err := enc.Encode(journal.EntryJSON(e)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(es) == 0 {
		fmt.Fprintln(w, "no changes recorded")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fleet := slices.ContainsFunc(es, func(e core.AuditEntry) bool { return e.Writer != "" })
	if fleet {
		fmt.Fprint(tw, "WRITER\tTOKEN\t")
	}
	fmt.Fprintln(tw, "SEQ\tTIME\tQUEUE\tKIND\tSTATE\tOLD\tNEW\tMODEL\tREASON")
	for _, e := range es {
		reason := e.Reason
		if e.Error != "" {
			reason += " [" + e.Error + "]"
		}
		if fleet {
			fmt.Fprintf(tw, "%s\t%d\t", orNone(e.Writer), e.Token)
		}
		if e.State == journal.StateDamaged {
			// nothing of it is known but its place in the log: not a
			// change at 1970 from and to 0B/0B/0%
			fmt.Fprintf(tw, "%d\tunknown\tdamaged\t-\t%s\tdamaged\tdamaged\t-\t%s\n", e.Seq, e.State, strings.ReplaceAll(e.Error, "\t", " "))
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq,
			time.Unix(0, e.TimeNs).UTC().Format("2006-01-02T15:04:05.000Z"), e.Key, e.Kind, e.State,
			fmtSetting(e.Old), fmtSetting(e.New), e.Model, strings.ReplaceAll(reason, "\t", " "))
	}
	return tw.Flush()
}

// fleetHistory reads the audit a fleet keeps in etcd (agent/fleet
// ReadAudit: the newest entries of every switch, whichever member wrote
// them), oldest first, of target (all: "") since from: in the order etcd
// recorded them (their Rev), not by their times, which are each member's
// own clock's.
func fleetHistory(ctx context.Context, cfgPath, target string, from time.Time) ([]core.AuditEntry, error) {
	var es []core.AuditEntry
	_, err := withFleet(ctx, cfgPath, func(ctx context.Context, cli *clientv3.Client, f *config.Fleet) (err error) {
		es, err = fleet.ReadAudit(ctx, cli, f.Name, target)
		return err
	})
	if err != nil {
		return nil, err
	}
	es = slices.DeleteFunc(es, func(e core.AuditEntry) bool { return !from.IsZero() && e.TimeNs < from.UnixNano() })
	slices.SortStableFunc(es, func(a, b core.AuditEntry) int { return cmp.Compare(a.Rev, b.Rev) })
	return es, nil
}
