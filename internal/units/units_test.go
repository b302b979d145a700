package units

import (
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"400KB", 400_000}, {"16MiB", 16 << 20}, {"1000", 1000}, {"1.5MB", 1_500_000}, {" 4 KiB ", 4096}, {"0B", 0}, {"32MB", 32_000_000}} {
		got, err := ParseBytes(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "KB", "-1KB", "1.2.3MB", "10 parsecs", "NaN"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{{"100Gbps", 100e9}, {"20Mbps", 20e6}, {"400G", 400e9}, {"1e9", 1e9}, {"25gbps", 25e9}} {
		got, err := ParseRate(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %g, %v; want %g", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "0Gbps", "-5G", "fast"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{{"1us", time.Microsecond}, {"1µs", time.Microsecond}, {"20ms", 20 * time.Millisecond}, {"1.5s", 1500 * time.Millisecond}} {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "10", "-1ms", "soon"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
}

func TestFormatAndScale(t *testing.T) {
	if got := FormatBytes(1_600_000); got != "1.6MB" {
		t.Errorf("FormatBytes = %q", got)
	}
	if got := FormatRate(100e9); got != "100Gbps" {
		t.Errorf("FormatRate = %q", got)
	}
	if got := ScaleBytes(400_000, 25e9); got != 100_000 {
		t.Errorf("ScaleBytes(400KB, 25G) = %d, want 100000", got)
	}
}
