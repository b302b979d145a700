package config

import (
	"strings"
	"testing"
)

// max-ports bounds the ports a target's telemetry keeps: 0 (the decoder's
// default) unless given, refused outside 1..MaxMaxPorts naming the key.
func TestMaxPortsKey(t *testing.T) {
	c, err := Parse([]byte("targets:\n  sw0: {address: 127.0.0.1:57400, insecure: true}\n"))
	if err != nil || c.Targets[0].MaxPorts != 0 {
		t.Fatalf("default: %+v, %v", c.Targets, err)
	}
	if c, err = Parse([]byte("targets:\n  sw0: {address: 127.0.0.1:57400, insecure: true, max-ports: 128}\n")); err != nil || c.Targets[0].MaxPorts != 128 {
		t.Fatalf("128: %v", err)
	}
	_, err = Parse([]byte("targets:\n  sw0: {address: 127.0.0.1:57400, insecure: true, max-ports: 0}\n"))
	if err == nil || !strings.Contains(err.Error(), "targets.sw0.max-ports: 0 is outside the allowed range 1..65536") {
		t.Fatalf("0: %v", err)
	}
}
