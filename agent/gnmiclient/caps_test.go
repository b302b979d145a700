package gnmiclient

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/ecntune/ecntune/env"
)

// hungSwitch is a switch whose gNMI process hangs: the connection is up,
// Capabilities never answers, nothing else is served.
type hungSwitch struct{ gnmi.UnimplementedGNMIServer }

func (hungSwitch) Capabilities(ctx context.Context, _ *gnmi.CapabilityRequest) (*gnmi.CapabilityResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// Asking a switch of unknown device for its Capabilities is bounded by the
// target's timeout: past it the dialect's default device is taken and
// said, as when Capabilities fails (a switch whose gNMI process hung held
// Subscribe in Capabilities for ever: no stream, nothing said).
func TestHungCapabilitiesBounded(t *testing.T) {
	tc := target0(serveFake(t, hungSwitch{}), "openconfig") // no device: asked by Capabilities
	tc.Timeout = 500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sw, err := Dial(ctx, tc, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	out, errs := make(chan env.Snapshot, 8), make(chan error, 8)
	go sw.Subscribe(ctx, out, errs)
	start := time.Now()
	for {
		select {
		case err := <-errs:
			var dn *DeviceNote
			if !errors.As(err, &dn) {
				continue
			}
			if !strings.Contains(dn.Why, "Capabilities failed (no answer within the target's timeout 500ms)") || !strings.Contains(dn.Why, "dialect's default") {
				t.Fatalf("the device note: %v", dn)
			}
			if waited := time.Since(start); waited > 3*time.Second {
				t.Fatalf("the device taken after %s with a 500ms timeout", waited)
			}
			return
		case <-time.After(8 * time.Second):
			t.Fatal("target timeout 500ms: after 8s Subscribe has said nothing (held in Capabilities)")
		}
	}
}
