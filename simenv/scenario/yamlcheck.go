package scenario

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// checker walks a YAML node tree against the Go type it will be decoded
// into, so that every problem is reported with its field path (e.g.
// workloads[1].load) and line, and scalars are held to their exact YAML
// type (yaml.v3 would silently take 1.5 for an int, or "yes" for a bool).
// It records the line of every key it sees, which also tells which fields
// were given.
type checker struct {
	name  string
	lines map[string]int
}

func (c *checker) errf(path string, line int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	if line > 0 {
		return fmt.Errorf("%s: line %d: %s", c.name, line, msg)
	}
	return fmt.Errorf("%s: %s", c.name, msg)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields lists the yaml keys of struct type t, in declaration order.
func yamlFields(t reflect.Type) (names []string, byName map[string]reflect.Type) {
	byName = map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		names = append(names, tag)
		byName[tag] = f.Type
	}
	return names, byName
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func (c *checker) check(n *yaml.Node, t reflect.Type, path string) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNull(n) {
		return nil // omitted: the default applies
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return c.errf(path, n.Line, "want a mapping of keys, got %s", describe(n))
		}
		names, fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return c.errf(path, k.Line, "keys must be plain names")
			}
			p := join(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				return c.errf(p, k.Line, "unknown key (allowed: %s)", strings.Join(names, ", "))
			}
			if prev, dup := c.lines[p]; dup {
				return c.errf(p, k.Line, "given twice (first on line %d)", prev)
			}
			c.lines[p] = k.Line
			if err := c.check(v, ft, p); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return c.errf(path, n.Line, "want a list, got %s", describe(n))
		}
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			c.lines[p] = e.Line
			if err := c.check(e, t.Elem(), p); err != nil {
				return err
			}
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return c.errf(path, n.Line, "want a single value, got %s", describe(n))
		}
	case reflect.Int, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			return c.errf(path, n.Line, "want an integer, got %s", describe(n))
		}
		if _, err := strconv.ParseInt(n.Value, 0, 64); err != nil {
			return c.errf(path, n.Line, "%q is not an integer in range", n.Value)
		}
	case reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			return c.errf(path, n.Line, "want a non-negative integer, got %s", describe(n))
		}
		if _, err := strconv.ParseUint(n.Value, 0, 64); err != nil {
			return c.errf(path, n.Line, "%q is not a non-negative integer", n.Value)
		}
	case reflect.Float64:
		tag := n.ShortTag()
		if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") {
			return c.errf(path, n.Line, "want a number, got %s", describe(n))
		}
		if v, err := strconv.ParseFloat(n.Value, 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return c.errf(path, n.Line, "%q is not a finite number", n.Value)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || (n.Value != "true" && n.Value != "false") {
			return c.errf(path, n.Line, "want true or false, got %s", describe(n))
		}
	default:
		return c.errf(path, n.Line, "internal: no check for %s", t)
	}
	return nil
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// has reports whether path was given in the file.
func (c *checker) has(path string) bool { _, ok := c.lines[path]; return ok }

// line is the line of path, or of its nearest given parent.
func (c *checker) line(path string) int {
	for {
		if l, ok := c.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
}

// at reports an error about path at its line.
func (c *checker) at(path string, format string, args ...any) error {
	return c.errf(path, c.line(path), format, args...)
}

// onlyKeys fails when a key under path other than the allowed ones was given
// (for settings whose valid keys depend on a kind).
func (c *checker) onlyKeys(path string, what string, allowed ...string) error {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	var bad []string
	for p := range c.lines {
		rest, found := strings.CutPrefix(p, path+".")
		if !found || strings.ContainsAny(rest, ".[") {
			continue
		}
		if !ok[rest] {
			bad = append(bad, rest)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Slice(bad, func(i, j int) bool { return c.lines[join(path, bad[i])] < c.lines[join(path, bad[j])] })
	p := join(path, bad[0])
	return c.at(p, "not used by %s (allowed: %s)", what, strings.Join(allowed, ", "))
}
