package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ecntune/ecntune/agent/config"
)

// TestDocumentedCommandsWork: every ecntune command written in the README,
// the other Markdown files and the example configs names a subcommand that
// exists, only flags it has, and files of the repository that exist; an
// agent config it names loads, and keeps its db beside it (where
// .gitignore expects examples/*.db and where the README says it is).
func TestDocumentedCommandsWork(t *testing.T) {
	root := filepath.Join("..", "..")
	var docs []string
	for _, pat := range []string{"*.md", "*/*.md", "*/*/*.md", "examples/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, m...)
	}
	// A command: after ./ or go run ./cmd/, in a code span, or in an indented block (also a
	// YAML comment's); not the word in prose.
	cmdRe := regexp.MustCompile("(?m)(?:\\./(?:cmd/)?|`|^#?[ \\t]{2,})ecntune ((?:sim|eval|train|models|agent|simswitch|demo|bench|fleet|twin)\\b[^`\\n|]*)")
	flagRe := regexp.MustCompile(`(?:^|\s|\[)(--[a-z][a-z0-9-]*)`)
	pathRe := regexp.MustCompile(`(?:^|[\s=])((?:scenarios|examples|testdata)/[A-Za-z0-9_./-]*[A-Za-z0-9_])`)
	n := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cmdRe.FindAllStringSubmatch(string(b), -1) {
			line := m[1]
			var words []string
			for _, w := range strings.Fields(line) {
				if strings.HasPrefix(w, "-") || strings.ContainsAny(w, "[/.'\"$") || strings.ToUpper(w) == w {
					break
				}
				words = append(words, w)
			}
			c, args, err := newRootCmd().Find(words)
			if err == nil {
				err = c.ValidateArgs(args)
			}
			if err != nil {
				t.Errorf("%s: ecntune %s: no such command", doc, line)
				continue
			}
			n++
			for _, f := range flagRe.FindAllStringSubmatch(line, -1) {
				name := strings.TrimPrefix(f[1], "--")
				if c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil && name != "help" {
					t.Errorf("%s: ecntune %s: %s has no flag --%s", doc, line, c.CommandPath(), name)
				}
			}
			for _, p := range pathRe.FindAllStringSubmatch(line, -1) {
				if _, err := os.Stat(filepath.Join(root, p[1])); err != nil {
					t.Errorf("%s: ecntune %s: %v", doc, line, err)
				}
				if strings.HasPrefix(p[1], "examples/") && strings.HasSuffix(p[1], ".yaml") && words[0] == "agent" {
					cfg, err := config.Load(filepath.Join(root, p[1]))
					if err != nil {
						t.Errorf("%s: %v", doc, err)
						continue
					}
					if filepath.Dir(cfg.DB) != filepath.Join(root, "examples") {
						t.Errorf("%s: its db is %s, not beside it in examples/", p[1], cfg.DB)
					}
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("found %d documented commands, want at least the README's 20", n)
	}
}
