package scenario

import (
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ecntune/ecntune/internal/units"
	"github.com/ecntune/ecntune/simenv"
)

// This file holds the lexical side of the ns-3 HPCC formats: a whitespace
// token stream that remembers line numbers (ns-3 reads its files with
// operator>>, so line breaks carry no meaning), and ns-3's spelling of data
// rates and times.

type token struct {
	s    string
	line int
}

type tokenStream struct {
	name string
	data []byte
	off  int // next byte to look at
	line int // line of data[off]
	// known: a token has been read as what was wanted, so the file is of
	// the kind expected and its tokens may be quoted in errors.
	known bool
}

// newTokenStream splits data lazily, a token at a time, so that a large
// file costs its bytes and what is parsed from it, not a token list.
func newTokenStream(data []byte, name string) *tokenStream {
	return &tokenStream{name: name, data: data, line: 1}
}

// next returns the next token; what names it for the error when the file
// ends early.
func (ts *tokenStream) next(what string) (token, error) {
	for ts.off < len(ts.data) {
		r, n := utf8.DecodeRune(ts.data[ts.off:])
		if !unicode.IsSpace(r) {
			break
		}
		if r == '\n' {
			ts.line++
		}
		ts.off += n
	}
	if ts.off >= len(ts.data) {
		return token{}, fmt.Errorf("%s: file ends at line %d where %s was expected", ts.name, ts.lastLine(), what)
	}
	start := ts.off
	for ts.off < len(ts.data) {
		r, n := utf8.DecodeRune(ts.data[ts.off:])
		if unicode.IsSpace(r) {
			break
		}
		ts.off += n
	}
	return token{string(ts.data[start:ts.off]), ts.line}, nil
}

// lastLine is the number of the file's last line (a final newline ends a
// line rather than starting one).
func (ts *tokenStream) lastLine() int {
	if len(ts.data) == 0 {
		return 0
	}
	if ts.data[len(ts.data)-1] == '\n' {
		return ts.line - 1
	}
	return ts.line
}

// int reads a non-negative integer no larger than max.
func (ts *tokenStream) int(what string, max int64) (int64, int, error) {
	t, err := ts.next(what)
	if err != nil {
		return 0, 0, err
	}
	v, err := strconv.ParseInt(t.s, 10, 64)
	if err != nil || v < 0 || v > max {
		if !ts.known {
			// Nothing of the file read as wanted yet: it may be any file
			// (/etc/shadow), whose content an error must not show.
			return 0, t.line, fmt.Errorf("%s: line %d: %s: not an integer in 0..%d (a word of %d B; the wrong file?)", ts.name, t.line, what, max, len(t.s))
		}
		return 0, t.line, fmt.Errorf("%s: line %d: %s %s is not an integer in 0..%d", ts.name, t.line, what, quote(t.s), max)
	}
	ts.known = true
	return v, t.line, nil
}

// ns3RateUnits maps ns-3 DataRate suffixes to bits per second: b is bits, B
// bytes; k/K/M/G are decimal, Ki/Mi/Gi binary; "ps" and "/s" are synonyms.
var ns3RateUnits = func() []struct {
	suffix string
	mult   float64
} {
	var out []struct {
		suffix string
		mult   float64
	}
	prefixes := map[string]float64{"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
		"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
	for p, pm := range prefixes {
		for _, b := range []struct {
			s string
			m float64
		}{{"bps", 1}, {"b/s", 1}, {"Bps", 8}, {"B/s", 8}} {
			out = append(out, struct {
				suffix string
				mult   float64
			}{p + b.s, pm * b.m})
		}
	}
	// Longest suffix first, so that "Gbps" wins over "bps".
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].suffix) != len(out[j].suffix) {
			return len(out[i].suffix) > len(out[j].suffix)
		}
		return out[i].suffix < out[j].suffix
	})
	return out
}()

// parseNS3Rate parses an ns-3 DataRate string such as "100Gbps", "20Mb/s"
// or "1000000000" (bits per second), returning bits per second.
func parseNS3Rate(s string) (float64, error) {
	num, mult := s, 1.0
	for _, u := range ns3RateUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !finite(v) {
		return 0, fmt.Errorf("cannot parse rate %s (want an ns-3 rate such as 100Gbps, 20Mb/s or 1000000000)", quote(s))
	}
	if v <= 0 {
		return 0, fmt.Errorf("rate %s must be positive", quote(s))
	}
	if r := v * mult; r < units.MinRateBps || r > units.MaxRateBps {
		return 0, fmt.Errorf("rate %s is outside %s..%s", quote(s), units.FormatRate(units.MinRateBps), units.FormatRate(units.MaxRateBps))
	}
	return v * mult, nil
}

// ns3TimeUnits are the units of an ns-3 Time string, in nanoseconds per unit
// (ps below the simulator's nanosecond resolution is a divisor).
var ns3TimeUnits = []struct {
	suffix string
	ns     int64 // multiplier when > 0
	div    int64 // divisor when > 0
}{
	{"min", 60e9, 0}, {"ms", 1e6, 0}, {"us", 1e3, 0}, {"ns", 1, 0}, {"ps", 0, 1e3}, {"fs", 0, 1e6},
	{"h", 3600e9, 0}, {"s", 1e9, 0},
}

// parseNS3Time parses an ns-3 Time string such as "1000ns", "0.001ms" or
// "2" (seconds) into simulated time.
func parseNS3Time(s string) (simenv.Time, error) {
	num := s
	mul, div := int64(1e9), int64(0)
	for _, u := range ns3TimeUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mul, div = strings.TrimSuffix(s, u.suffix), u.ns, u.div
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !finite(v) {
		return 0, fmt.Errorf("cannot parse time %s (want an ns-3 time such as 1000ns, 1us or 0.001ms)", quote(s))
	}
	if v < 0 {
		return 0, fmt.Errorf("time %s is negative", quote(s))
	}
	if v*float64(mul) > float64(maxTime)/float64(simenv.Nanosecond) {
		return 0, fmt.Errorf("time %s is too large", quote(s))
	}
	if div > 0 {
		return nsTime(v, 1, div), nil
	}
	return nsTime(v, mul, 1), nil
}

// nsTime converts v units (unit = mul/div ns) to simulated time the way
// ns-3 does at its nanosecond resolution: the double v is taken exactly,
// scaled, and truncated to whole nanoseconds. (Plain float64 arithmetic
// would round 2.000000643 s to 2000000643 ns; ns-3 gives 2000000642.)
func nsTime(v float64, mul, div int64) simenv.Time {
	f := new(big.Float).SetPrec(256).SetFloat64(v)
	f.Mul(f, new(big.Float).SetPrec(256).SetInt64(mul))
	if div != 1 {
		f.Quo(f, new(big.Float).SetPrec(256).SetInt64(div))
	}
	ns, _ := f.Int64()
	return simenv.Time(ns) * simenv.Nanosecond
}

// maxTime bounds parsed times well inside int64 picoseconds (about 53 days).
const maxTime = simenv.Time(1 << 62)

// secondsTime parses a decimal number of seconds into simulated time as
// ns-3's Seconds(double) does.
func secondsTime(s string) (simenv.Time, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !finite(v) || v < 0 {
		return 0, fmt.Errorf("%s is not a non-negative number of seconds", quote(s))
	}
	if v > float64(maxTime)/float64(simenv.Second) {
		return 0, fmt.Errorf("%s seconds is too large", quote(s))
	}
	return nsTime(v, 1e9, 1), nil
}

func parseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err == nil && !finite(v) {
		err = fmt.Errorf("%s is not finite", quote(s))
	}
	return v, err
}

// maxQuoted is how much of a value from a file an error message echoes.
const maxQuoted = 40

// quote renders a value read from a file for an error message: Go-quoted,
// so that control bytes and NULs of a binary file show as escapes, and cut
// to its first maxQuoted bytes (at a character boundary) with "..." after.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}
