package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/simenv"
)

func TestCollectives(t *testing.T) {
	ws := []simenv.Workload{
		{Kind: simenv.WorkloadCDF},
		{Kind: simenv.WorkloadAllReduce, Ranks: 8, SizeBytes: 1 << 20},
		{Kind: simenv.WorkloadAllToAll, Ranks: 4, SizeBytes: 1 << 10}, // completes nothing
	}
	us := simenv.Microsecond
	var recs []simenv.CollectiveRecord
	for i := 1; i <= 100; i++ { // iteration i takes i µs
		recs = append(recs, simenv.CollectiveRecord{Workload: 1, Iteration: i, Start: simenv.Time(i) * 1000 * us,
			Finish: simenv.Time(i)*1000*us + simenv.Time(i)*us})
	}
	got := Collectives(recs, ws)
	if len(got) != 2 {
		t.Fatalf("got %d collectives, want the allreduce and the alltoall: %+v", len(got), got)
	}
	ar, aa := got[0], got[1]
	if ar.Workload != 1 || ar.Kind != "allreduce" || ar.Ranks != 8 || ar.Iterations != 100 ||
		ar.P50Us != 50 || ar.P99Us != 99 || ar.MeanUs != 50.5 || ar.MaxUs != 100 {
		t.Fatalf("allreduce %+v", ar)
	}
	if aa.Workload != 2 || aa.Kind != "alltoall" || aa.Iterations != 0 || aa.P99Us != 0 {
		t.Fatalf("alltoall %+v", aa)
	}
	if Collectives(nil, ws[:1]) != nil {
		t.Fatal("a scenario without collectives has none")
	}

	s := Summary{Collectives: got}
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "collective iteration (µs)") || !strings.Contains(b.String(), "allreduce#1") {
		t.Fatalf("text has no collectives table:\n%s", b.String())
	}
	b.Reset()
	if err := s.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Collectives []map[string]any `json:"collectives"`
	}
	if err := json.Unmarshal(b.Bytes(), &m); err != nil || len(m.Collectives) != 2 || m.Collectives[0]["iter_p99_us"] != 99.0 {
		t.Fatalf("JSON collectives %v (%v)", m.Collectives, err)
	}
}
