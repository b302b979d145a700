package safeio

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ecntune/ecntune/internal/units"
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

// CheckKeys is CheckYAML's unknown keys alone: nil, or every unknown key
// of the document as KeyErrors, in line order.
func CheckKeys(root *yaml.Node, v any) error {
	if k := CheckYAML(root, v, CheckOptions{}).Unknown(); len(k) > 0 {
		return k
	}
	return nil
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

// FieldError is a problem of a YAML document at a field other than an
// unknown key: a value of the wrong type, a key given twice, a key that is
// not a plain name.
type FieldError struct {
	Line int    // 0: not known
	Path string // the field path, e.g. workloads[1].load ("": the document)
	Msg  string // e.g. want a number, got "half"
}

func (e *FieldError) Error() string {
	msg := e.Msg
	if e.Path != "" {
		msg = e.Path + ": " + msg
	}
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, msg)
	}
	return msg
}

// FieldErrors are every FieldError of a document.
type FieldErrors []*FieldError

func (e FieldErrors) Error() string {
	if len(e) == 1 {
		return e[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d errors:", len(e))
	for _, f := range e {
		b.WriteString("\n  ")
		b.WriteString(f.Error())
	}
	return b.String()
}

// Unwrap gives the FieldErrors to errors.Is and errors.As.
func (e FieldErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, f := range e {
		out[i] = f
	}
	return out
}

// CheckOptions tune CheckYAML.
type CheckOptions struct {
	// Strict holds scalars to their exact YAML type: an integer field
	// takes an !!int in range, a float field an !!int or a finite !!float,
	// a bool field only true or false. Without it a scalar passes where
	// yaml.v3 would decode it into the field (1.5 into an int, yes into a
	// bool).
	Strict bool
	// NoMerge takes "<<" as an ordinary key, not as a merge of mappings.
	NoMerge bool
	// Integer names an integer in "want ..." messages ("": "an integer",
	// or "a non-negative integer" for an unsigned field).
	Integer string
}

// YAMLCheck is what CheckYAML found in a document: its problems, and
// where each field path stands.
type YAMLCheck struct {
	// Problems are every *KeyError and *FieldError, in the order of the
	// document (merged mappings after the keys of their mapping).
	Problems []error
	root     *yaml.Node
	noMerge  bool
}

// CheckYAML walks a parsed YAML document (a document node or its content)
// along the Go type of v, which it is to be decoded into: a struct or a
// pointer to one, with yaml tags; ",inline" structs, maps, slices and
// pointers are followed, yaml.Node and interface fields take anything, and
// "<<" merges mappings as yaml.v3 does (keys given beside it win). It
// reports unknown keys (*KeyError), values of the wrong type, keys given
// twice and keys that are not plain names (*FieldError), each with its
// field path and line. A node reached through several aliases is checked
// once per Go type, at the first path that reaches it, so the walk costs
// the size of the text, not of its expansion.
func CheckYAML(root *yaml.Node, v any, opts CheckOptions) *YAMLCheck {
	if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	w := &walker{opts: opts, seen: map[seenKey]bool{}, structs: map[reflect.Type]*structKeys{},
		out: &YAMLCheck{root: root, noMerge: opts.NoMerge}}
	w.walk(root, reflect.TypeOf(v), "")
	return w.out
}

// Unknown are the unknown keys, in line order.
func (c *YAMLCheck) Unknown() KeyErrors {
	var out KeyErrors
	for _, p := range c.Problems {
		if k, ok := p.(*KeyError); ok {
			out = append(out, k)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// Invalid are the problems other than unknown keys, in document order.
func (c *YAMLCheck) Invalid() FieldErrors {
	var out FieldErrors
	for _, p := range c.Problems {
		if f, ok := p.(*FieldError); ok {
			out = append(out, f)
		}
	}
	return out
}

// Err is nil for a document without problems, else its unknown keys
// (KeyErrors) when it has any, else its other problems (FieldErrors).
func (c *YAMLCheck) Err() error {
	if k := c.Unknown(); len(k) > 0 {
		return k
	}
	if f := c.Invalid(); len(f) > 0 {
		return f
	}
	return nil
}

// Line is the line of the key or list item that gives path (e.g.
// targets.leaf0.queues[1]) in the document, and whether it gives it.
// Paths go through aliases (to the anchored node's lines) and merges (a
// key given beside a merge first, as in decoding).
func (c *YAMLCheck) Line(path string) (int, bool) {
	if path == "" {
		return 0, false
	}
	_, l, ok := c.find(c.root, path)
	return l, ok
}

// Node is the node path names in the document, aliases followed (nil:
// none): two paths reaching one anchored node through aliases give the
// same node.
func (c *YAMLCheck) Node(path string) *yaml.Node {
	if path == "" {
		return nil
	}
	n, _, ok := c.find(c.root, path)
	if !ok {
		return nil
	}
	return resolve(n)
}

// NearestLine is the line of path, or of its nearest parent in the
// document (0: none).
func (c *YAMLCheck) NearestLine(path string) int {
	for path != "" {
		if l, ok := c.Line(path); ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

// Keys are the keys the document gives in the mapping at path ("": the
// document's), each once, in the order of the document (merged keys
// last).
func (c *YAMLCheck) Keys(path string) []string {
	n := c.root
	if path != "" {
		var ok bool
		if n, _, ok = c.find(c.root, path); !ok {
			return nil
		}
	}
	var keys []string
	c.each(n, func(k, _ *yaml.Node) bool { keys = append(keys, k.Value); return false })
	return keys
}

// find looks path up under n: the node it names, and the line of the key
// or list item that gives it.
func (c *YAMLCheck) find(n *yaml.Node, path string) (*yaml.Node, int, bool) {
	n = resolve(n)
	if n == nil {
		return nil, 0, false
	}
	if path[0] == '[' {
		j := strings.IndexByte(path, ']')
		if j < 0 || n.Kind != yaml.SequenceNode {
			return nil, 0, false
		}
		i, err := strconv.Atoi(path[1:j])
		if err != nil || i < 0 || i >= len(n.Content) {
			return nil, 0, false
		}
		return c.next(n.Content[i], n.Content[i].Line, path[j+1:])
	}
	var node *yaml.Node
	var line int
	var found bool
	c.each(n, func(k, v *yaml.Node) bool {
		// A key may hold a dot: every key that starts the path is tried.
		if rest, ok := strings.CutPrefix(path, k.Value); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			node, line, found = c.next(v, k.Line, rest)
		}
		return found
	})
	return node, line, found
}

// next goes on from node v, given on line, to the rest of a path.
func (c *YAMLCheck) next(v *yaml.Node, line int, rest string) (*yaml.Node, int, bool) {
	if rest = strings.TrimPrefix(rest, "."); rest == "" {
		return v, line, true
	}
	return c.find(v, rest)
}

// each calls f on the keys of mapping n and their values, each key once
// and as decoding sees it: the mapping's own, then those of the mappings
// merged into it; it stops when f returns true.
func (c *YAMLCheck) each(n *yaml.Node, f func(k, v *yaml.Node) bool) {
	done := map[string]bool{}
	visited := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node) bool
	merged := func(v *yaml.Node) bool {
		if v = resolve(v); v != nil && v.Kind == yaml.SequenceNode {
			return slices.ContainsFunc(v.Content, walk) // a list of mappings
		}
		return walk(v)
	}
	walk = func(n *yaml.Node) bool {
		if n = resolve(n); n == nil || n.Kind != yaml.MappingNode || visited[n] {
			return false
		}
		visited[n] = true
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			switch {
			case k == nil || k.Kind != yaml.ScalarNode || done[k.Value]:
			case !c.noMerge && isMerge(k):
				merges = append(merges, n.Content[i+1])
			default:
				done[k.Value] = true
				if f(k, n.Content[i+1]) {
					return true
				}
			}
		}
		return slices.ContainsFunc(merges, merged)
	}
	walk(n)
}

type walker struct {
	opts    CheckOptions
	out     *YAMLCheck
	seen    map[seenKey]bool
	structs map[reflect.Type]*structKeys
}

// seenKey is a node checked as a Go type.
type seenKey struct {
	n *yaml.Node
	t reflect.Type
}

// structKeys are the keys of a struct type: names as allowed (listed),
// fields by name with their types.
type structKeys struct {
	names  []string
	fields map[string]reflect.Type
}

var nodeType = reflect.TypeOf(yaml.Node{})

// walk checks n, the value at path, as a value of type t, unless it has
// been checked as t already.
func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	n, t = resolve(n), target(t)
	if !w.fresh(n, t) {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		if t.Kind() != reflect.Struct && t.Kind() != reflect.Map {
			w.problem(n.Line, path, w.wrong(n, t))
			return
		}
		w.mapping(n, t, path, nil)
	case yaml.SequenceNode:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			w.problem(n.Line, path, w.wrong(n, t))
			return
		}
		for i, e := range n.Content {
			w.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case yaml.ScalarNode:
		if path == "" && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map) && !isNull(n) {
			// The whole document is one value: not quoted, for the file
			// may be any file.
			w.problem(n.Line, path, fmt.Sprintf("not a mapping of keys: the document is a single value of %d bytes (the wrong file?)", len(n.Value)))
			return
		}
		if msg := w.scalarMsg(n, t); msg != "" {
			w.problem(n.Line, path, msg)
		}
	}
}

// fresh reports whether n is to be checked as t (nil: anything, nothing
// to check), and marks it checked.
func (w *walker) fresh(n *yaml.Node, t reflect.Type) bool {
	k := seenKey{n, t}
	if n == nil || t == nil || w.seen[k] {
		return false
	}
	w.seen[k] = true
	return true
}

// resolve follows aliases to the node they stand for (nil: none).
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// target is the type a value of type t is decoded as: pointers followed,
// nil for yaml.Node and interfaces, which take anything.
func target(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == nodeType || t.Kind() == reflect.Interface {
		return nil
	}
	return t
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// isMerge tells a merge key, as yaml.v3 does.
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}

func (w *walker) problem(line int, path, msg string) {
	w.out.Problems = append(w.out.Problems, &FieldError{Line: line, Path: path, Msg: msg})
}

// wrong says that n is not a value of type t.
func (w *walker) wrong(n *yaml.Node, t reflect.Type) string {
	return "want " + w.want(t) + ", got " + describe(n)
}

// want says in words what a value of type t is.
func (w *walker) want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a mapping of keys"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if w.opts.Integer != "" {
			return w.opts.Integer
		}
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if w.opts.Integer != "" {
			return w.opts.Integer
		}
		return "a non-negative integer"
	}
	return "a single value"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// scalarMsg is what is wrong with scalar n as a value of type t ("":
// nothing; a null is anything's zero value).
func (w *walker) scalarMsg(n *yaml.Node, t reflect.Type) string {
	if isNull(n) {
		return ""
	}
	if !w.opts.Strict {
		var te *yaml.TypeError
		if err := n.Decode(reflect.New(t).Interface()); errors.As(err, &te) {
			return w.wrong(n, t)
		}
		return "" // other errors are the decoder's to report
	}
	tag := n.ShortTag()
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
		return w.wrong(n, t)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if tag != "!!int" {
			return w.wrong(n, t)
		}
		if _, err := strconv.ParseInt(n.Value, 0, t.Bits()); err != nil {
			return fmt.Sprintf("%q is not an integer in range", n.Value)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if tag != "!!int" {
			return w.wrong(n, t)
		}
		if _, err := strconv.ParseUint(n.Value, 0, t.Bits()); err != nil {
			return fmt.Sprintf("%q is not a non-negative integer", n.Value)
		}
	case reflect.Float32, reflect.Float64:
		if tag != "!!int" && tag != "!!float" {
			return w.wrong(n, t)
		}
		if v, err := strconv.ParseFloat(n.Value, t.Bits()); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprintf("%q is not a finite number", n.Value)
		}
	case reflect.Bool:
		if n.Value != "true" && n.Value != "false" {
			return w.wrong(n, t)
		}
	}
	return ""
}

// mapping checks the keys and values of mapping n at path, as type t (a
// struct or a map). taken, when n is merged into another mapping, holds
// the keys set already, which n's do not override.
func (w *walker) mapping(n *yaml.Node, t reflect.Type, path string, taken map[string]bool) {
	m := &mapWalk{w: w, t: t, path: path, first: map[string]int{}, taken: taken}
	if t.Kind() == reflect.Struct {
		m.keys = w.keysOf(t)
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !w.opts.NoMerge && isMerge(k) {
			merges = append(merges, v)
			continue
		}
		m.entry(resolve(k), v)
	}
	if len(merges) > 0 && taken == nil {
		taken = map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			taken[n.Content[i].Value] = true
		}
	}
	for _, v := range merges {
		w.merge(resolve(v), t, path, taken)
	}
}

// merge checks the mapping, or list of mappings, merged into the mapping
// at path; anything else is the decoder's to refuse.
func (w *walker) merge(v *yaml.Node, t reflect.Type, path string, taken map[string]bool) {
	if v == nil {
		return
	}
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	for _, e := range items {
		if e = resolve(e); e != nil && e.Kind == yaml.MappingNode && w.fresh(e, t) {
			w.mapping(e, t, path, taken)
		}
	}
}

// keysOf is keysOf(t), once per type.
func (w *walker) keysOf(t reflect.Type) *structKeys {
	k, ok := w.structs[t]
	if !ok {
		k = &structKeys{}
		k.names, k.fields = keysOf(t)
		w.structs[t] = k
	}
	return k
}

// mapWalk is the check of one mapping node.
type mapWalk struct {
	w     *walker
	t     reflect.Type // a struct or a map
	path  string
	keys  *structKeys     // a struct's
	first map[string]int  // key → the line it is first given on
	taken map[string]bool // when merging: the keys set already
}

// entry checks key k and its value v.
func (m *mapWalk) entry(k, v *yaml.Node) {
	if k == nil {
		return
	}
	if k.Kind != yaml.ScalarNode {
		m.w.problem(k.Line, m.path, "keys must be plain names")
		return
	}
	p := joinPath(m.path, k.Value)
	var vt reflect.Type
	if m.keys != nil {
		ft, ok := m.keys.fields[k.Value]
		if !ok && !keyShaped(k.Value) {
			// Not a key of any file of ours: not quoted, for the file may
			// be any file (/etc/shadow's lines end in ':', keys to YAML).
			m.w.problem(k.Line, m.path, fmt.Sprintf("not a mapping of keys of this kind: a key of %d bytes, not spelled like one (the wrong file?)", len(k.Value)))
			return
		}
		if !ok {
			m.w.out.Problems = append(m.w.out.Problems, &KeyError{Line: k.Line, Path: p, Key: k.Value,
				Allowed: m.keys.names, Suggest: closest(k.Value, m.keys.names)})
			return
		}
		vt = ft
	}
	if prev, dup := m.first[k.Value]; dup {
		m.w.problem(k.Line, p, fmt.Sprintf("given twice (first on line %d)", prev))
		return
	}
	m.first[k.Value] = k.Line
	if m.taken != nil {
		if m.taken[k.Value] {
			return // overridden by the mapping it is merged into
		}
		m.taken[k.Value] = true
	}
	if m.t.Kind() == reflect.Map {
		vt = m.t.Elem()
		m.key(k)
	}
	m.w.walk(v, vt, p)
}

// key checks key k of a map against the map's key type.
func (m *mapWalk) key(k *yaml.Node) {
	kt := target(m.t.Key())
	if kt == nil {
		return
	}
	switch kt.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
		return // the decoder's to refuse
	}
	if m.w.scalarMsg(k, kt) != "" {
		m.w.problem(k.Line, m.path, fmt.Sprintf("want %s as a key, got %s", m.w.want(kt), describe(k)))
	}
}

// keyShaped reports whether s is spelled like a key: 1 to 64 letters,
// digits, '_', '-', '.' or spaces, or "<<".
func keyShaped(s string) bool {
	if s == "<<" {
		return true // a merge key taken as an ordinary one (NoMerge)
	}
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ' ') {
			return false
		}
	}
	return true
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
			if parts[0] == "-" || !f.IsExported() && !f.Anonymous {
				continue // yaml.v3 skips these too
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
		if d := units.EditDistance(strings.ToLower(key), a); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}
