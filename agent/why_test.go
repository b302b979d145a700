package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/agent/core"
	"github.com/ecntune/ecntune/env"
	"github.com/ecntune/ecntune/gnmipath"
)

// What /healthz says of a switch the agent cannot reach: the cause an
// operator acts on, not a nested "possibly because" part, and a TLS
// mismatch named as such (it said `error reading server preface: EOF"`).
func TestWhyUnreachable(t *testing.T) {
	for _, c := range []struct{ err, want string }{
		{`target leaf0: rpc error: code = Unavailable desc = connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority (possibly because of "x509: invalid signature: parent certificate cannot sign this kind of certificate" while trying to verify candidate authority certificate "localhost")" (resubscribing in 2s)`,
			"certificate signed by unknown authority (give the switch's CA as tls-ca"},
		{`target leaf0: rpc error: code = Unavailable desc = connection error: desc = "error reading server preface: EOF" (resubscribing in 2s)`,
			"it may want TLS"},
		{`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`, "connection refused"},
		{`rpc error: code = Internal desc = "bad thing"`, "bad thing"},
	} {
		if got := whyUnreachable(errors.New(c.err)); !strings.Contains(got, c.want) || strings.HasSuffix(got, `"`) {
			t.Errorf("%s:\n  %q, want %q", c.err, got, c.want)
		}
	}
}

// A headroom Set that got no answer is not called refused (it landed
// seconds later, unnoticed), and each queue's audit names its own
// headroom paths, not every queue's.
func TestHeadroomErrorWording(t *testing.T) {
	herr := &gnmipath.HeadroomError{Target: "leaf0", Paths: []string{"/x/interface[name=Ethernet0]/hr", "/x/interface[name=Ethernet04]/hr", "/x/interface[name=Ethernet4]/hr"},
		Err: fmt.Errorf("%w: context deadline exceeded", core.ErrSetOutcomeUnknown)}
	k := env.QueueKey{Target: "leaf0", Port: "Ethernet4", Queue: 3}
	msg := headroomRefused(200_000, 100_000, headroomErrorOf(herr, k))
	if strings.Contains(msg, "refused") || !strings.Contains(msg, "may still land") {
		t.Errorf("unanswered headroom Set: %s", msg)
	}
	if strings.Contains(msg, "Ethernet0]") || strings.Contains(msg, "Ethernet04") || !strings.Contains(msg, "Ethernet4]") {
		t.Errorf("paths of other queues: %s", msg)
	}
	herr.Err = errors.New("rpc error: code = InvalidArgument desc = out of range")
	if msg := headroomRefused(200_000, 100_000, herr); !strings.Contains(msg, "refused by the switch") {
		t.Errorf("refused headroom Set: %s", msg)
	}
}
