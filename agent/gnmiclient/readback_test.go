package gnmiclient

import (
	"context"
	"testing"
	"time"

	"github.com/ecntune/ecntune/env"
)

// The read-back of a target with queue-names decodes the switch's answer
// with its names: the Get asks queue[name=AF3] for queue 3, and the answer
// of queue AF3 is queue 3's setting (decoded without the names it held no
// queue, every read failed and the closed loop never wrote the target).
func TestReadBackWithQueueNames(t *testing.T) {
	prof := "/qos/queue-management-profiles/queue-management-profile[name=p3]"
	addr := serveFake(t, &leafSwitch{leaves: map[string]string{
		"/qos/interfaces/interface[interface-id=Ethernet1]/output/queues/queue[name=AF3]/config/queue-management-profile": `"p3"`,
		prof + "/config/name":                                      `"p3"`,
		prof + "/wred/uniform/config/min-threshold":                `"100000"`,
		prof + "/wred/uniform/config/max-threshold":                `"400000"`,
		prof + "/wred/uniform/config/max-drop-probability-percent": `5`,
		prof + "/wred/uniform/config/enable-ecn":                   `true`,
	}})
	tc := target0(addr, "openconfig")
	tc.Device = "arista-eos"
	tc.QueueNames = map[int]string{3: "AF3"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sw, err := Dial(ctx, tc, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	key := env.QueueKey{Target: "sw0", Port: "Ethernet1", Queue: 3}
	got, err := sw.Read(ctx, []env.QueueKey{key})
	if err != nil {
		t.Fatalf("read-back of queue 3 (AF3 on the switch): %v", err)
	}
	if s := got[key]; s.KminBytes != 100_000 || s.KmaxBytes != 400_000 || s.Pmax != 0.05 {
		t.Fatalf("read-back of queue 3 (AF3 on the switch): %+v, want kmin 100000 B, kmax 400000 B, pmax 5%%", s)
	}
}
