package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/faults"
)

// fieldContext is what a field needs besides itself to be valid.
// A path's context is its own entry's and every enclosing section's.
var fieldContext = map[string]map[string]string{
	"workload.rate":              {"workload.mode": "open"},
	"workload.read_share":        {"locks": "[test-rw]"},
	"cluster.external":           {"cluster.provider": "external", "cluster.external.redis": "[10.0.0.5:6379]"},
	"cluster.external.zookeeper": {"locks": "[test-zk]"},
	"cluster.external.etcd":      {"locks": "[test-etcd]"},
	"sweep":                      {"faults": "[{type: pause, at: 1s, for: 2s, node: redis-0}]"},
	"expect":                     {"faults": "[{type: pause, at: 1s, for: 2s, node: redis-0}]"},
}

// scenarioWith builds a scenario file from a minimal valid one (name t,
// locks [test-lock]) with each path set to a YAML value. "locks[].F"
// sets F of the one lock entry, "expect.*.F" F of expect: default, and
// sweep."faults[N].FIELD" sweeps faults[0].for.
func scenarioWith(t *testing.T, set map[string]string) []byte {
	t.Helper()
	doc := map[string]any{"name": "t", "locks": []any{"test-lock"}}
	lock := map[string]any{}
	var setIn func(m map[string]any, path string, v any)
	setIn = func(m map[string]any, path string, v any) {
		head, rest, nested := strings.Cut(path, ".")
		if strings.HasPrefix(path, `"`) {
			head, rest, nested = path, "", false
		}
		head = strings.NewReplacer(`"faults[N].FIELD"`, "faults[0].for", "*", "default").Replace(head)
		if !nested {
			m[head] = v
			return
		}
		sub, ok := m[head].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[head] = sub
		}
		setIn(sub, rest, v)
	}
	// Sorted, so a field's own value wins over a context's.
	paths := make([]string, 0, len(set))
	for p := range set {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		var v any
		if err := yaml.Unmarshal([]byte(set[p]), &v); err != nil {
			t.Fatalf("%s: example %q: %v", p, set[p], err)
		}
		if name, ok := strings.CutPrefix(p, "locks[]."); ok {
			lock[name] = v
			continue
		}
		setIn(doc, p, v)
	}
	if len(lock) > 0 {
		if _, ok := lock["name"]; !ok {
			lock["name"] = "test-lock"
		}
		doc["locks"] = []any{lock}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withContext returns set plus the context every one of its paths needs.
func withContext(path, value string) map[string]string {
	set := map[string]string{}
	for p := path; p != ""; p, _ = splitPath(p) {
		for k, v := range fieldContext[p] {
			set[k] = v
		}
	}
	// Values that need another field.
	switch path + "=" + value {
	case "workload.mode=open":
		set["workload.rate"] = "200"
	case "cluster.provider=external":
		set["cluster.external.redis"] = "[10.0.0.5:6379]"
	}
	set[path] = value
	return set
}

func problemsOf(t *testing.T, src []byte) []Problem {
	t.Helper()
	_, err := Parse("x.yaml", src)
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not *Error: %v", err, err)
	}
	return e.Problems
}

// TestFieldTableAccepted writes every field of the table, with its
// example, into a valid scenario: the parser must accept each one.
func TestFieldTableAccepted(t *testing.T) {
	rows := append(Fields(), expectRows()...)
	for _, f := range rows {
		if f.Kind == KindSection || f.Kind == KindMap {
			continue
		}
		t.Run(f.Path, func(t *testing.T) {
			if f.Example == "" {
				t.Fatalf("%s has no example", f.Path)
			}
			src := scenarioWith(t, withContext(f.Path, f.Example))
			if ps := problemsOf(t, src); ps != nil {
				t.Fatalf("example rejected:\n%s\n%v", src, ps)
			}
		})
	}
}

// TestFieldTableBounds checks the table's enumerations, minimums and
// required fields against the parser: each allowed value parses, a value
// outside them is refused at the field, and so is a missing required field.
func TestFieldTableBounds(t *testing.T) {
	for _, f := range Fields() {
		var bad []string
		for _, v := range f.Allowed {
			t.Run(f.Path+"="+v, func(t *testing.T) {
				if ps := problemsOf(t, scenarioWith(t, withContext(f.Path, v))); ps != nil {
					t.Fatalf("allowed value %q rejected: %v", v, ps)
				}
			})
		}
		switch {
		case len(f.Allowed) > 0 && f.Kind == KindInt:
			bad = append(bad, "2")
		case len(f.Allowed) > 0:
			bad = append(bad, "bogus")
		}
		if f.Min != nil {
			bad = append(bad, strconv.Itoa(*f.Min-1))
		}
		for _, v := range bad {
			t.Run(f.Path+"="+v, func(t *testing.T) {
				ps := problemsOf(t, scenarioWith(t, withContext(f.Path, v)))
				field := strings.Replace(f.Path, "locks[]", "locks[0]", 1)
				if len(ps) != 1 || ps[0].Field != field {
					t.Fatalf("want one problem at %s, got %v", field, ps)
				}
			})
		}
		if f.Required && !strings.Contains(f.Path, ".") {
			t.Run(f.Path+" missing", func(t *testing.T) {
				var src strings.Builder
				for _, line := range []string{"name: t", "locks: [test-lock]"} {
					if !strings.HasPrefix(line, f.Path+":") {
						src.WriteString(line + "\n")
					}
				}
				ps := problemsOf(t, []byte(src.String()))
				if len(ps) != 1 || ps[0].Field != f.Path || !strings.HasPrefix(ps[0].Msg, "required") {
					t.Fatalf("want %s: required, got %v", f.Path, ps)
				}
			})
		}
	}
}

// TestFieldTableUnknown writes an unknown field into every section of the
// table: the parser must refuse it, listing exactly the table's fields.
func TestFieldTableUnknown(t *testing.T) {
	sections := []string{"", "locks[]"}
	for _, f := range Fields() {
		if f.Kind == KindSection {
			sections = append(sections, f.Path)
		}
	}
	for _, sec := range sections {
		t.Run("section "+sec, func(t *testing.T) {
			path := join(sec, "zzz")
			src := scenarioWith(t, withContext(path, "1"))
			if sec == "locks[]" {
				// test-lock has options: the allowed list adds them.
				src = []byte(strings.Replace(string(src), "test-lock", "test-redlock", 1))
			}
			ps := problemsOf(t, src)
			field := strings.Replace(path, "locks[]", "locks[0]", 1)
			want := fmt.Sprintf("unknown field (allowed: %s)", strings.Join(fieldNames(sec), ", "))
			if len(ps) != 1 || ps[0].Field != field || ps[0].Msg != want {
				t.Fatalf("want %s: %s, got %v", field, want, ps)
			}
		})
	}
}

// TestFaultFieldDocs requires a doc for every fault field package faults
// knows, and no doc for a field it does not.
func TestFaultFieldDocs(t *testing.T) {
	for _, name := range faults.FieldNames {
		if f := faultField(name); f.Doc == "" || f.Kind == "" || f.Example == "" {
			t.Errorf("fault field %s: no doc, kind or example (faultFieldDocs or its faults.Value)", name)
		}
	}
	for name := range faultFieldDocs {
		if !slices.Contains(faults.FieldNames, name) {
			t.Errorf("faultFieldDocs documents %s, which is not in faults.FieldNames", name)
		}
	}
}

// expectRows is the table rows of the expectation keys.
func expectRows() []Field {
	var out []Field
	for _, name := range ExpectFields() {
		out = append(out, expectField(name))
	}
	return out
}
