package fleet

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// etcdRequests sums the request messages the embedded etcd received, by
// method (grpc_server_msg_received_total, in the default registry): a
// unary call is one, a stream counts each message (a lease renewal on
// the keepalive stream is one).
func etcdRequests(t *testing.T) map[string]float64 {
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "grpc_server_msg_received_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			method := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "grpc_method" {
					method = l.GetValue()
				}
			}
			out[method] += m.GetCounter().GetValue()
		}
	}
	return out
}

// The etcd load of a fleet at rest: 4 members, ECNTUNE_FLEET_SCALE
// switches (skipped when unset), the default 5 s ttl, one minute after the
// placement settled: requests per minute by method, per switch and per
// member.
func TestFleetScale(t *testing.T) {
	s := os.Getenv("ECNTUNE_FLEET_SCALE")
	if s == "" {
		t.Skip("ECNTUNE_FLEET_SCALE=1000 measures the etcd load of 4 members on that many switches")
	}
	var nsw int
	fmt.Sscan(s, &nsw)
	ep := startEtcd(t)
	var nodes []*Node
	for i := 0; i < 4; i++ {
		cfg := testConfig(fmt.Sprintf("m%d", i), nsw)
		cfg.TTL, cfg.Takeover = 5*time.Second, 0
		n, err := Join(t.Context(), client(t, ep), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nodes = append(nodes, n)
	}
	waitUntil(t, 10*time.Minute, "the placement settled", func() bool {
		total := 0
		for _, n := range nodes {
			k := len(n.Owned())
			if k > (nsw*5+15)/16 { // ceil(n/4 × 1.25)
				return false
			}
			total += k
		}
		return total == nsw
	})
	time.Sleep(10 * time.Second) // the last moves' watch events
	before := etcdRequests(t)
	time.Sleep(time.Minute)
	after := etcdRequests(t)
	var total float64
	var by []string
	for m, v := range after {
		if d := v - before[m]; d > 0 {
			total += d
			by = append(by, fmt.Sprintf("%s %.0f", m, d))
		}
	}
	t.Logf("%d switches, 4 members, ttl 5s, one minute at rest: %.0f etcd requests (%.2f per switch, %.0f per member); by method: %s",
		nsw, total, total/float64(nsw), total/4, strings.Join(by, ", "))
}
