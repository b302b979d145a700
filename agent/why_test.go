package agent

import (
	"errors"
	"strings"
	"testing"
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
