package agent

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/gnmiclient"
	"github.com/ecntune/ecntune/env"
)

// A port the configuration names that the switch reports no queue of (a
// typo) is said in the log, on /targets and /healthz once the target has
// sent a few snapshots: under ports: the queue is not tuned; under
// fabric-ports (ports: "*") the real uplinks would count as host ports.
// It clears when the port reports.
func TestAbsentConfiguredPorts(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*config.Target)
		want string
	}{
		{"ports", func(tc *config.Target) {
			tc.AllPorts, tc.Ports = false, []string{"Ethernet0", "Ethernet1", "Ethernet99"}
		},
			"leaf0: ports Ethernet99 in the configuration report no queue on the switch"},
		{"fabric-ports", func(tc *config.Target) { tc.FabricPorts, tc.PeersKnown = []string{"Ethernet77"}, true },
			"leaf0: fabric-ports Ethernet77 are not ports of the switch (a typo?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, config.ModeShadow, false, "", nil)
			tc := r.a.targets["leaf0"]
			c.set(&tc)
			r.a.targets["leaf0"] = tc
			absent := func() ([]string, string) {
				ps, _ := r.a.Health()
				return r.a.Targets()[0].AbsentPorts, strings.Join(ps, "; ")
			}
			for range absentAfter {
				r.interval(t)
			}
			if got, health := absent(); got != nil || health != "" {
				t.Fatalf("before %d snapshots: absent %v, health %q", absentAfter, got, health)
			}
			r.interval(t)
			got, health := absent()
			if len(got) != 1 || !strings.Contains(health, c.want) {
				t.Fatalf("absent %v, health %q: want %q", got, health, c.want)
			}
			// the port reports: cleared
			k := env.QueueKey{Target: "leaf0", Port: got[0], Queue: 3}
			r.sw.mu.Lock()
			r.sw.set[k] = cur
			r.sw.mu.Unlock()
			r.interval(t)
			if got, health := absent(); got != nil || health != "" {
				t.Fatalf("after the port reported: absent %v, health %q", got, health)
			}
		})
	}
}

// The queues a switch has on none of its ports are on /targets and
// /healthz until it reports them (gnmiclient.AbsentQueuesNote).
func TestAbsentConfiguredQueuesOnHealth(t *testing.T) {
	r := newRig(t, config.ModeShadow, false, "", nil)
	r.a.targetEvent("leaf0", &gnmiclient.AbsentQueuesNote{Target: "leaf0", Absent: []int{4}, Have: []int{0, 3}})
	ps, _ := r.a.Health()
	if h := strings.Join(ps, "; "); !strings.Contains(h, "leaf0: configured queues [4] are on none of the switch's ports (it reports queues [0 3])") {
		t.Fatalf("health %q", h)
	}
	if got := r.a.Targets()[0].AbsentQueues; len(got) != 1 || got[0] != 4 {
		t.Fatalf("/targets absent queues %v", got)
	}
	r.a.targetEvent("leaf0", &gnmiclient.AbsentQueuesNote{Target: "leaf0"})
	if ps, _ := r.a.Health(); strings.Contains(strings.Join(ps, "; "), "configured queues") {
		t.Fatalf("still said after the queues reported: %q", ps)
	}
}
