package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/locklab/locklab/"

// TestArchitecture holds docs/architecture.md's package table to the
// code: every package of the module has a row, and a package imports of
// locklab only what its row's last column names (`none`: nothing). A new
// import that climbs back up the layering fails here until the table, and
// so the reader's picture, says it.
func TestArchitecture(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string][]string{}
	quoted := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 3 || !strings.HasPrefix(cells[0], "`") {
			continue
		}
		var imports []string
		for _, m := range quoted.FindAllStringSubmatch(cells[2], -1) {
			imports = append(imports, m[1])
		}
		for _, m := range quoted.FindAllStringSubmatch(cells[0], -1) {
			allowed[m[1]] = imports
		}
	}
	if len(allowed) == 0 {
		t.Fatal("docs/architecture.md has no package table")
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		ok, documented := allowed[pkg]
		if !documented {
			t.Errorf("package %s has no row in docs/architecture.md", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if imp = strings.TrimPrefix(imp, module); !slices.Contains(ok, imp) {
				t.Errorf("%s imports %s, which its row in docs/architecture.md does not name (it names: %s)", pkg, imp, strings.Join(ok, ", "))
			}
		}
	}
}
