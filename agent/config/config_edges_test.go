package config

import (
	"strings"
	"testing"
)

// A key given twice must be reported alone: the targets that are there
// must not be reported missing.
func TestDuplicateKeyOnlyError(t *testing.T) {
	doc := "mode: shadow\ninterval: 1s\ntargets:\n  leaf0: {address: \"127.0.0.1:57400\", insecure: true, fabric-ports: []}\ninterval: 2s\n"
	_, err := Parse([]byte(doc))
	if err == nil {
		t.Fatal("no error for a duplicate key")
	}
	if strings.Contains(err.Error(), "at least one target is required") {
		t.Errorf("spurious error about targets:\n%v", err)
	}
}

// A bad top-level port: must name the port key, not a target's address.
func TestTopLevelPortNamedOnce(t *testing.T) {
	doc := "mode: shadow\nport: 0\ntargets:\n  leaf0: {address: 127.0.0.1, insecure: true, fabric-ports: []}\n"
	_, err := Parse([]byte(doc))
	if err == nil || !strings.Contains(err.Error(), "line 2: port") {
		t.Errorf("want an error on line 2 naming port:, got: %v", err)
	}
}

// An empty target name cannot be addressed by --target nor be a gNMI target.
func TestEmptyTargetNameRefused(t *testing.T) {
	doc := "mode: shadow\ntargets:\n  \"\": {address: \"127.0.0.1:57400\", insecure: true, fabric-ports: []}\n"
	if _, err := Parse([]byte(doc)); err == nil {
		t.Errorf("an empty target name is accepted")
	}
}

// queues: [] is an explicit empty list, as ports: [] (an error there); it
// must not silently become queues 3 and 4.
func TestEmptyQueuesListRefused(t *testing.T) {
	doc := "mode: closed-loop\ntargets:\n  leaf0: {address: \"127.0.0.1:57400\", insecure: true, fabric-ports: [], queues: []}\n"
	c, err := Parse([]byte(doc))
	if err == nil {
		t.Errorf("queues: [] accepted; the agent will control queues %v", c.Targets[0].Queues)
	}
}

// A target's name may not hold / or \ (a queue is TARGET/PORT/qN, and
// files are named after targets: "../../x" wrote outside the folder).
func TestTargetNameWithSlashRefused(t *testing.T) {
	for _, name := range []string{"../../tmp/leaf0", `leaf\0`} {
		doc := "mode: shadow\ntargets:\n  \"" + strings.ReplaceAll(name, `\`, `\\`) + "\": {address: \"127.0.0.1:57400\", insecure: true, fabric-ports: []}\n"
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), "may not hold /") {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// A password sent without TLS, or to an unchecked certificate, is warned
// about.
func TestCleartextPasswordWarned(t *testing.T) {
	c, err := Parse([]byte("mode: shadow\ntargets:\n  leaf0: {address: \"127.0.0.1:57400\", insecure: true, username: admin, password: pw, fabric-ports: []}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(c.Warnings, "\n"), "targets.leaf0: a password with insecure: true") {
		t.Errorf("warnings %q", c.Warnings)
	}
}
