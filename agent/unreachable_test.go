package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ecntune/ecntune/agent/config"
	"github.com/ecntune/ecntune/agent/gnmiclient"
)

// An unreachable switch: its line says why (connection refused, a
// timeout, TLS), its device is unknown rather than the default profile
// the agent fell back to, and the health problems give the reason.
func TestUnreachableTargetSaysWhy(t *testing.T) {
	for _, c := range []struct{ err, want string }{
		{`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`, "connection refused"},
		{"rpc error: code = DeadlineExceeded desc = context deadline exceeded", "timed out"},
		{`rpc error: code = Unavailable desc = connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"`, "TLS handshake failed: x509: certificate signed by unknown authority (give the switch's CA as tls-ca, or skip-verify: true)"},
		{`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp: lookup sw9.example: no such host"`, "name not found"},
	} {
		r := newRig(t, config.ModeShadow, false, "", nil)
		caps := fmt.Errorf("Capabilities failed (%s); using the openconfig dialect's default", c.err)
		r.a.targetEvent("leaf0", &gnmiclient.DeviceNote{Target: "leaf0", Device: "ecntune", Why: caps.Error()})
		r.a.targetEvent("leaf0", errors.New("target leaf0: subscription counters: "+c.err))
		var ti *struct{ device, why, unreachable string }
		for _, x := range r.a.Targets() {
			if x.Target == "leaf0" {
				ti = &struct{ device, why, unreachable string }{x.Device, x.DeviceWhy, x.Unreachable}
			}
		}
		if ti == nil {
			t.Fatal("no leaf0")
		}
		if ti.unreachable != c.want {
			t.Errorf("%s: unreachable %q, want %q", c.want, ti.unreachable, c.want)
		}
		if ti.device != "unknown" || !strings.Contains(ti.why, "Capabilities failed") {
			t.Errorf("device %q (%s), want unknown with the reason", ti.device, ti.why)
		}
		r.clk.Add(10 * time.Second)
		problems, _ := r.a.Health()
		if !strings.Contains(strings.Join(problems, "\n"), "leaf0: no telemetry since the agent started") ||
			!strings.Contains(strings.Join(problems, "\n"), c.want) {
			t.Errorf("health problems without the reason %q:\n%s", c.want, strings.Join(problems, "\n"))
		}
	}
}
