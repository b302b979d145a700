package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent/web"
	"github.com/ecntune/ecntune/internal/units"
)

// agentReportOpts are the flags of "ecntune agent report".
type agentReportOpts struct {
	db, cfgPath, url, out, target, since string
	intervals, queues                    int
}

func newAgentReportCmd() *cobra.Command {
	var o agentReportOpts
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Draw a stored shadow or closed-loop run: heatmaps, queue charts and the audit log (HTML)",
		Long: `Draw a stored run of the agent from its database into --out: where and when congestion
was (heatmaps of switch × port at its worst, and of the busiest queues × time for peak
queue depth, ECN marks and PFC paused or pausing time), a chart of each of the busiest queues with
every audited change marked, and index.html with the audit log. The pictures are the
live dashboard's. The database is opened read-only; while the agent runs (it holds the
database locked) the same records are read from its HTTP API, the metrics address of
--config, or at --url (a running demo has no configuration file). A closed loop stores
its intervals only with store-recommendations: true; without, the report is its audit
log alone, and says so.`,
		Example: `  ecntune agent report --config examples/agent-shadow.yaml --out report/
  ecntune agent report --config examples/agent-closed-loop.yaml --target leaf0 --since 30m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgentReport(cmd, o) },
	}
	cmd.Flags().StringVar(&o.db, "db", "", "agent database (default: the db of --config, else agent.db)")
	cmd.Flags().StringVar(&o.cfgPath, "config", "", "the agent's configuration (for its db)")
	cmd.Flags().StringVar(&o.url, "url", "", "read from a running agent's HTTP API at this address (http://HOST:PORT) instead of the db")
	cmd.Flags().StringVar(&o.out, "out", "agent-report", "folder to write the report into")
	cmd.Flags().StringVar(&o.target, "target", "", "only this target")
	cmd.Flags().StringVar(&o.since, "since", "", "only intervals since a duration ago (10m) or an RFC 3339 time")
	cmd.Flags().IntVar(&o.intervals, "intervals", 600, "draw at most this many of the newest stored intervals")
	cmd.Flags().IntVar(&o.queues, "queues", 6, "charts for this many of the busiest queues")
	return cmd
}

func runAgentReport(cmd *cobra.Command, o agentReportOpts) error {
	from, err := parseSince(o.since, time.Now())
	if err != nil {
		return fmt.Errorf("--since: %w", err)
	}
	if o.intervals < 1 || o.queues < 1 {
		return errors.New("--intervals and --queues must be at least 1")
	}
	var src journalSource
	if o.url != "" {
		if o.db != "" || o.cfgPath != "" {
			return errors.New("--url, or --db/--config: give one")
		}
		src = journalSource{base: agentBaseURL(o.url), url: true}
	} else if src, err = openJournalSource(journalFlags{o.db, o.cfgPath}, true, "recommendations and audit log"); err != nil {
		return err
	}
	noteDamage(cmd.ErrOrStderr(), src)
	rs, done, err := reportSourceOf(cmd, src, o.target, from)
	if err != nil {
		return err
	}
	defer done()
	ro := web.ReportOptions{Target: o.target, Intervals: o.intervals, Queues: o.queues}
	if !from.IsZero() {
		ro.SinceNs = from.UnixNano()
	}
	rf, err := writeAgentReport(cmd.ErrOrStderr(), rs, o.out, ro)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	window := "time unknown: every audited change is damaged"
	if rf.FromNs != 0 || rf.ToNs != 0 {
		window = time.Unix(0, rf.FromNs).UTC().Format(time.RFC3339) + " to " + time.Unix(0, rf.ToNs).UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "%s (%s), %s, %s", units.Count(rf.Intervals, "interval"), window,
		units.Count(rf.Queues, "queue"), units.Count(rf.Changes, "audited change"))
	if rf.Damaged > 0 {
		fmt.Fprintf(w, " (%d damaged: listed by seq, their time and queue unknown)", rf.Damaged)
	}
	if rf.Skipped > 0 {
		fmt.Fprintf(w, "; %d older intervals left out (--intervals)", rf.Skipped)
	}
	fmt.Fprintln(w)
	for _, p := range rf.Pictures {
		fmt.Fprintln(w, "wrote", p)
	}
	fmt.Fprintln(w, "wrote", rf.Index)
	return nil
}
