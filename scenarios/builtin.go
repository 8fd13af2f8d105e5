package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/locklab/locklab/internal/suggest"
)

// builtinFS holds the built-in scenario files, scenarios/*.yaml.
//
//go:embed *.yaml
var builtinFS embed.FS

// BuiltinNames returns the names of the built-in scenarios ("redis-baseline"),
// sorted: the file names without .yaml.
func BuiltinNames() []string {
	entries, _ := fs.ReadDir(builtinFS, ".")
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok && !e.IsDir() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Builtin returns every built-in scenario, parsed and validated, in
// BuiltinNames order. Their File is "builtin:<name>". The package's tests
// keep them valid; Builtin panics when one is not, which in practice means
// a lock they use is not registered: import locks/all first.
func Builtin() []*Scenario {
	var out []*Scenario
	for _, name := range BuiltinNames() {
		s, err := parseBuiltin(name)
		if err != nil {
			panic(fmt.Sprintf("scenarios: built-in scenario %s is invalid (is every lock package imported, e.g. locks/all?):\n%v", name, err))
		}
		out = append(out, s)
	}
	return out
}

func parseBuiltin(name string) (*Scenario, error) {
	data, err := builtinFS.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("scenarios: no built-in scenario %q", name)
	}
	return Parse("builtin:"+name, data)
}

// BuiltinYAML returns the built-in scenario name's file exactly as
// embedded (comments included), to start a scenario file from; false when
// there is no built-in scenario of that name.
func BuiltinYAML(name string) ([]byte, bool) {
	if !slices.Contains(BuiltinNames(), name) {
		return nil, false
	}
	data, err := builtinFS.ReadFile(name + ".yaml")
	return data, err == nil
}

// Resolve loads the scenario arg names. A file that exists at arg is
// loaded from disk. Otherwise arg may name a built-in scenario, as a bare
// name ("redis-baseline"), a file name ("redis-baseline.yaml") or a path
// into a scenarios directory ("scenarios/redis-baseline.yaml"), and the
// embedded copy is parsed; so the CLIs work from any directory.
func Resolve(arg string) (*Scenario, error) {
	_, err := os.Stat(arg)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return Load(arg)
	}
	base := filepath.Base(arg)
	name := strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	dir := filepath.Dir(arg)
	if dir == "." || filepath.Base(dir) == "scenarios" {
		if slices.Contains(BuiltinNames(), name) {
			return parseBuiltin(name)
		}
	}
	return nil, fmt.Errorf("scenarios: %s: no such file, and no built-in scenario of that name (built-in: %s)%s",
		arg, strings.Join(BuiltinNames(), ", "), suggest.Hint(name, BuiltinNames()))
}
