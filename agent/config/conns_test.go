package config

import (
	"strings"
	"testing"
)

// TestMetricsMaxConnsKey: metrics-max-conns caps the HTTP endpoint's
// connections, default DefaultMetricsMaxConns, 1..MaxMetricsMaxConns.
func TestMetricsMaxConnsKey(t *testing.T) {
	base := "targets:\n  sw0: {address: 127.0.0.1:57400, insecure: true}\n"
	c, err := Parse([]byte(base))
	if err != nil || c.MetricsMaxConns != DefaultMetricsMaxConns {
		t.Fatalf("default: %v, %v", c, err)
	}
	if c, err = Parse([]byte("metrics-max-conns: 8\n" + base)); err != nil || c.MetricsMaxConns != 8 {
		t.Fatalf("8: %v", err)
	}
	for _, v := range []string{"0", "-3", "1025"} {
		_, err := Parse([]byte("metrics-max-conns: " + v + "\n" + base))
		if err == nil || !strings.Contains(err.Error(), "metrics-max-conns: "+v+" is outside the allowed range 1..1024") {
			t.Errorf("%s: %v", v, err)
		}
	}
}
