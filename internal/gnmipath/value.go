package gnmipath

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// scalar extracts a JSON-encoded scalar as a Go value (json.Number, string,
// bool), or the TypedValue's own scalar.
func scalar(tv *gnmi.TypedValue) (any, error) {
	switch v := tv.GetValue().(type) {
	case nil:
		return nil, fmt.Errorf("value is empty")
	case *gnmi.TypedValue_UintVal:
		return v.UintVal, nil
	case *gnmi.TypedValue_IntVal:
		return v.IntVal, nil
	case *gnmi.TypedValue_StringVal:
		return v.StringVal, nil
	case *gnmi.TypedValue_AsciiVal:
		return v.AsciiVal, nil
	case *gnmi.TypedValue_BoolVal:
		return v.BoolVal, nil
	case *gnmi.TypedValue_DoubleVal:
		return v.DoubleVal, nil
	case *gnmi.TypedValue_FloatVal:
		return float64(v.FloatVal), nil
	case *gnmi.TypedValue_DecimalVal:
		d := v.DecimalVal
		return float64(d.GetDigits()) / math.Pow10(int(d.GetPrecision())), nil
	case *gnmi.TypedValue_JsonIetfVal, *gnmi.TypedValue_JsonVal:
		var raw []byte
		if j, ok := v.(*gnmi.TypedValue_JsonIetfVal); ok {
			raw = j.JsonIetfVal
		} else {
			raw = v.(*gnmi.TypedValue_JsonVal).JsonVal
		}
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			return nil, fmt.Errorf("value %q is not valid JSON", string(raw))
		}
		switch x.(type) {
		case map[string]any, []any:
			return nil, fmt.Errorf("value %q is a JSON container, want a scalar", string(raw))
		case nil:
			return nil, fmt.Errorf("value is JSON null")
		}
		return x, nil
	default:
		return nil, fmt.Errorf("value type %T is not supported here", v)
	}
}

// Uint decodes a non-negative integer: uint_val, a non-negative int_val, or
// a decimal string (plain or JSON). Anything else is an error naming it.
func Uint(tv *gnmi.TypedValue) (uint64, error) {
	x, err := scalar(tv)
	if err != nil {
		return 0, err
	}
	switch v := x.(type) {
	case uint64:
		return v, nil
	case int64:
		if v < 0 {
			return 0, fmt.Errorf("value %d is negative, want a count >= 0", v)
		}
		return uint64(v), nil
	case json.Number:
		return parseUint(string(v))
	case string:
		return parseUint(v)
	case float64:
		if v < 0 || v != math.Trunc(v) || v > math.MaxUint64/2 || math.IsNaN(v) {
			return 0, fmt.Errorf("value %g is not a non-negative integer", v)
		}
		return uint64(v), nil
	}
	return 0, fmt.Errorf("value %v (%T) is not a non-negative integer", x, x)
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
	x, err := scalar(tv)
	if err != nil {
		return 0, err
	}
	var f float64
	switch v := x.(type) {
	case uint64:
		f = float64(v)
	case int64:
		f = float64(v)
	case float64:
		f = v
	case json.Number:
		f, err = strconv.ParseFloat(string(v), 64)
	case string:
		f, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
	default:
		return 0, fmt.Errorf("value %v (%T) is not a number", x, x)
	}
	if err != nil {
		return 0, fmt.Errorf("value %v is not a number", x)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("value %v is not finite", x)
	}
	if f < 0 {
		return 0, fmt.Errorf("value %v is negative, want >= 0", x)
	}
	return f, nil
}

// Bool decodes a boolean (bool_val, JSON true/false, or "true"/"false").
func Bool(tv *gnmi.TypedValue) (bool, error) {
	x, err := scalar(tv)
	if err != nil {
		return false, err
	}
	switch v := x.(type) {
	case bool:
		return v, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, fmt.Errorf("value %v is not a boolean (want true or false)", x)
}

// String decodes a string leaf (string_val, ascii_val or a JSON string).
func String(tv *gnmi.TypedValue) (string, error) {
	x, err := scalar(tv)
	if err != nil {
		return "", err
	}
	if s, ok := x.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("value %v (%T) is not a string", x, x)
}

// Int decodes a signed integer (SONiC dynamic_th, e.g. "-2").
func Int(tv *gnmi.TypedValue) (int64, error) {
	x, err := scalar(tv)
	if err != nil {
		return 0, err
	}
	var s string
	switch v := x.(type) {
	case int64:
		return v, nil
	case uint64:
		if v > math.MaxInt64 {
			return 0, fmt.Errorf("value %d is too large", v)
		}
		return int64(v), nil
	case json.Number:
		s = string(v)
	case string:
		s = v
	default:
		return 0, fmt.Errorf("value %v (%T) is not an integer", x, x)
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
