package gnmipath

import (
	"strings"
	"testing"

	"github.com/ecntune/ecntune/env"
)

// Sets merges queues' requests unless two would write one path, in the
// natural order of the queues; it leaves out a headroom the switch already
// has and one the device cannot set; WritePaths names what a change writes.
func TestSetsBatchesWithoutClashes(t *testing.T) {
	tg := Target{Name: "sw", Dialect: OpenConfig, Device: Devices["ecntune"]}
	k2, k10 := env.QueueKey{Target: "sw", Port: "Ethernet2", Queue: 3}, env.QueueKey{Target: "sw", Port: "Ethernet10", Queue: 3}
	st := env.Setting{KminBytes: 100_000, KmaxBytes: 400_000, Pmax: 0.05, HeadroomBytes: 60_000}
	own := func(k env.QueueKey) QueueState {
		return QueueState{Binding: Binding{ECNProfile: OwnProfileName(k.Port, k.Queue)}, Setting: env.Setting{HeadroomBytes: 60_000}, Known: true}
	}
	ecn, hr, nt, err := Sets(tg, map[env.QueueKey]env.Setting{k2: st, k10: st}, own)
	if err != nil || len(ecn) != 1 || len(hr) != 0 || len(nt) != 0 {
		t.Fatalf("own profiles: %d ECN requests, %d headroom (the switch has it), %v, %v; want one and none", len(ecn), len(hr), nt, err)
	}
	// One profile two queues write (not known to be shared): two requests,
	// Ethernet2's first.
	same := func(env.QueueKey) QueueState { return QueueState{Binding: Binding{ECNProfile: "P"}} }
	ecn, hr, _, err = Sets(tg, map[env.QueueKey]env.Setting{k10: st, k2: st}, same)
	if err != nil || len(ecn) != 2 || len(hr) != 2 {
		t.Fatalf("one profile: %d ECN requests, %d headroom, %v; want 2 and 2", len(ecn), len(hr), err)
	}
	if !strings.Contains(strings.Join(RequestPaths(hr[0]), " "), "Ethernet2") {
		t.Errorf("not in natural order: %v", RequestPaths(hr[0]))
	}
	// openconfig has no settable headroom: ECN only.
	plain := Target{Name: "sw", Dialect: OpenConfig, Device: Devices["openconfig"]}
	if _, hr, _, err := Sets(plain, map[env.QueueKey]env.Setting{k2: st}, same); err != nil || len(hr) != 0 {
		t.Fatalf("openconfig headroom: %d requests, %v", len(hr), err)
	}
	ps := WritePaths(tg, []env.QueueKey{k2}, same)
	if len(ps) == 0 || !strings.Contains(strings.Join(ps, " "), "queue-management-profile[name=P]") {
		t.Fatalf("write paths %v", ps)
	}
}
