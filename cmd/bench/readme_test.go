package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadme: the README stays a two-minute read (under 150 lines), every
// relative link in it names a file of the repository (an anchor names a
// heading of that file), and every user document in docs/ is linked.
func TestReadme(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, "\n"); n >= 150 {
		t.Errorf("README.md has %d lines, want under 150: move detail to docs/", n)
	}
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`).FindAllStringSubmatch(text, -1) {
		target, anchor := m[1], strings.TrimPrefix(m[2], "#")
		if strings.Contains(target, "://") {
			continue
		}
		linked[filepath.Clean(target)] = true
		doc, err := os.ReadFile(filepath.Join(root, target))
		if err != nil {
			t.Errorf("README links %s: %v", target, err)
			continue
		}
		if anchor != "" && !hasHeading(string(doc), anchor) {
			t.Errorf("README links %s#%s: no such heading", target, anchor)
		}
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		if !linked[rel] {
			t.Errorf("README does not link %s", rel)
		}
	}
	for _, outside := range outsideNames {
		if strings.Contains(text, outside) {
			t.Errorf("README cites %q, a file outside the repository", outside)
		}
	}
}

// hasHeading reports whether a Markdown heading of doc has the GitHub
// anchor anchor (lower case, spaces as dashes, punctuation dropped).
func hasHeading(doc, anchor string) bool {
	for _, line := range strings.Split(doc, "\n") {
		h := strings.TrimLeft(line, "#")
		if h == line || !strings.HasPrefix(h, " ") {
			continue
		}
		a := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z':
				return r
			}
			return -1
		}, strings.ToLower(strings.TrimSpace(h)))
		if strings.ReplaceAll(a, ".", "") == anchor || a == anchor {
			return true
		}
	}
	return false
}

// TestNoOutsideCitations: no source or document of the repository cites a
// file its users do not have (the team's design notes); what a user needs
// is in docs/.
func TestNoOutsideCitations(t *testing.T) {
	root := filepath.Join("..", "..")
	self, _ := filepath.Abs("readme_test.go")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "results" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".md", ".py", ".java", ".sh", ".yaml":
		default:
			return nil
		}
		if abs, _ := filepath.Abs(p); abs == self {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, outside := range outsideNames {
			if strings.Contains(string(b), outside) {
				t.Errorf("%s cites %q, a file outside the repository: put what users need in docs/", p, outside)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// outsideNames are the team's files outside the repository that nothing
// in it may cite. They are spelled in pieces so that this file, which
// looks for them, does not itself contain them.
var outsideNames = []string{"DESIGN" + ".md", ".." + "/shared", "FIELD" + "-NOTES"}
