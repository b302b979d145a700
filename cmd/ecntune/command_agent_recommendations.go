package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/web"
)

// agentRecsOpts are the flags of "ecntune agent recommendations".
type agentRecsOpts struct {
	db, cfgPath, url, target, since string
	changing, asJSON                bool
	limit                           int
}

func newAgentRecommendationsCmd() *cobra.Command {
	var o agentRecsOpts
	cmd := &cobra.Command{
		Use:   "recommendations",
		Short: "Show the recommendations the agent stored (shadow or closed loop), oldest first",
		Long: `Show the recommendations the agent stored, per queue and interval, oldest first: what the
queue ran, what the policy recommended, its confidence, the guard's verdict and the reason.
The database is read-only here. While the agent runs it holds the database locked, so the
recommendations are read from its HTTP API (/recommendations?since=) instead: at the metrics
address of --config, or at --url. The agent keeps them for its retention (default 1h).`,
		Example: `  ecntune agent recommendations --config examples/agent-shadow.yaml --since 10m --changing
  ecntune agent recommendations --db examples/agent-shadow.db --target leaf0 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgentRecs(cmd, o) },
	}
	cmd.Flags().StringVar(&o.db, "db", "", "agent database (default: the db of --config, else agent.db)")
	cmd.Flags().StringVar(&o.cfgPath, "config", "", "the agent's configuration: its db, and its metrics address to ask while it runs")
	cmd.Flags().StringVar(&o.url, "url", "", "read from a running agent's HTTP API at this address (http://HOST:PORT) instead of the db")
	cmd.Flags().StringVar(&o.target, "target", "", "only this target")
	cmd.Flags().StringVar(&o.since, "since", "", "only recommendations since a duration ago (10m) or an RFC 3339 time")
	cmd.Flags().BoolVar(&o.changing, "changing", false, "only recommendations that differ from what the queue ran")
	cmd.Flags().IntVar(&o.limit, "limit", 10000, "at most the newest N recommendations (cut at an interval's start, or inside the newest interval when it alone holds more; said on stderr)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON lines")
	return cmd
}

func runAgentRecs(cmd *cobra.Command, o agentRecsOpts) error {
	if o.limit < 1 {
		return errors.New("--limit must be at least 1")
	}
	from, err := parseSince(o.since, time.Now())
	if err != nil {
		return fmt.Errorf("--since: %w", err)
	}
	var recs []core.Recommendation
	if o.url != "" {
		base := agentBaseURL(o.url)
		if recs, err = fetchRecs(cmd.Context(), base, o, from); err != nil {
			return err
		}
		return printRecs(cmd.OutOrStdout(), cmd.ErrOrStderr(), recs, o, noRecsOfAgent(cmd.Context(), base, recs))
	}
	src, err := openJournalSource(journalFlags{o.db, o.cfgPath}, true, "recommendations")
	if err != nil {
		return err
	}
	noteDamage(cmd.ErrOrStderr(), src)
	if src.j == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "agent db %s is locked by the running agent: reading its recommendations from %s\n", src.db, src.base)
		if recs, err = fetchRecs(cmd.Context(), src.base, o, from); err != nil {
			return err
		}
		return printRecs(cmd.OutOrStdout(), cmd.ErrOrStderr(), recs, o, noRecsOfAgent(cmd.Context(), src.base, recs))
	}
	j := src.j
	defer j.Close()
	var fromNs int64
	if !from.IsZero() {
		fromNs = from.UnixNano()
	}
	var keep func(*core.Recommendation) bool
	if o.changing {
		keep = journal.Changing
	}
	// one more than the limit: whether the window holds more
	if recs, err = j.RecommendationsWhere(o.target, fromNs, o.limit+1, keep); err != nil {
		return err
	}
	if len(recs) == 0 && o.target != "" && o.cfgPath != "" {
		// a typo read as "no recommendations stored" (history and report
		// name the known targets)
		if cfg, cerr := config.Load(o.cfgPath); cerr == nil && !slices.ContainsFunc(cfg.Targets, func(t config.Target) bool { return t.Name == o.target }) {
			names := make([]string, len(cfg.Targets))
			for i, t := range cfg.Targets {
				names[i] = t.Name
			}
			return fmt.Errorf("--target: %q is not a target of %s and has no stored recommendations (targets: %s)", o.target, o.cfgPath, strings.Join(names, ", "))
		}
	}
	var none string
	if len(recs) == 0 {
		stored, err := j.Recommendations("", 0, 1)
		if err != nil {
			return err
		}
		changes, err := j.ChangesPage(journal.ChangesQuery{Limit: 1})
		if err != nil {
			return err
		}
		none = noRecs(len(stored) > 0, len(changes.Changes) > 0)
	}
	return printRecs(cmd.OutOrStdout(), cmd.ErrOrStderr(), recs, o, none)
}

// noRecs says why nothing is shown: the selection matches none of the
// stored recommendations, or none is stored, and then why (a closed loop
// without store-recommendations leaves its audit log alone, as agent
// report says).
func noRecs(anyStored, anyChanges bool) string {
	switch {
	case anyStored:
		return "no recommendations stored for that selection"
	case anyChanges:
		return "no recommendations stored: a closed loop stores them only with store-recommendations: true, and this one holds its audit log alone " +
			"(agent history shows its changes); set store-recommendations: true in the agent's configuration to keep them from its next start"
	}
	return "no recommendations stored, nor any audited change: has an agent run on this db?"
}

// noRecsOfAgent is noRecs of a running agent ("" when recs is not empty):
// it asks for one stored recommendation and one audit entry.
func noRecsOfAgent(ctx context.Context, base string, recs []core.Recommendation) string {
	if len(recs) > 0 {
		return ""
	}
	stored, err := fetchRecs(ctx, base, agentRecsOpts{limit: 1}, time.Time{})
	if err != nil || len(stored) > 0 {
		return noRecs(true, false)
	}
	p, err := getChangesPage(ctx, &http.Client{Timeout: 30 * time.Second}, base+"/changes?limit=1")
	if err != nil {
		return noRecs(true, false)
	}
	return noRecs(false, len(p.Changes) > 0)
}

// fetchRecs asks a running agent for its stored recommendations.
func fetchRecs(ctx context.Context, base string, o agentRecsOpts, from time.Time) ([]core.Recommendation, error) {
	if o.limit > web.MaxRecommendationsLimit {
		return nil, fmt.Errorf("--limit %d: a running agent serves at most the newest %d (agent at %s): narrow with --since or --target, or read its db once it has stopped",
			o.limit, web.MaxRecommendationsLimit, base)
	}
	since := "87600h" // everything kept
	if !from.IsZero() {
		since = time.Since(from).Round(time.Millisecond).String()
	}
	// one more than the limit, where the agent serves it: whether the
	// window holds more
	q := url.Values{"since": {since}, "limit": {fmt.Sprint(min(o.limit+1, web.MaxRecommendationsLimit))}}
	if o.target != "" {
		q.Set("target", o.target)
	}
	if o.changing {
		q.Set("changing", "1") // an agent before it ignores it: printRecs filters too
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/recommendations?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("agent at %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("agent at %s: /recommendations: %s: %s", base, resp.Status, strings.TrimSpace(string(msg)))
	}
	var recs []core.Recommendation
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<30)).Decode(&recs); err != nil {
		return nil, fmt.Errorf("agent at %s: /recommendations: %w (is this an ecntune agent?)", base, err)
	}
	return recs, nil
}

// printRecs prints recs (oldest first, up to one more than --limit: the
// window holds more than the limit then) and says on stderr where a window
// cut by --limit starts; none says why nothing is shown.
func printRecs(w, stderr io.Writer, recs []core.Recommendation, o agentRecsOpts, none string) error {
	if o.changing {
		kept := recs[:0]
		for _, r := range recs {
			if journal.Changing(&r) {
				kept = append(kept, r)
			}
		}
		recs = kept
	}
	var cut, inside bool
	if recs, cut, inside = cutToIntervals(recs, o.limit); cut {
		what := "recommendations"
		if o.changing {
			what = "changing recommendations"
		}
		if inside {
			fmt.Fprintf(stderr, "the newest interval (%s) alone holds more than --limit %d %s: shown %d of its rows, the last in queue order; raise --limit (or narrow with --target) for all of it\n",
				time.Unix(0, recs[0].TimeNs).UTC().Format("2006-01-02T15:04:05.000Z"), o.limit, what, len(recs))
		} else {
			fmt.Fprintf(stderr, "more than --limit %d %s in the window: shown from %s, the oldest interval whose %s are all within the limit (%d rows); raise --limit or narrow --since/--target for the rest\n",
				o.limit, what, time.Unix(0, recs[0].TimeNs).UTC().Format("2006-01-02T15:04:05.000Z"), what, len(recs))
		}
	}
	if o.asJSON {
		if len(recs) == 0 && none != "" {
			fmt.Fprintln(stderr, none) // no line on stdout: no JSON to parse
		}
		enc := json.NewEncoder(w)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(recs) == 0 {
		fmt.Fprintln(w, cmp.Or(none, noRecs(true, false)))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tTARGET\tPORT\tQUEUE\tCURRENT → RECOMMENDED\tACTION\tCONFIDENCE\tGUARD\tREASON")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%.0f%%\t%s\t%s\n", time.Unix(0, r.TimeNs).UTC().Format("2006-01-02T15:04:05.000Z"),
			r.Key.Target, r.Key.Port, r.Key.Queue, recChange(r), recAction(r), 100*r.Confidence, r.Guard, strings.ReplaceAll(r.Reason, "\t", " "))
	}
	return tw.Flush()
}

// cutToIntervals keeps the newest limit of recs (oldest first) at an
// interval's boundary: when there are more, the oldest interval they hold
// in part is left out (cut says so). When the newest interval alone holds
// more than limit, its last limit rows are kept (inside says so): --limit
// shows at most the newest N, not none.
func cutToIntervals(recs []core.Recommendation, limit int) (_ []core.Recommendation, cut, inside bool) {
	if limit <= 0 || len(recs) <= limit {
		return recs, false, false
	}
	drop := len(recs) - limit
	for drop < len(recs) && recs[drop].TimeNs == recs[drop-1].TimeNs {
		drop++ // the interval of the first row kept lost rows to the limit
	}
	if drop == len(recs) {
		return recs[len(recs)-limit:], true, true
	}
	return recs[drop:], true, false
}

// recChange is "CURRENT → RECOMMENDED", or "CURRENT (hold)".
func recChange(r core.Recommendation) string {
	if r.Recommended == r.Current {
		return fmtSetting(r.Current) + " (hold)"
	}
	return fmtSetting(r.Current) + " → " + fmtSetting(r.Recommended)
}

// recAction is what the agent makes of a recommendation: hold (nothing
// to change), change, change (clamped by the guard), repair (a queue
// outside the guard's invariants) or rejected (by the rule in GUARD).
func recAction(r core.Recommendation) string {
	switch {
	case r.Recommended == r.Current:
		return "hold"
	case r.Guard == "":
		return "change"
	case strings.HasPrefix(r.Guard, "clamped"):
		return "change (clamped)"
	case r.Guard == string(core.KindRepair):
		return "repair"
	}
	return "rejected"
}
