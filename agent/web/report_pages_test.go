package web

import (
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/agent/journal"
	"github.com/ecntune/ecntune/env"
)

// pagedSource serves an audit log of n entries a page at a time, as the
// journal does (newest first within the limit, oldest first in a page).
type pagedSource struct{ entries []core.AuditEntry }

func (s *pagedSource) Path() string                               { return "paged.db" }
func (s *pagedSource) RecommendationTimes(int64) ([]int64, error) { return nil, nil }
func (s *pagedSource) EachRecommendation(int64, func(*core.Recommendation) error) error {
	return nil
}

func (s *pagedSource) ChangesPage(q journal.ChangesQuery) (journal.ChangesPage, error) {
	end := len(s.entries)
	if q.Before != 0 {
		end = int(q.Before) - 1 // seq i+1 at index i
	}
	start := max(0, end-q.Limit)
	p := journal.ChangesPage{Changes: append([]core.AuditEntry(nil), s.entries[start:end]...)}
	if start > 0 {
		p.NextBefore = s.entries[start].Seq
	}
	return p, nil
}

// A report counts every audit entry of its window, not one page's 1,000.
func TestReportCountsEveryPageOfTheAuditLog(t *testing.T) {
	src := &pagedSource{}
	for i := range 2500 {
		k := env.QueueKey{Target: "leaf0", Port: "Ethernet0", Queue: i % 7}
		src.entries = append(src.entries, core.AuditEntry{Seq: uint64(i + 1), TimeNs: int64(i+1) * 1e9, Target: "leaf0",
			Change: core.Change{Key: k, Kind: core.KindTune}, State: core.StateApplied})
	}
	all, err := allChanges(src, journal.ChangesQuery{})
	if err != nil || len(all.Changes) != 2500 || all.Changes[0].Seq != 1 || all.Changes[2499].Seq != 2500 || all.NextBefore != 0 {
		t.Fatalf("allChanges: %d entries (first %d), next %d, %v", len(all.Changes), all.Changes[0].Seq, all.NextBefore, err)
	}
	rf, err := WriteReport(src, t.TempDir(), ReportOptions{})
	if err != nil || rf.Changes != 2500 || rf.Queues != 7 {
		t.Fatalf("report of 2,500 audited changes on 7 queues: %+v, %v", rf, err)
	}
}

// timedSource has stored intervals at times and no audit log.
type timedSource struct {
	pagedSource
	times []int64
}

func (s *timedSource) RecommendationTimes(since int64) ([]int64, error) {
	var out []int64
	for _, t := range s.times {
		if t >= since {
			out = append(out, t)
		}
	}
	return out, nil
}

// A --since after every stored interval is said with the times in UTC, as
// everywhere else (it wrote them in the host's local time: +01:00 here).
func TestReportSinceErrorInUTC(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.FixedZone("CET", 3600)
	src := &timedSource{times: []int64{1_795_960_861e9, 1_795_960_862e9}}
	_, err := WriteReport(src, t.TempDir(), ReportOptions{SinceNs: 1_795_960_900e9})
	want := "since 2026-11-29T14:01:40Z: its 2 stored intervals run from 2026-11-29T14:01:01Z to 2026-11-29T14:01:02Z"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("report after every stored interval: %v; want %q", err, want)
	}
}
