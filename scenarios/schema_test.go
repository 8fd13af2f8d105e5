package scenarios

// A checker of the JSON Schema subset buildSchema emits ($ref to $defs,
// type, enum, const, pattern, minimum, properties, patternProperties,
// additionalProperties, required, items, minItems, anyOf), so the schema
// is tested against the built-in scenarios without a new dependency.

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/locks"
)

// schemaCheck validates YAML documents against one schema.
type schemaCheck struct {
	root obj
}

// newSchemaCheck round-trips the schema through JSON, so the checker sees
// what the file holds (numbers as float64, lists as []any).
func newSchemaCheck(t *testing.T, s obj) *schemaCheck {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var root obj
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	return &schemaCheck{root: root}
}

// validateYAML returns every schema error of a YAML document.
func (c *schemaCheck) validateYAML(src []byte) ([]string, error) {
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		return nil, err
	}
	return c.validate(c.root, normalize(v), "$"), nil
}

// normalize turns YAML-decoded values into JSON's: numbers as float64.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return v
}

func typeOK(want string, v any) bool {
	switch want {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "null":
		return v == nil
	}
	return false
}

// validate checks v against schema s; at is v's JSON path for messages.
func (c *schemaCheck) validate(s obj, v any, at string) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }
	for k := range s {
		switch k {
		case "$ref", "type", "enum", "const", "pattern", "minimum", "properties", "patternProperties",
			"additionalProperties", "required", "items", "minItems", "anyOf", "description", "$schema", "$defs", "title":
		default:
			fail("schema keyword %q is not supported by this checker", k)
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		def, ok := c.root["$defs"].(obj)[name].(obj)
		if !found || !ok {
			fail("unresolved $ref %s", ref)
		} else {
			errs = append(errs, c.validate(def, v, at)...)
		}
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch x := t.(type) {
		case string:
			types = []string{x}
		case []any:
			for _, e := range x {
				types = append(types, e.(string))
			}
		}
		if !slices.ContainsFunc(types, func(w string) bool { return typeOK(w, v) }) {
			fail("want %s, got %v", strings.Join(types, " or "), v)
			return errs
		}
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return x == v }) {
		fail("%v is not one of %v", v, e)
	}
	if cv, ok := s["const"]; ok && cv != v {
		fail("want %v, got %v", cv, v)
	}
	if p, ok := s["pattern"].(string); ok {
		if str, isStr := v.(string); isStr && !regexp.MustCompile(p).MatchString(str) {
			fail("%q does not match %s", str, p)
		}
	}
	if m, ok := s["minimum"].(float64); ok {
		if f, isNum := v.(float64); isNum && f < m {
			fail("%v is below the minimum %v", f, m)
		}
	}
	if items, ok := v.([]any); ok {
		if m, ok := s["minItems"].(float64); ok && float64(len(items)) < m {
			fail("want at least %v items, got %d", m, len(items))
		}
		if is, ok := s["items"].(obj); ok {
			for i, it := range items {
				errs = append(errs, c.validate(is, it, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	if m, ok := v.(map[string]any); ok {
		props, _ := s["properties"].(obj)
		pats, _ := s["patternProperties"].(obj)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, has := m[r.(string)]; !has {
					fail("required field %s missing", r)
				}
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			matched := false
			if ps, ok := props[k].(obj); ok {
				matched = true
				errs = append(errs, c.validate(ps, m[k], at+"."+k)...)
			}
			for p, ps := range pats {
				if regexp.MustCompile(p).MatchString(k) {
					matched = true
					errs = append(errs, c.validate(ps.(obj), m[k], at+"."+k)...)
				}
			}
			if matched {
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					errs = append(errs, fmt.Sprintf("%s.%s: unknown field", at, k))
				}
			case obj:
				errs = append(errs, c.validate(ap, m[k], at+"."+k)...)
			}
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var best []string
		for i, alt := range alts {
			e := c.validate(alt.(obj), v, at)
			if len(e) == 0 {
				best = nil
				break
			}
			if i == 0 || len(e) < len(best) {
				best = e
			}
		}
		if best != nil {
			fail("matches none of %d alternatives; nearest: %s", len(alts), strings.Join(best, "; "))
		}
	}
	return errs
}

// TestSchemaBuiltins validates every built-in scenario against the
// generated schema.
func TestSchemaBuiltins(t *testing.T) {
	c := newSchemaCheck(t, buildSchema(realLocks()))
	for _, name := range BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			src, err := builtinFS.ReadFile(name + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			errs, err := c.validateYAML(src)
			if err != nil {
				t.Fatal(err)
			}
			if len(errs) > 0 {
				t.Fatalf("schema errors:\n%s", strings.Join(errs, "\n"))
			}
		})
	}
}

// TestSchemaAgreesWithParser: every field example of the table, which the
// parser accepts (TestFieldTableAccepted), passes the schema; files the
// parser refuses for their shape fail it.
func TestSchemaAgreesWithParser(t *testing.T) {
	c := newSchemaCheck(t, buildSchema(locksForTests()))
	for _, f := range append(Fields(), expectRows()...) {
		if f.Kind == KindSection || f.Kind == KindMap {
			continue
		}
		t.Run(f.Path, func(t *testing.T) {
			src := scenarioWith(t, withContext(f.Path, f.Example))
			if errs, err := c.validateYAML(src); err != nil || len(errs) > 0 {
				t.Fatalf("%s\nschema errors: %v %s", src, err, strings.Join(errs, "\n"))
			}
		})
	}
	bad := []struct{ name, src, want string }{
		{"unknown top field", "name: t\nlocks: [test-lock]\ndurration: 5s\n", "$.durration: unknown field"},
		{"missing locks", "name: t\n", "required field locks missing"},
		{"bad name", "name: T_1\nlocks: [test-lock]\n", "does not match"},
		{"unknown lock", "name: t\nlocks: [redis-foo]\n", "matches none"},
		{"unknown lock option", "name: t\nlocks: [{name: test-lock, wait_replica: 1}]\n", "matches none"},
		{"bad enum", "name: t\nlocks: [test-lock]\nresource: {fencing: strict}\n", "is not one of"},
		{"bad duration", "name: t\nlocks: [test-lock]\nworkload: {ttl: 5 s}\n", "matches none"},
		{"below minimum", "name: t\nlocks: [test-lock]\nworkload: {clients: 0}\n", "below the minimum"},
		{"field of another fault type", "name: t\nlocks: [test-lock]\nfaults: [{type: kill, at: 1s, node: redis-0, latency: 1s}]\n", "matches none"},
		{"fault without at", "name: t\nlocks: [test-lock]\nfaults: [{type: kill, node: redis-0}]\n", "matches none"},
		{"bad condition", "name: t\nlocks: [test-lock]\nexpect: {default: {violations: \"=>1\"}}\n", "does not match"},
		{"unknown expect key", "name: t\nlocks: [test-lock]\nexpect: {default: {violation: 0}}\n", "unknown field"},
		{"unsweepable field", "name: t\nlocks: [test-lock]\nsweep: {\"faults[0].type\": [kill]}\n", "unknown field"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse("x.yaml", []byte(tc.src)); err == nil {
				t.Fatalf("the parser accepts it: the case must be a bad file")
			}
			errs, err := c.validateYAML([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Fatalf("schema errors %q do not contain %q", errs, tc.want)
			}
		})
	}
}

// locksForTests is every registered lock, the tests' stubs included.
func locksForTests() []locks.Spec { return locks.All() }
