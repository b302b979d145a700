package safeio

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// KeyError is a key of a YAML document that the Go type it decodes into
// does not have.
type KeyError struct {
	Line    int
	Path    string // the key's field path, e.g. guardrails.max-step
	Key     string
	Allowed []string // the keys allowed where it stands
	Suggest string   // the allowed key it most likely means ("": none close)
}

func (e *KeyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "line %d: %s: unknown key", e.Line, e.Path)
	if e.Suggest != "" {
		fmt.Fprintf(&b, " (did you mean %s?)", e.Suggest)
	}
	fmt.Fprintf(&b, "; allowed: %s", strings.Join(e.Allowed, ", "))
	return b.String()
}

// CheckKeys walks a decoded YAML document along the type of v (a struct
// or a pointer to one, with yaml tags; ",inline" structs, maps of string
// keys, slices, pointers and yaml.Node fields are followed) and returns
// one KeyError per unknown key, in line order, as KeyErrors. A key reached
// through several aliases of one anchor is reported once.
func CheckKeys(root *yaml.Node, v any) error {
	t := reflect.TypeOf(v)
	w := &keyWalker{seen: map[*yaml.Node]bool{}}
	n := root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	w.walk(n, t, "")
	if len(w.errs) == 0 {
		return nil
	}
	sort.SliceStable(w.errs, func(i, j int) bool { return w.errs[i].Line < w.errs[j].Line })
	return w.errs
}

// KeyErrors are every unknown key of a document.
type KeyErrors []*KeyError

func (e KeyErrors) Error() string {
	if len(e) == 1 {
		return e[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d unknown keys:", len(e))
	for _, k := range e {
		b.WriteString("\n  ")
		b.WriteString(k.Error())
	}
	return b.String()
}

// Unwrap gives the KeyErrors to errors.Is and errors.As.
func (e KeyErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, k := range e {
		out[i] = k
	}
	return out
}

type keyWalker struct {
	seen map[*yaml.Node]bool
	errs KeyErrors
}

func (w *keyWalker) walk(n *yaml.Node, t reflect.Type, path string) {
	if n == nil {
		return
	}
	for n.Kind == yaml.AliasNode {
		n = n.Alias
		if n == nil {
			return
		}
	}
	if w.seen[n] {
		return // an anchor's content is checked once, wherever it is used
	}
	w.seen[n] = true
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(yaml.Node{}) {
		return // decoded by hand later
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // the decoder reports the type
		}
		names, fields := keysOf(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Value == "<<" {
				w.walk(v, t, path) // a merge key brings its mapping's keys here
				continue
			}
			p := joinPath(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				w.errs = append(w.errs, &KeyError{Line: k.Line, Path: p, Key: k.Value, Allowed: names, Suggest: closest(k.Value, names)})
				continue
			}
			w.walk(v, ft, p)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.walk(n.Content[i+1], t.Elem(), joinPath(path, n.Content[i].Value))
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, e := range n.Content {
			w.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// keysOf lists the yaml keys of struct type t, inline structs included,
// in declaration order. The keys of an inline struct tagged
// keys:"unlisted" (accepted for compatibility, meaning nothing) are
// allowed but not listed.
func keysOf(t reflect.Type) ([]string, map[string]reflect.Type) {
	var names []string
	byName := map[string]reflect.Type{}
	var add func(t reflect.Type, listed bool)
	add = func(t reflect.Type, listed bool) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			parts := strings.Split(f.Tag.Get("yaml"), ",")
			if parts[0] == "-" {
				continue
			}
			if len(parts) > 1 && parts[1] == "inline" && f.Type.Kind() == reflect.Struct {
				add(f.Type, listed && f.Tag.Get("keys") != "unlisted")
				continue
			}
			name := parts[0]
			if name == "" {
				if !f.IsExported() {
					continue
				}
				name = strings.ToLower(f.Name)
			}
			if listed {
				names = append(names, name)
			}
			byName[name] = f.Type
		}
	}
	add(t, true)
	return names, byName
}

// closest is the allowed key within a small edit distance of key.
func closest(key string, allowed []string) string {
	best, bestD := "", max(2, len(key)/3)+1
	for _, a := range allowed {
		if d := editDistance(strings.ToLower(key), a); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (adjacent swaps count
// one) between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
