package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
)

// A queue whose PG alpha is known has its applied and recommended alpha
// on /metrics; one whose switch does not report alpha has no applied
// alpha series.
func TestMetricsAlphaGauges(t *testing.T) {
	sw := newFakeSwitch("leaf0", kA, kB)
	sw.set[kA] = curA // kB: cur, alpha unknown
	r := newRig(t, config.ModeShadow, false, "", sw)
	r.pol.s = target
	r.pol.s.Alpha = 0.5
	r.interval(t)
	srv := httptest.NewServer(r.a.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`ecntune_queue_applied_alpha{port="Ethernet0",queue="3",target="leaf0"} 0.125`,
		`ecntune_queue_recommended_alpha{port="Ethernet0",queue="3",target="leaf0"} 0.5`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if s := `ecntune_queue_applied_alpha{port="Ethernet1"`; strings.Contains(string(body), s) {
		t.Errorf("/metrics has %s for a queue whose alpha is unknown", s)
	}
}
