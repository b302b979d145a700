package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/agent/web"
)

// reportFetchLimit bounds the recommendations agent report asks a running
// agent for (one per queue per interval: 333 intervals of 300 queues): as
// many as the agent serves in one answer.
const reportFetchLimit = web.MaxRecommendationsLimit

// httpReportSource is what a running agent's HTTP API serves of its
// journal, for agent report (web.ReportSource): its stored
// recommendations (/recommendations?since=) and its audit log (/changes),
// fetched once.
type httpReportSource struct {
	base    string
	recs    []core.Recommendation // journal order: by time
	changes []core.AuditEntry     // oldest first
	// cut: the fetch hit reportFetchLimit, so the oldest interval it
	// holds may lack queues and is left out.
	cut bool
}

// fetchReportSource reads a running agent's recommendations and audit log
// (of target, since from when not zero).
func fetchReportSource(ctx context.Context, base, target string, from time.Time) (*httpReportSource, error) {
	recs, err := fetchRecs(ctx, base, agentRecsOpts{target: target, limit: reportFetchLimit}, from)
	if err != nil {
		return nil, err
	}
	s := &httpReportSource{base: base, recs: recs}
	if len(recs) == reportFetchLimit {
		first := recs[0].TimeNs
		i := slices.IndexFunc(recs, func(r core.Recommendation) bool { return r.TimeNs != first })
		s.recs, s.cut = recs[max(i, 0):], true
	}
	if s.changes, err = fetchHistory(ctx, base, target, from); err != nil {
		return nil, err
	}
	return s, nil
}

// Path names the source in errors.
func (s *httpReportSource) Path() string { return "of the agent at " + s.base }

// RecommendationTimes are the distinct interval times at or after sinceNs.
func (s *httpReportSource) RecommendationTimes(sinceNs int64) ([]int64, error) {
	var out []int64
	for _, r := range s.recs {
		if r.TimeNs >= sinceNs && (len(out) == 0 || out[len(out)-1] != r.TimeNs) {
			out = append(out, r.TimeNs)
		}
	}
	return out, nil
}

// EachRecommendation calls fn on every recommendation at or after sinceNs,
// in time order.
func (s *httpReportSource) EachRecommendation(sinceNs int64, fn func(*core.Recommendation) error) error {
	for i := range s.recs {
		if s.recs[i].TimeNs < sinceNs {
			continue
		}
		if err := fn(&s.recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// ChangesPage is one page of the fetched audit log, as the journal's:
// the newest q.Limit entries of q's target at or after q.SinceNs with a
// sequence number below q.Before (when not 0), oldest first, and the
// NextBefore of the older page when there is one.
func (s *httpReportSource) ChangesPage(q journal.ChangesQuery) (journal.ChangesPage, error) {
	if q.Limit == 0 {
		q.Limit = journal.DefaultChangesPage
	}
	if q.Limit < 0 || q.Limit > journal.MaxChangesPage {
		return journal.ChangesPage{}, fmt.Errorf("limit %d: want 1..%d", q.Limit, journal.MaxChangesPage)
	}
	p := journal.ChangesPage{Changes: []core.AuditEntry{}}
	for i := len(s.changes) - 1; i >= 0; i-- { // newest first, as the journal walks
		e := s.changes[i]
		if q.Before != 0 && e.Seq >= q.Before {
			continue
		}
		if e.State != journal.StateDamaged && ((q.Target != "" && e.Target != q.Target) || e.TimeNs < q.SinceNs) {
			continue
		}
		if len(p.Changes) == q.Limit {
			p.NextBefore = p.Changes[len(p.Changes)-1].Seq // there is an older match
			break
		}
		p.Changes = append(p.Changes, e)
	}
	slices.Reverse(p.Changes)
	return p, nil
}

// reportSourceOf is the journal of src or, while a running agent holds it,
// what that agent's HTTP API serves of it (said on stderr); done closes it.
func reportSourceOf(cmd *cobra.Command, src journalSource, target string, from time.Time) (_ web.ReportSource, done func(), _ error) {
	if src.j != nil {
		return src.j, func() { src.j.Close() }, nil
	}
	stderr := cmd.ErrOrStderr()
	if !src.url {
		fmt.Fprintf(stderr, "agent db %s is locked by the running agent: reading its recommendations and audit log from %s\n", src.db, src.base)
	}
	s, err := fetchReportSource(cmd.Context(), src.base, target, from)
	if err != nil {
		return nil, nil, err
	}
	if s.cut {
		fmt.Fprintf(stderr, "the agent holds more than %d recommendations: the report starts at the oldest whole interval of the newest %d (--since for an earlier window)\n",
			reportFetchLimit, reportFetchLimit)
	}
	return s, func() {}, nil
}

// writeAgentReport writes the report of rs and says on w what it lacks.
func writeAgentReport(w io.Writer, rs web.ReportSource, dir string, ro web.ReportOptions) (web.ReportFiles, error) {
	rf, err := web.WriteReport(rs, dir, ro)
	if err == nil && rf.Missing != "" {
		fmt.Fprintln(w, "missing:", rf.Missing)
	}
	return rf, err
}
