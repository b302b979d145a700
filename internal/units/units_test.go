package units

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"400KB", 400_000}, {"16MiB", 16 << 20}, {"1000B", 1000}, {"0", 0}, {"1.5MB", 1_500_000}, {" 4 KiB ", 4096}, {"0B", 0}, {"32MB", 32_000_000}} {
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
	// A bare number is refused, with the fix in the message.
	if _, err := ParseBytes("400"); err == nil || !strings.Contains(err.Error(), `size "400" has no unit: write 400KB, 400KiB or 400B`) {
		t.Errorf("ParseBytes(400): %v", err)
	}
	// A number too large to be meant in KB (12000000KB is 12GB, beyond any
	// switch buffer) is shown read as bytes.
	if _, err := ParseBytes("12000000"); err == nil || !strings.Contains(err.Error(), `size "12000000" has no unit: write 12000000B (12MB)`) ||
		strings.Contains(err.Error(), "write 12000000KB") || !strings.Contains(err.Error(), "12000000KB would be 12GB") {
		t.Errorf("ParseBytes(12000000): %v", err)
	}
	if _, err := ParseRate("25"); err == nil || !strings.Contains(err.Error(), `rate "25" has no unit: write 25Gbps`) {
		t.Errorf("ParseRate(25): %v", err)
	}
}

// TestParseBounds: sizes and rates beyond the bounds are refused with the
// input and the bound in the message, not wrapped into negative numbers
// (int64(1e33) is -9223372036854775808) or infinities.
func TestParseBounds(t *testing.T) {
	if v, err := ParseBytes("1TB"); err != nil || v != MaxBytes {
		t.Errorf("ParseBytes(1TB) = %d, %v", v, err)
	}
	for _, in := range []string{"1e30KB", "9e18B", "9223372036854775807B", "1.000001TB", "1e300GiB"} {
		_, err := ParseBytes(in)
		if err == nil || !strings.Contains(err.Error(), "above the maximum of 1TB") || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseBytes(%q): %v", in, err)
		}
	}
	if v, err := ParseRate("10Tbps"); err != nil || v != MaxRateBps {
		t.Errorf("ParseRate(10Tbps) = %g, %v", v, err)
	}
	for _, in := range []string{"1e300Tbps", "11T", "1e14bps"} {
		_, err := ParseRate(in)
		if err == nil || !strings.Contains(err.Error(), "above the maximum of 10Tbps") {
			t.Errorf("ParseRate(%q): %v", in, err)
		}
	}
	if _, err := ParseRate("1e-300bps"); err == nil || !strings.Contains(err.Error(), "below the minimum of 1bps") {
		t.Errorf("ParseRate(1e-300bps): %v", err)
	}
	if _, err := ParseDuration("1e10h"); err == nil {
		t.Errorf("ParseDuration(1e10h) accepted")
	}
}

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{{"100Gbps", 100e9}, {"20Mbps", 20e6}, {"400G", 400e9}, {"1e9bps", 1e9}, {"25gbps", 25e9}} {
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
	// a rate in bytes per second (capital B) is refused, with the rate in
	// bits to write: read case-blind it was 8 times too slow
	for in, fix := range map[string]string{"12.5GBps": "write 100Gbps for 12.5GBps", "100MBps": "write 800Mbps for 100MBps",
		"1 KBPS": "write 8Kbps for 1KBps", "3Bps": "write 24bps for 3Bps", "xGBps": "8 times the bytes"} {
		if v, err := ParseRate(in); err == nil || !strings.Contains(err.Error(), `rate "`+in+`" is in bytes per second`) || !strings.Contains(err.Error(), fix) {
			t.Errorf("ParseRate(%q) = %g, %v; want an error saying to %s", in, v, err, fix)
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

// One byte formatter: the unit by magnitude, at most four significant
// digits, whatever the value (it used to write 3482.571KB next to 3.594MB).
func TestFormatBytesOneStyle(t *testing.T) {
	for in, want := range map[int64]string{0: "0B", 999: "999B", 1000: "1KB", 52_376: "52.38KB", 150_000: "150KB",
		3_482_571: "3.483MB", 3_594_000: "3.594MB", 999_960: "1MB", 1_600_000: "1.6MB", 2e12: "2TB", -1500: "-1.5KB"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestParseFraction(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{{"0.2", 0.2}, {"20%", 0.2}, {" 0.3 % ", 0.003}, {"1e-3", 0.001}, {"1", 1}, {"100%", 1}} {
		got, err := ParseFraction(c.in)
		if err != nil || math.Abs(got-c.want) > 1e-15 {
			t.Errorf("ParseFraction(%q) = %g, %v; want %g", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "%", "20%%", "high", "NaN", "Inf%", "0.2KB"} {
		if _, err := ParseFraction(bad); err == nil || !strings.Contains(err.Error(), "not a fraction") {
			t.Errorf("ParseFraction(%q): %v", bad, err)
		}
	}
}

// TestEmptySizeSuggestsAUnit: the hint of an empty size shows sizes with
// their unit, never a bare number (which ParseBytes refuses).
func TestEmptySizeSuggestsAUnit(t *testing.T) {
	_, err := ParseBytes(" ")
	if err == nil || !strings.Contains(err.Error(), "1000B") || strings.Contains(err.Error(), "1000)") {
		t.Errorf("ParseBytes(\" \"): %v", err)
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n          int
		noun, want string
	}{{1, "switch", "1 switch"}, {2, "switch", "2 switches"}, {0, "seed", "0 seeds"}, {1, "seed", "1 seed"}, {3, "queue", "3 queues"}, {2, "box", "2 boxes"}} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
