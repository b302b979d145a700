package gnmipath

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// elem builds a path element with optional key/value pairs.
func elem(name string, kv ...string) *gnmi.PathElem {
	e := &gnmi.PathElem{Name: name}
	if len(kv) > 0 {
		e.Key = make(map[string]string, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			e.Key[kv[i]] = kv[i+1]
		}
	}
	return e
}

// names builds key-less elements from a slash-free list of names.
func names(ns ...string) []*gnmi.PathElem {
	out := make([]*gnmi.PathElem, len(ns))
	for i, n := range ns {
		out[i] = &gnmi.PathElem{Name: n}
	}
	return out
}

// join concatenates element lists into a new slice.
func join(parts ...[]*gnmi.PathElem) []*gnmi.PathElem {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]*gnmi.PathElem, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// FullElems returns the elements of prefix followed by those of p.
func FullElems(prefix, p *gnmi.Path) []*gnmi.PathElem {
	return join(prefix.GetElem(), p.GetElem())
}

// PathString renders elements as /a/b[k=v]/c with keys in sorted order.
func PathString(elems []*gnmi.PathElem) string {
	var b strings.Builder
	for _, e := range elems {
		b.WriteByte('/')
		b.WriteString(e.GetName())
		if len(e.GetKey()) > 0 {
			ks := make([]string, 0, len(e.GetKey()))
			for k := range e.GetKey() {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			for _, k := range ks {
				fmt.Fprintf(&b, "[%s=%s]", k, e.GetKey()[k])
			}
		}
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// Describe renders a path with its target and origin, for error messages.
func Describe(prefix, p *gnmi.Path) string {
	s := OriginPath(prefix, p)
	if t := prefix.GetTarget(); t != "" {
		s = t + " " + s
	}
	return s
}

// OriginPath is p under prefix as origin:/path (the path alone when
// neither has an origin), as gnmic writes paths.
func OriginPath(prefix, p *gnmi.Path) string {
	s := PathString(FullElems(prefix, p))
	o := p.GetOrigin()
	if o == "" {
		o = prefix.GetOrigin()
	}
	if o != "" {
		s = o + ":" + s
	}
	return s
}

// ParsePath parses a path string such as
// /qos/interfaces/interface[interface-id=Ethernet0]/output into elements.
// A leading "origin:" is returned separately.
func ParsePath(s string) (origin string, elems []*gnmi.PathElem, err error) {
	t := strings.TrimSpace(s)
	if i := strings.Index(t, ":"); i > 0 && !strings.ContainsAny(t[:i], "/[") {
		origin, t = t[:i], t[i+1:]
	}
	t = strings.TrimPrefix(t, "/")
	for len(t) > 0 {
		// element name up to '/' or '['
		i := strings.IndexAny(t, "/[")
		var name string
		if i < 0 {
			name, t = t, ""
		} else {
			name, t = t[:i], t[i:]
		}
		if name == "" {
			return "", nil, fmt.Errorf("path %q: empty element name", s)
		}
		e := &gnmi.PathElem{Name: name}
		for strings.HasPrefix(t, "[") {
			j := strings.Index(t, "]")
			if j < 0 {
				return "", nil, fmt.Errorf("path %q: unterminated key in element %q", s, name)
			}
			kv := t[1:j]
			eq := strings.Index(kv, "=")
			if eq <= 0 {
				return "", nil, fmt.Errorf("path %q: key %q of element %q is not name=value", s, kv, name)
			}
			if e.Key == nil {
				e.Key = map[string]string{}
			}
			e.Key[kv[:eq]] = kv[eq+1:]
			t = t[j+1:]
		}
		elems = append(elems, e)
		if strings.HasPrefix(t, "/") {
			t = t[1:]
		} else if t != "" {
			return "", nil, fmt.Errorf("path %q: unexpected %q after element %q", s, t, name)
		}
	}
	return origin, elems, nil
}

// MustPath is ParsePath for literals known to be valid.
func mustPath(s string) *gnmi.Path {
	o, el, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return &gnmi.Path{Origin: o, Elem: el}
}

// Match reports whether the pattern elements select the leaf elements: the
// pattern is a prefix of the leaf, element names are equal or match as a
// glob ("*", "Ethernet*"), "..." matches any number of elements, and every
// key of the pattern equals the leaf's key or is "*". It takes time
// proportional to len(pattern) * len(leaf) at most, however many "..."
// the pattern has (patterns come from clients).
func Match(pattern, leaf []*gnmi.PathElem) bool {
	for i, p := range pattern {
		if p.GetName() == "..." {
			return matchWild(pattern[i:], leaf[i:])
		}
		if i >= len(leaf) || !elemMatch(p, leaf[i]) {
			return false
		}
	}
	return true
}

// matchWild is Match for a pattern with "..." elements, by dynamic
// programming over the leaf positions each pattern prefix can reach.
func matchWild(pattern, leaf []*gnmi.PathElem) bool {
	reach := make([]bool, len(leaf)+1) // reach[j]: the pattern so far consumes leaf[:j]
	reach[0] = true
	for _, p := range pattern {
		if p.GetName() == "..." {
			for j := 1; j <= len(leaf); j++ {
				reach[j] = reach[j] || reach[j-1]
			}
			continue
		}
		any := false
		for j := len(leaf); j >= 1; j-- {
			reach[j] = reach[j-1] && elemMatch(p, leaf[j-1])
			any = any || reach[j]
		}
		reach[0] = false
		if !any {
			return false
		}
	}
	for _, r := range reach {
		if r {
			return true
		}
	}
	return false
}

// elemMatch reports whether pattern element p selects leaf element l.
func elemMatch(p, l *gnmi.PathElem) bool {
	if p.GetName() != l.GetName() {
		if ok, _ := path.Match(p.GetName(), l.GetName()); !ok {
			return false
		}
	}
	for k, v := range p.GetKey() {
		if v == "*" {
			continue
		}
		lv, ok := l.GetKey()[k]
		if !ok || lv != v {
			return false
		}
	}
	return true
}

// stripModule removes a YANG module prefix ("openconfig-qos:config").
func stripModule(n string) string {
	i := strings.IndexByte(n, ':')
	if i <= 0 || i == len(n)-1 {
		return n
	}
	// A module name is a YANG identifier, and so is what follows: a
	// letter or "_" first. "Ethernet0:3" or "etp1:0:periodic" (SONiC
	// queue keys) are names, not module-qualified.
	if c := n[i+1]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return n
	}
	if c := n[0]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return n
	}
	return n[i+1:]
}

// flatLeaf is one scalar leaf of a JSON value, relative to where the value
// was set.
type flatLeaf struct {
	rel []*gnmi.PathElem
	val *gnmi.TypedValue
}

// jsonBytes returns the JSON text of a JSON or JSON_IETF value, and which
// of the two it is; ok is false for any other type.
func jsonBytes(tv *gnmi.TypedValue) (raw []byte, ietf, ok bool) {
	switch v := tv.GetValue().(type) {
	case *gnmi.TypedValue_JsonIetfVal:
		return v.JsonIetfVal, true, true
	case *gnmi.TypedValue_JsonVal:
		return v.JsonVal, false, true
	}
	return nil, false, false
}

// encodeJSON encodes v as a JSON (or, with ietf, JSON_IETF) value.
func encodeJSON(v any, ietf bool) *gnmi.TypedValue {
	b, _ := json.Marshal(v)
	if ietf {
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: b}}
	}
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: b}}
}

// flatten expands a JSON / JSON_IETF container value into scalar leaves. A
// scalar value gives one leaf with an empty relative path. Lists are refused:
// entries must be addressed by key in the path.
func flatten(tv *gnmi.TypedValue) ([]flatLeaf, error) {
	raw, ietf, ok := jsonBytes(tv)
	if !ok {
		return []flatLeaf{{val: tv}}, nil
	}
	// A plain scalar token decodes the same whether or not it is first
	// re-encoded as below, so it goes through as it is.
	var sc scal
	if fastJSON(raw, &sc) {
		return []flatLeaf{{val: tv}}, nil
	}
	var x any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("value is not valid JSON: %v", err)
	}
	var out []flatLeaf
	var walk func(rel []*gnmi.PathElem, x any) error
	walk = func(rel []*gnmi.PathElem, x any) error {
		switch v := x.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if err := walk(append(append([]*gnmi.PathElem(nil), rel...), &gnmi.PathElem{Name: stripModule(k)}), v[k]); err != nil {
					return err
				}
			}
			return nil
		case []any:
			// RFC 7951 §5.4: a list is an array of entries whose key
			// leaves sit inside each entry; the entry becomes a keyed
			// element of the path.
			if len(rel) == 0 {
				return fmt.Errorf("a JSON array at the top of a value names no list (address list entries by key in the path)")
			}
			list := rel[len(rel)-1].GetName()
			for i, e := range v {
				obj, ok := e.(map[string]any)
				if !ok {
					return fmt.Errorf("list %s entry %d is not an object (leaf-lists are not read)", PathString(rel), i)
				}
				kn, kv, ok := listKey(list, obj)
				if !ok {
					return fmt.Errorf("list %s entry %d: no key leaf (want one of %s)", PathString(rel), i, strings.Join(listKeyNames(list), ", "))
				}
				el := append(append([]*gnmi.PathElem(nil), rel[:len(rel)-1]...), &gnmi.PathElem{Name: list, Key: map[string]string{kn: kv}})
				if err := walk(el, obj); err != nil {
					return err
				}
			}
			return nil
		default:
			out = append(out, flatLeaf{rel: rel, val: encodeJSON(v, ietf)})
			return nil
		}
	}
	if err := walk(nil, x); err != nil {
		return nil, err
	}
	return out, nil
}

// listKeyNames are the key leaves of the YANG lists ecntune reads, by list
// name (the same list name is keyed differently in openconfig-qos and
// openconfig-interfaces, so both are tried in order).
func listKeyNames(list string) []string {
	switch list {
	case "interface":
		return []string{"interface-id", "name"}
	case "priority", "pfc-priority":
		return []string{"index"}
	}
	return []string{"name", "index", "id"}
}

// listKey finds the key of one RFC 7951 list entry: a scalar key leaf
// directly inside it (with or without a module prefix).
func listKey(list string, obj map[string]any) (name, val string, ok bool) {
	for _, kn := range listKeyNames(list) {
		for k, v := range obj {
			if stripModule(k) != kn {
				continue
			}
			switch x := v.(type) {
			case string:
				return kn, x, true
			case json.Number:
				return kn, x.String(), true
			}
		}
	}
	return "", "", false
}

// stripIdentity removes the module prefix of an identity value
// ("openconfig-if-ethernet:SPEED_100GB"): everything up to the last ":".
func stripIdentity(v string) string {
	if i := strings.LastIndex(v, ":"); i >= 0 {
		return v[i+1:]
	}
	return v
}
