package gnmipath

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// sKind says which member of a scal holds the value.
type sKind uint8

const (
	sNone   sKind = iota
	sUint         // u
	sInt          // i
	sFloat        // f
	sBool         // b
	sString       // s, or raw: the bytes of a JSON string with nothing to unescape
	sNumber       // JSON number text in s or raw (what encoding/json's json.Number holds)
)

// scal is one scalar value as a TypedValue or a JSON text carries it.
// Strings and numbers that come from the JSON fast path stay as bytes in
// raw (no copy) until a caller needs a Go string.
type scal struct {
	k   sKind
	u   uint64
	i   int64
	f   float64
	b   bool
	s   string
	raw []byte
}

// str returns a string or number's text.
func (x *scal) str() string {
	if x.raw != nil {
		return string(x.raw)
	}
	return x.s
}

// any returns the value as encoding/json (with UseNumber) or the
// TypedValue would give it, for error messages.
func (x *scal) any() any {
	switch x.k {
	case sUint:
		return x.u
	case sInt:
		return x.i
	case sFloat:
		return x.f
	case sBool:
		return x.b
	case sString:
		return x.str()
	case sNumber:
		return json.Number(x.str())
	}
	return nil
}

// scalarOf reads the scalar a TypedValue carries into x. JSON and
// JSON_IETF texts that are a single plain token (a number, a string with
// no escapes and only printable ASCII, true, false) are read directly;
// anything else goes through encoding/json, so that both give the same
// value or error.
func scalarOf(tv *gnmi.TypedValue, x *scal) error {
	*x = scal{}
	switch v := tv.GetValue().(type) {
	case nil:
		return fmt.Errorf("value is empty")
	case *gnmi.TypedValue_UintVal:
		x.k, x.u = sUint, v.UintVal
	case *gnmi.TypedValue_IntVal:
		x.k, x.i = sInt, v.IntVal
	case *gnmi.TypedValue_StringVal:
		x.k, x.s = sString, v.StringVal
	case *gnmi.TypedValue_AsciiVal:
		x.k, x.s = sString, v.AsciiVal
	case *gnmi.TypedValue_BoolVal:
		x.k, x.b = sBool, v.BoolVal
	case *gnmi.TypedValue_DoubleVal:
		x.k, x.f = sFloat, v.DoubleVal
	case *gnmi.TypedValue_FloatVal:
		x.k, x.f = sFloat, float64(v.FloatVal)
	case *gnmi.TypedValue_DecimalVal:
		d := v.DecimalVal
		x.k, x.f = sFloat, float64(d.GetDigits())/math.Pow10(int(d.GetPrecision()))
	case *gnmi.TypedValue_JsonIetfVal:
		return jsonScalar(v.JsonIetfVal, x)
	case *gnmi.TypedValue_JsonVal:
		return jsonScalar(v.JsonVal, x)
	default:
		return fmt.Errorf("value type %T is not supported here", v)
	}
	return nil
}

func jsonScalar(raw []byte, x *scal) error {
	if fastJSON(raw, x) {
		return nil
	}
	return slowJSON(raw, x)
}

// slowJSON decodes a JSON scalar with encoding/json (numbers as
// json.Number). Containers and null are errors.
func slowJSON(raw []byte, x *scal) error {
	*x = scal{}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("value %q is not valid JSON", string(raw))
	}
	switch t := v.(type) {
	case map[string]any, []any:
		return fmt.Errorf("value %q is a JSON container, want a scalar", string(raw))
	case nil:
		return fmt.Errorf("value is JSON null")
	case json.Number:
		x.k, x.s = sNumber, string(t)
	case string:
		x.k, x.s = sString, t
	case bool:
		x.k, x.b = sBool, t
	default: // not produced by a decoder with UseNumber
		return fmt.Errorf("value %q is not a JSON scalar", string(raw))
	}
	return nil
}

// isJSONSpace is the white space JSON allows between tokens.
func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// fastJSON recognises a JSON text that is exactly one plain scalar token
// (with optional surrounding white space) and reads it into x without
// copying: a number as RFC 8259 writes it, a string of printable ASCII
// without escapes, true or false. It reports false for anything else
// (null, containers, escapes, non-ASCII text, trailing data, invalid
// JSON), which the caller hands to encoding/json.
func fastJSON(raw []byte, x *scal) bool {
	i, j := 0, len(raw)
	for i < j && isJSONSpace(raw[i]) {
		i++
	}
	for j > i && isJSONSpace(raw[j-1]) {
		j--
	}
	t := raw[i:j]
	if len(t) == 0 {
		return false
	}
	switch c := t[0]; {
	case c == '"':
		if len(t) < 2 || t[len(t)-1] != '"' {
			return false
		}
		body := t[1 : len(t)-1]
		for _, c := range body {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				return false
			}
		}
		*x = scal{k: sString, raw: body}
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		if !jsonNumber(t) {
			return false
		}
		*x = scal{k: sNumber, raw: t}
		return true
	case string(t) == "true":
		*x = scal{k: sBool, b: true}
		return true
	case string(t) == "false":
		*x = scal{k: sBool}
		return true
	}
	return false
}

// jsonNumber reports whether t is exactly a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(t []byte) bool {
	i := 0
	if i < len(t) && t[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(t) && t[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(t) && t[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(t)
}

// trimASCIISpace trims the white space strings.TrimSpace trims from text
// that is printable ASCII (as fastJSON's strings and numbers are): spaces.
func trimASCIISpace(b []byte) []byte {
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// decimalUint parses base-10 digits as strconv.ParseUint(s, 10, 64) does.
func decimalUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	return u, true
}

// Uint decodes a non-negative integer: uint_val, a non-negative int_val, or
// a decimal string (plain or JSON). Anything else is an error naming it.
func Uint(tv *gnmi.TypedValue) (uint64, error) {
	var x scal
	if err := scalarOf(tv, &x); err != nil {
		return 0, err
	}
	return uintOf(&x)
}

func uintOf(x *scal) (uint64, error) {
	switch x.k {
	case sUint:
		return x.u, nil
	case sInt:
		if x.i < 0 {
			return 0, fmt.Errorf("value %d is negative, want a count >= 0", x.i)
		}
		return uint64(x.i), nil
	case sNumber, sString:
		if x.raw == nil {
			return parseUint(x.s)
		}
		t := trimASCIISpace(x.raw)
		if len(t) > 0 && t[0] == '-' {
			return 0, fmt.Errorf("value %q is negative, want an integer >= 0", x.str())
		}
		if u, ok := decimalUint(t); ok {
			return u, nil
		}
		return 0, fmt.Errorf("value %q is not a non-negative integer", x.str())
	case sFloat:
		v := x.f
		if v < 0 || v != math.Trunc(v) || v > math.MaxUint64/2 || math.IsNaN(v) {
			return 0, fmt.Errorf("value %g is not a non-negative integer", v)
		}
		return uint64(v), nil
	}
	return 0, fmt.Errorf("value %v (%T) is not a non-negative integer", x.any(), x.any())
}

func parseUint(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("value %q is negative, want an integer >= 0", s)
	}
	u, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is not a non-negative integer", s)
	}
	return u, nil
}

// Float decodes a finite non-negative number from any numeric or string form.
func Float(tv *gnmi.TypedValue) (float64, error) {
	var x scal
	if err := scalarOf(tv, &x); err != nil {
		return 0, err
	}
	return floatOf(&x)
}

func floatOf(x *scal) (float64, error) {
	var f float64
	var err error
	switch x.k {
	case sUint:
		f = float64(x.u)
	case sInt:
		f = float64(x.i)
	case sFloat:
		f = x.f
	case sNumber:
		if x.raw != nil {
			f, err = strconv.ParseFloat(string(x.raw), 64)
		} else {
			f, err = strconv.ParseFloat(x.s, 64)
		}
	case sString:
		if x.raw != nil {
			f, err = strconv.ParseFloat(string(trimASCIISpace(x.raw)), 64)
		} else {
			f, err = strconv.ParseFloat(strings.TrimSpace(x.s), 64)
		}
	default:
		return 0, fmt.Errorf("value %v (%T) is not a number", x.any(), x.any())
	}
	if err != nil {
		return 0, fmt.Errorf("value %v is not a number", x.any())
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("value %v is not finite", x.any())
	}
	if f < 0 {
		return 0, fmt.Errorf("value %v is negative, want >= 0", x.any())
	}
	return f, nil
}

// Bool decodes a boolean (bool_val, JSON true/false, or "true"/"false").
func Bool(tv *gnmi.TypedValue) (bool, error) {
	var x scal
	if err := scalarOf(tv, &x); err != nil {
		return false, err
	}
	return boolOf(&x)
}

func boolOf(x *scal) (bool, error) {
	switch x.k {
	case sBool:
		return x.b, nil
	case sString:
		if x.raw != nil {
			// printable ASCII: ASCII case folding is what strings.ToLower does
			t := trimASCIISpace(x.raw)
			if asciiFold(t, "true") {
				return true, nil
			}
			if asciiFold(t, "false") {
				return false, nil
			}
			break
		}
		switch strings.ToLower(strings.TrimSpace(x.s)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, fmt.Errorf("value %v is not a boolean (want true or false)", x.any())
}

// asciiFold compares ASCII text with a lower-case word, ignoring case.
func asciiFold(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[i] {
			return false
		}
	}
	return true
}

// String decodes a string leaf (string_val, ascii_val or a JSON string).
func String(tv *gnmi.TypedValue) (string, error) {
	var x scal
	if err := scalarOf(tv, &x); err != nil {
		return "", err
	}
	return stringOf(&x)
}

func stringOf(x *scal) (string, error) {
	if x.k == sString {
		return x.str(), nil
	}
	return "", fmt.Errorf("value %v (%T) is not a string", x.any(), x.any())
}

// Int decodes a signed integer (SONiC dynamic_th, e.g. "-2").
func Int(tv *gnmi.TypedValue) (int64, error) {
	var x scal
	if err := scalarOf(tv, &x); err != nil {
		return 0, err
	}
	return intOf(&x)
}

func intOf(x *scal) (int64, error) {
	var s string
	switch x.k {
	case sInt:
		return x.i, nil
	case sUint:
		if x.u > math.MaxInt64 {
			return 0, fmt.Errorf("value %d is too large", x.u)
		}
		return int64(x.u), nil
	case sNumber, sString:
		s = x.str()
	default:
		return 0, fmt.Errorf("value %v (%T) is not an integer", x.any(), x.any())
	}
	i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is not an integer", s)
	}
	return i, nil
}

func uintVal(u uint64) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: u}}
}
func strVal(s string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: s}}
}
func boolVal(b bool) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: b}}
}

// ToEncoding converts a scalar TypedValue into the encoding a client asked
// for. JSON_IETF renders 64-bit integers as strings (RFC 7951); JSON renders
// them as numbers. PROTO (and anything else) keeps the scalar as is.
func ToEncoding(tv *gnmi.TypedValue, enc gnmi.Encoding) *gnmi.TypedValue {
	if enc != gnmi.Encoding_JSON && enc != gnmi.Encoding_JSON_IETF {
		return tv
	}
	var b []byte
	switch v := tv.GetValue().(type) {
	case *gnmi.TypedValue_UintVal:
		if enc == gnmi.Encoding_JSON_IETF {
			b = []byte(`"` + strconv.FormatUint(v.UintVal, 10) + `"`)
		} else {
			b = []byte(strconv.FormatUint(v.UintVal, 10))
		}
	case *gnmi.TypedValue_IntVal:
		if enc == gnmi.Encoding_JSON_IETF {
			b = []byte(`"` + strconv.FormatInt(v.IntVal, 10) + `"`)
		} else {
			b = []byte(strconv.FormatInt(v.IntVal, 10))
		}
	case *gnmi.TypedValue_StringVal:
		b, _ = json.Marshal(v.StringVal)
	case *gnmi.TypedValue_BoolVal:
		b = []byte(strconv.FormatBool(v.BoolVal))
	case *gnmi.TypedValue_DoubleVal:
		b = []byte(strconv.FormatFloat(v.DoubleVal, 'g', -1, 64))
	default:
		return tv
	}
	if enc == gnmi.Encoding_JSON_IETF {
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: b}}
	}
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: b}}
}

// smallUint encodes an unsigned integer of at most 32 bits (a uint8
// percentage): RFC 7951 writes those as JSON numbers, in JSON_IETF too.
func smallUint(tv *gnmi.TypedValue, enc gnmi.Encoding) *gnmi.TypedValue {
	v, ok := tv.GetValue().(*gnmi.TypedValue_UintVal)
	if !ok || (enc != gnmi.Encoding_JSON && enc != gnmi.Encoding_JSON_IETF) {
		return ToEncoding(tv, enc)
	}
	b := []byte(strconv.FormatUint(v.UintVal, 10))
	if enc == gnmi.Encoding_JSON_IETF {
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: b}}
	}
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: b}}
}
