package scenario

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ecntune/ecntune/internal/safeio"
)

// checker holds a scenario document to the Go type it is decoded into
// (safeio.CheckYAML, strict: no 1.5 for an int, no "yes" for a bool, and
// "<<" an ordinary key) and reports its first problem with the file's
// name, the line and the field path (e.g. workloads[1].load). It then
// knows the line of every field the file gives, and so which were given.
type checker struct {
	name string // the file's path as errors show it (safeio.DisplayPath)
	file string // the file's path
	doc  *safeio.YAMLCheck
}

// check walks root as a value of v's type and returns the document's first
// problem.
func (c *checker) check(root *yaml.Node, v any) error {
	c.doc = safeio.CheckYAML(root, v, safeio.CheckOptions{Strict: true, NoMerge: true})
	if len(c.doc.Problems) == 0 {
		return c.noNulls(root, "")
	}
	switch e := c.doc.Problems[0].(type) {
	case *safeio.KeyError:
		return c.errf(e.Path, e.Line, "unknown key (allowed: %s)", strings.Join(e.Allowed, ", "))
	case *safeio.FieldError:
		return c.errf(e.Path, e.Line, "%s", e.Msg)
	}
	return fmt.Errorf("%s: %v", c.name, c.doc.Problems[0])
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

// has reports whether path was given in the file.
func (c *checker) has(path string) bool { _, ok := c.doc.Line(path); return ok }

// line is the line of path, or of its nearest given parent.
func (c *checker) line(path string) int { return c.doc.NearestLine(path) }

// at reports an error about path at its line.
func (c *checker) at(path string, format string, args ...any) error {
	return c.errf(path, c.line(path), format, args...)
}

// onlyKeys fails at the first key under path, in the file's order, other
// than the allowed ones (for settings whose valid keys depend on a kind).
func (c *checker) onlyKeys(path string, what string, allowed ...string) error {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for _, k := range c.doc.Keys(path) {
		if !ok[k] {
			return c.at(join(path, k), "not used by %s (allowed: %s)", what, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// noNulls refuses a key given with no value ("enabled:", "kmin: ~"): read
// as left out, it kept the default (PFC on under "pfc: {enabled: }"), or an
// error blamed the default ("kmin 400KB is above kmax 100KB").
func (c *checker) noNulls(n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, k := range n.Content {
			if err := c.noNulls(k, path); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			if v.Kind == yaml.ScalarNode && (v.Tag == "!!null" || v.Value == "") {
				return c.errf(p, k.Line, "no value: write one, or leave the key out for its default")
			}
			if err := c.noNulls(v, p); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			if err := c.noNulls(v, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
