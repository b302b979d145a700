package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Bounds of what the parsers accept: far beyond any real switch or run,
// and far inside what int64 bytes, float64 rates and int64 picoseconds
// hold, so that nothing downstream overflows or loops without end.
const (
	// MaxBytes is the largest size: 1 TB (switch buffers are tens of MB,
	// flows at most a few GB).
	MaxBytes int64 = 1_000_000_000_000
	// MaxRateBps is the fastest rate: 10 Tb/s (links run at up to 800 Gb/s).
	MaxRateBps = 10e12
	// MinRateBps is the slowest rate: 1 b/s (slower would make the time
	// to send one frame overflow the simulator's clock).
	MinRateBps = 1.0
	// MaxSimDuration is the longest simulated duration a scenario may name
	// (a packet-level run of an hour is already days of computing).
	MaxSimDuration = time.Hour
)

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"kB", 1e3}, {"B", 1},
}

// ParseBytes parses a byte size such as "400KB", "16MiB", "1000B" or
// "1.5MB". KB, MB, GB and TB are decimal; KiB, MiB, GiB and TiB binary. The
// unit is required (a bare 400 could mean bytes or, as in ns-3's configs,
// KB); only 0 may go without. Sizes above MaxBytes are refused.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size (want e.g. 400KB, 16MiB or 1000B)")
	}
	mult, unit := 1.0, false
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			mult, unit = u.mult, true
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("cannot parse size %q (want a number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s)
	}
	if !unit && v != 0 {
		if v >= bareBytesFrom && v <= float64(MaxBytes) {
			return 0, fmt.Errorf("size %q has no unit: write %sB (%s); %sKB would be %s",
				s, t, FormatBytes(int64(math.Round(v))), t, FormatBytes(int64(math.Min(v*1000, float64(MaxBytes)))))
		}
		return 0, fmt.Errorf("size %q has no unit: write %sKB, %sKiB or %sB (ns-3's KMIN_MAP and KMAX_MAP are in KB)", s, t, t, t)
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	if b := v * mult; b > float64(MaxBytes) {
		return 0, fmt.Errorf("size %q is above the maximum of %s", s, FormatBytes(MaxBytes))
	}
	return int64(math.Round(v * mult)), nil
}

// bareBytesFrom is the smallest bare number ParseBytes's hint reads as
// bytes first: as KB it would be 100 MB, beyond any switch buffer or
// threshold.
const bareBytesFrom = 100_000

// ParseRate parses a bit rate such as "100Gbps", "20Mbps", "400G" or
// "1e9bps" and returns bits per second, at most MaxRateBps. The unit is
// required.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty rate (want e.g. 100Gbps)")
	}
	if bytesPerSecond(t) {
		return 0, fmt.Errorf("rate %q is in bytes per second (B): rates are written in bits per second, %s (a lowercase b: Gbps, Mbps)", s, bitsHint(t))
	}
	mult, unit := 1.0, false
	low := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"tbps", 1e12}, {"gbps", 1e9}, {"mbps", 1e6}, {"kbps", 1e3}, {"bps", 1}, {"t", 1e12}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}} {
		if strings.HasSuffix(low, u.suffix) {
			mult, unit = u.mult, true
			t = strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("cannot parse rate %q (want a number with bps, Kbps, Mbps, Gbps or Tbps)", s)
	}
	if !unit {
		return 0, fmt.Errorf("rate %q has no unit: write %sGbps, %sMbps or %sbps", s, t, t, t)
	}
	if v <= 0 {
		return 0, fmt.Errorf("rate %q must be positive", s)
	}
	if v*mult < MinRateBps {
		return 0, fmt.Errorf("rate %q is below the minimum of %s", s, FormatRate(MinRateBps))
	}
	if v*mult > MaxRateBps {
		return 0, fmt.Errorf("rate %q is above the maximum of %s", s, FormatRate(MaxRateBps))
	}
	return v * mult, nil
}

// bytesPerSecond says whether a rate is written in bytes per second, its
// unit ending in "Bps" with a capital B ("12.5GBps"), which ParseRate would
// otherwise read, case-blind, as bits per second: 8 times too slow.
func bytesPerSecond(t string) bool {
	u := strings.TrimRight(t, "sS")
	u = strings.TrimRight(u, "pP")
	return len(u) < len(t)-1 && strings.HasSuffix(u, "B")
}

// bitsHint is a "Bps" rate converted to bits per second, as the rate to
// write ("write 100Gbps"), or how to convert it when it does not parse.
func bitsHint(t string) string {
	num := strings.TrimSpace(strings.TrimRight(strings.TrimRight(t, "sS"), "pP"))
	num = strings.TrimSpace(num[:len(num)-1])
	prefix := ""
	if n := len(num); n > 0 && strings.ContainsRune("kKMGT", rune(num[n-1])) {
		prefix, num = strings.ToUpper(num[n-1:]), strings.TrimSpace(num[:n-1])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return "8 times the bytes"
	}
	return fmt.Sprintf("write %s%sbps for %s%sBps", strconv.FormatFloat(v*8, 'g', -1, 64), prefix, num, prefix)
}

// ParseFraction parses a fraction such as a marking probability: a bare
// number ("0.2", "1e-3") or a percentage ("20%", "0.3 %"). It checks only
// that it is a finite number; the caller holds it to its range.
func ParseFraction(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if u, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(u), 0.01
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a fraction (want e.g. 0.2 or 20%%)", s)
	}
	return v * scale, nil
}

// ParseDuration parses a duration such as "20ms", "1us", "1µs", "300us" or
// "1.5s". A bare number is refused: the unit must be given. Durations
// beyond time.Duration's range (about 292 years) are refused; a simulated
// duration is further held to MaxSimDuration by its user.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	d, err := time.ParseDuration(strings.ReplaceAll(t, "µs", "us"))
	if err != nil {
		return 0, fmt.Errorf("cannot parse duration %q (want e.g. 1us, 300us, 20ms or 1s)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// FormatBytes renders a byte count with a decimal unit (KB = 1000 B)
// chosen by magnitude and at most four significant digits: 150KB,
// 52.38KB, 3.483MB, 999B. It is the one byte formatter of every output.
func FormatBytes(b int64) string { return string(AppendBytes(make([]byte, 0, 12), b)) }

var byteUnits = [...]struct {
	div  float64
	unit string
}{{1, "B"}, {1e3, "KB"}, {1e6, "MB"}, {1e9, "GB"}, {1e12, "TB"}}

// AppendBytes appends FormatBytes(b) to dst without allocating (reasons
// are written for every queue every interval).
func AppendBytes(dst []byte, b int64) []byte {
	if b < 0 {
		dst = append(dst, '-')
		if b == math.MinInt64 {
			b = math.MaxInt64
		} else {
			b = -b
		}
	}
	if b < 1000 {
		dst = strconv.AppendInt(dst, b, 10)
		return append(dst, 'B')
	}
	u := 1
	for u+1 < len(byteUnits) && float64(b) >= byteUnits[u+1].div {
		u++
	}
	x := float64(b) / byteUnits[u].div
	// Four significant digits; 999.96KB rounds to 1000KB, shown as 1MB.
	var scale float64
	switch {
	case x < 10:
		scale = 1000
	case x < 100:
		scale = 100
	default:
		scale = 10
	}
	x = math.Round(x*scale) / scale
	if x >= 1000 && u+1 < len(byteUnits) {
		x /= 1000
		u++
	}
	dst = strconv.AppendFloat(dst, x, 'f', -1, 64)
	return append(dst, byteUnits[u].unit...)
}

// FormatRate renders a bit rate, e.g. 1e11 -> "100Gbps".
func FormatRate(bps float64) string {
	switch {
	case bps >= 1e12:
		return fmt.Sprintf("%gTbps", bps/1e12)
	case bps >= 1e9:
		return fmt.Sprintf("%gGbps", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%gMbps", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%gKbps", bps/1e3)
	}
	return fmt.Sprintf("%gbps", bps)
}

// RefRateBps is the link rate at which ECN presets and scenario ECN settings
// are stated; settings scale linearly with port rate from it.
const RefRateBps = 100e9

// ScaleBytes scales a byte threshold stated at RefRateBps to a port of rateBps.
func ScaleBytes(b int64, rateBps float64) int64 {
	return int64(math.Round(float64(b) * rateBps / RefRateBps))
}

// Count is n and noun, the noun plural unless n is 1: "1 switch",
// "3 switches", "1 seed", "0 seeds" (-s, or -es after s, x, ch and sh).
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Plural(n, noun)
}

// Plural is noun as Count words it for n, without the number.
func Plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	for _, end := range []string{"s", "x", "ch", "sh"} {
		if strings.HasSuffix(noun, end) {
			return noun + "es"
		}
	}
	return noun + "s"
}
