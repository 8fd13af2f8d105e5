package scenarios

// The generated reference: docs/scenario-file.md and
// docs/scenario.schema.json come from the field table (fields.go), package
// faults' table and the locks registry. TestGeneratedDocs fails when the
// committed files differ from what the tables give; -update rewrites them:
//
//	go test ./scenarios -run TestGeneratedDocs -count=1 -update

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/locks"
)

var update = flag.Bool("update", false, "rewrite the generated docs (docs/scenario-file.md, docs/scenario.schema.json, docs/results.md's field list)")

const (
	referencePath = "../docs/scenario-file.md"
	schemaPath    = "../docs/scenario.schema.json"
	regenerate    = "go test ./scenarios -run TestGeneratedDocs -count=1 -update"
)

// testLockPrefix marks the stub locks the tests register (scenarios_test.go):
// they are not part of the reference.
const testLockPrefix = "test-"

// realLocks is every registered lock but the tests' stubs.
func realLocks() []locks.Spec {
	var out []locks.Spec
	for _, s := range locks.All() {
		if !strings.HasPrefix(s.Name, testLockPrefix) {
			out = append(out, s)
		}
	}
	return out
}

// TestGeneratedDocs compares (or with -update writes) every generated
// file.
func TestGeneratedDocs(t *testing.T) {
	var schema bytes.Buffer
	enc := json.NewEncoder(&schema)
	enc.SetEscapeHTML(false) // keep > and < readable in patterns
	enc.SetIndent("", "  ")
	if err := enc.Encode(buildSchema(realLocks())); err != nil {
		t.Fatal(err)
	}
	files := []struct {
		path string
		want []byte
	}{
		{referencePath, []byte(reference(t))},
		{schemaPath, schema.Bytes()},
	}
	for _, f := range files {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			checkGenerated(t, f.path, f.want)
		})
	}
}

// checkGenerated writes want to path under -update, else requires the
// file to hold exactly want.
func checkGenerated(t *testing.T, path string, want []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it: %s)", err, regenerate)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: the tables changed since it was generated; run\n\t%s\nand commit the result", path, regenerate)
	}
}

// mdLinkRE matches a Markdown link, for text outside Markdown.
var mdLinkRE = regexp.MustCompile(`\[([^\]]+)\]\([^)]+\)`)

func plain(s string) string { return mdLinkRE.ReplaceAllString(s, "$1") }

// cell escapes text for a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// values says in one cell what a field accepts besides its kind.
func values(f Field) string {
	var parts []string
	if len(f.Allowed) > 0 {
		qs := make([]string, len(f.Allowed))
		for i, v := range f.Allowed {
			qs[i] = code(v)
		}
		parts = append(parts, strings.Join(qs, ", "))
	}
	if f.Min != nil {
		parts = append(parts, fmt.Sprintf(">= %d", *f.Min))
	}
	if f.Bounds != "" {
		b := f.Bounds
		if f.Path == "name" {
			b = code(b)
		}
		parts = append(parts, b)
	}
	return strings.Join(parts, "; ")
}

func kindText(f Field) string {
	if f.Kind == KindList && f.Items != "" && f.Items != KindSection {
		return "list of " + string(f.Items)
	}
	return string(f.Kind)
}

// fieldTableMD writes rows as a Markdown table, paths shown relative to
// the section (trim) as written in a file.
func fieldTableMD(b *strings.Builder, rows []Field, trim string) {
	b.WriteString("| field | kind | default | values | description |\n|---|---|---|---|---|\n")
	for _, f := range rows {
		name := strings.TrimPrefix(f.Path, trim)
		if f.Required {
			name = code(name) + " (required)"
		} else {
			name = code(name)
		}
		doc := f.Doc
		if f.Example != "" {
			doc += "; e.g. " + code(f.Example)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", cell(name), kindText(f), cell(f.Default), cell(values(f)), cell(doc))
	}
	b.WriteString("\n")
}

// under returns the table rows directly under section.
func under(section string) []Field {
	var out []Field
	for _, f := range fieldTable {
		if parent, _ := splitPath(f.Path); parent == section {
			out = append(out, f)
		}
	}
	return out
}

// referenceExample is the example file of the reference; the generator
// parses it, so it is always valid.
const referenceExample = `name: pause-holder-short
description: A holder is frozen (SIGSTOP) past its lease; fencing saves the data.
seed: 11
cluster:
  redis: {primaries: 1}
  etcd: {nodes: 3}
locks: [redis-watchdog, etcd-recipe]
workload:
  clients: 3
  duration: 10s
  ttl: 2s
  critical_section: 300ms
  process_per_client: true        # each client its own OS process
faults:
  - {at: 2s, for: 5s, type: pause-client, client: holder}
resource:
  fencing: enforce                # the resource rejects stale tokens
expect:
  default: {violations: ">0", stale_accepted: 0, lost_updates: 0}
`

// reference renders docs/scenario-file.md.
func reference(t *testing.T) string {
	t.Helper()
	if _, err := Parse("example.yaml", []byte(referenceExample)); err != nil {
		t.Fatalf("the reference's example does not parse:\n%v", err)
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Scenario file reference\n\n")
	w("<!-- Generated from the field table (scenarios/fields.go), package faults' table and the locks registry by\n     %s\n     Do not edit by hand. -->\n\n", regenerate)
	w("A scenario is one YAML file: which servers to start, which locks to run, what the clients do, which faults to inject and what to expect. ")
	w("`bench run FILE` and `chaos run FILE` take a file or the name of a built-in scenario (`bench list`); ")
	w("each lock runs on a fresh cluster. A bad file starts nothing: every problem is reported at once as `file:line: field: what is allowed`, and the command exits 2. ")
	w("Unknown fields are errors at every level; YAML anchors, aliases and merge keys (`<<: *base`) work; a file holds exactly one YAML document.\n\n")
	w("Built-in scenarios (embedded in the binaries, in `scenarios/`): %s.\n\n", strings.Join(mapStrings(BuiltinNames(), code), ", "))
	w("```yaml\n%s```\n\n", referenceExample)
	w("## Editor support\n\n")
	w("[scenario.schema.json](scenario.schema.json) is a JSON Schema (draft 2020-12) of this file, generated from the same tables. ")
	w("With the YAML language server (the VS Code YAML extension, coc-yaml, Neovim's yamlls, ...) start a scenario file with a comment naming it, relative to the file or as a URL:\n\n")
	w("```yaml\n# yaml-language-server: $schema=../docs/scenario.schema.json\nname: my-scenario\n```\n\n")
	w("The editor then completes field names, lock names and fault types and shows each field's description. The schema checks the shape of a file; the cross-checks (a node that exists in the cluster, a fault time within the run, expect keys naming a lock) are the validator's, and `bench run`/`chaos run`, which start nothing on a bad file, have the last word.\n\n")
	w("## Kinds\n\n")
	w("| kind | written as |\n|---|---|\n")
	w("| string | text; quote it when it starts with a YAML special character |\n")
	w("| int, number | `3`; a number may have a fraction: `0.5` |\n")
	w("| duration | a Go duration: `500ms`, `2s`, `1m30s` (`0` for zero) |\n")
	w("| bool | `true` or `false` |\n")
	w("| list | `[a, b]` or one `- item` per line |\n")
	w("| section | a mapping of the fields listed for it |\n")
	w("| map | a mapping whose keys the file chooses (lock names in `expect`, swept fields in `sweep`) |\n")
	w("| condition | `0`, `N`, `\">0\"`, `\">=N\"`, `\"<N\"`, `\"<=N\"`, `\"==N\"`; quote those starting with `>` or `<` (YAML reads a bare `>` as a folded block) |\n\n")

	w("## Top level\n\n")
	fieldTableMD(&b, under(""), "")

	w("## cluster\n\n")
	w("Node names follow from it: `redis-0`..`redis-{P-1}` (primaries), `redis-0-r0` (replicas of redis-0), `sentinel-0`.., `zk-0`.., `etcd-0`..; ")
	w("`zk-leader` and `etcd-leader` name the member leading when a fault starts. A written section must be big enough for the locks (redlock with `primaries: 1` is an error).\n\n")
	fieldTableMD(&b, under("cluster"), "cluster.")
	for _, sec := range []string{"cluster.redis", "cluster.zookeeper", "cluster.etcd", "cluster.external"} {
		w("### %s\n\n", sec)
		if sec == "cluster.external" {
			var creds []string
			for _, tb := range cluster.Backends() {
				for _, v := range tb.Credentials {
					creds = append(creds, "`"+v.Env+"`")
				}
			}
			w("Clients still go through their own proxies, so client-side faults work; every key or node a run creates is under its prefix and nothing is flushed. ")
			w("Credentials come from the environment only (see [providers.md](providers.md)): Redis's, etcd's and ZooKeeper's, and the variables the backend table's rows declare, %s.\n\n", strings.Join(creds, ", "))
		}
		fieldTableMD(&b, under(sec), sec+".")
	}

	w("## locks\n\n")
	w("Each entry is a lock name (`redis-cad`) or a mapping. Any key besides the ones below is one of the lock's own options (listed per lock in the [lock catalogue](#lock-catalogue)), written as a scalar. ")
	w("The same lock may appear twice with different options; each entry then gets a label from the values it sets (`redis-cad wait_replicas=1`) unless it gives one.\n\n")
	w("```yaml\nlocks:\n  - redis-cad\n  - {name: redis-cad, wait_replicas: 1, label: cad-wait}\n  - {name: exec, backend: redis, command: [python3, my_client.py], label: mine}\n```\n\n")
	fieldTableMD(&b, under("locks[]"), "locks[].")

	w("## workload\n\n")
	fieldTableMD(&b, under("workload"), "workload.")

	w("## sweep\n\n")
	w("Runs the scenario once per value (bench): every combination, clients outermost, then the fault fields in file order. A swept fault field need not be written in the fault itself; each value is checked as if it were (errors point at the value, as `sweep.faults[0].for[1]`).\n\n")
	w("```yaml\nsweep:\n  clients: [1, 4, 16]\n  faults[0].for: [1s, 5s]      # in flow style quote the key: {\"faults[0].for\": [1s, 5s]}\n```\n\n")
	fieldTableMD(&b, under("sweep"), "sweep.")
	var sweepable []string
	for _, f := range faults.FieldNames {
		if sweepableField(f) {
			sweepable = append(sweepable, code(f))
		}
	}
	w("Sweepable fault fields: %s.\n\n", strings.Join(sweepable, ", "))

	w("## faults\n\n")
	faultsMD(&b)

	w("## resource\n\n")
	fieldTableMD(&b, under("resource"), "resource.")

	w("## expect\n\n")
	w("`expect:` maps a lock name, a label or `default` to conditions on each run's figures. A lock's conditions are its label's entry, then its name's, then `default`'s, field by field. ")
	w("Each condition is met, failed or **inconclusive**: a safety count of 0 proves nothing when a fault did not apply or did not bite, fewer than `min_visits` visits or fewer than 2 contending clients (visiting, or waiting while another held the lock) were in a fault's window (its start to a lease after its heal), or a resource call failed. ")
	w("`chaos` exits 0 when every expectation is met, 1 when one failed, 2 on bad input, 3 when none failed but some were inconclusive. A lock no entry applies to is *not judged*, never met. See [verdicts.md](verdicts.md).\n\n")
	w("```yaml\nexpect:\n  default: {violations: 0, lost_updates: 0}\n  redis-set-del: {violations: \">0\"}\n```\n\n")
	fieldTableMD(&b, expectRows(), "expect.*.")

	w("## Lock catalogue\n\n")
	locksMD(&b, realLocks())
	return b.String()
}

// sweepableField mirrors sweepable for the doc (fault fields that are
// scalars and not type).
func sweepableField(f string) bool { return sweepable(f) }

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

// targetText says in words what a fault type acts on.
func targetText(t faults.Type) string {
	switch t.Target {
	case faults.OnLinkOrNode:
		return "`link: A->B` (one directed link) or `node: N` (every link touching N: a server, `clients`, `client-N` or `holder`)"
	case faults.OnServer:
		// The backend table's rows say which server faults act on theirs.
		kinds := cluster.KindsActedOnBy(t.Name)
		return "`node:` a server of kind " + strings.Join(mapStrings(kinds, code), ", ")
	case faults.OnPartition:
		return "`groups: [[...], [...]]` (every proxied link between two groups is cut) or `isolate: N` (N against every other server and the clients)"
	case faults.OnClient:
		return "`client:` `holder` or a client index"
	}
	return ""
}

// required is the value fields t requires.
func required(t faults.Type) []string {
	var out []string
	for _, v := range t.Values {
		if v.Required {
			out = append(out, v.Name)
		}
	}
	return out
}

// faultsMD renders the faults section from package faults' table.
func faultsMD(b *strings.Builder) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("Each entry is one fault: a `type`, when it starts (`at`), for how long (`for`, for the types that heal) and what it acts on. ")
	w("How each acts (proxies, signals, the holder) is in [faults.md](faults.md). With provider `external` only the types marked external are possible.\n\n")
	w("```yaml\nfaults:\n  - {type: latency, at: 2s, for: 5s, link: client-0->redis-0, latency: 200ms}\n  - {type: partition, at: 3s, for: 4s, isolate: zk-leader}\n  - {type: restart, at: 5s, node: redis-0, delay: 1s}\n```\n\n")
	w("### Fault fields\n\n")
	var rows []Field
	for _, name := range faults.FieldNames {
		f := faultField(name)
		docs := map[string]bool{f.Doc: true}
		var types []string
		for _, typ := range faults.Types() {
			if ft, _ := faults.Lookup(typ); slices.Contains(ft.Fields(), name) {
				types = append(types, typ)
				// A type declaring the field its own way adds its values and doc.
				if g := faultFieldOf(typ, name); !docs[g.Doc] {
					docs[g.Doc] = true
					f.Doc += "; " + g.Doc
					f.Allowed = append(slices.Clone(f.Allowed), g.Allowed...)
					f.Default = ""
				}
			}
		}
		if len(types) < len(faults.Types()) {
			f.Doc += " (" + strings.Join(types, ", ") + ")"
		}
		rows = append(rows, f)
	}
	fieldTableMD(b, rows, "")
	w("### Fault types\n\n")
	w("| type | what it does | acts on | fields | heals (`for`) | external | it bit when (`bit` in the result) |\n|---|---|---|---|---|---|---|\n")
	for _, name := range faults.Types() {
		ft, _ := faults.Lookup(name)
		fields := mapStrings(ft.Fields(), func(f string) string {
			switch {
			case slices.Contains(required(ft), f):
				return code(f) + " (required)"
			case slices.ContainsFunc(ft.Values, func(v faults.Value) bool { return v.Name == f }):
				return code(f) + " (optional)"
			}
			return code(f)
		})
		yes := func(v bool) string {
			if v {
				return "yes"
			}
			return "no"
		}
		w("| `%s` | %s | %s | %s | %s | %s | %s |\n", name, cell(ft.Doc), cell(targetText(ft)), strings.Join(fields, ", "), yes(ft.Heals), yes(ft.External), cell(ft.Observes))
	}
	w("\n")
}

// locksMD renders the lock catalogue from the registry.
func locksMD(b *strings.Builder, specs []locks.Spec) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("Every registered lock (`bench list` prints the same). *Fencing*: the lock hands out a fencing token the resource can check. *Lease*: it expires on its own (a TTL, lease or session), so a paused holder can lose it. *Renews*: it keeps its lease alive while held. *Broken*: unsafe by design, kept to show why. *Kind*: what it promises about holders inside at once (mutex, rw, semaphore, fair; docs/verdicts.md, \"Lock kinds\").\n\n")
	w("| lock | backend | kind | fencing | lease | renews | what it is |\n|---|---|---|---|---|---|---|\n")
	mark := func(v bool) string {
		if v {
			return "yes"
		}
		return ""
	}
	for _, s := range specs {
		summary := s.Summary
		if s.Broken {
			summary = "**broken** — " + summary
		}
		backend := string(s.Backend)
		if backend == "" {
			backend = "as given (`backend:`)"
		}
		if s.MinRedis > 1 {
			backend += fmt.Sprintf(" (>= %d primaries)", s.MinRedis)
		}
		if s.RedisCluster {
			backend += " (also Redis Cluster)"
		}
		w("| `%s` | %s | %s | %s | %s | %s | %s |\n", s.Name, backend, s.KindOf(), mark(s.Fencing), mark(s.LeaseBased), mark(s.Renews), cell(summary))
	}
	w("\n### Lock options\n\n")
	w("Written in the lock's entry: `{name: redlock, renew: true}`. Values are scalars, checked when the file is read.\n\n")
	w("| lock | option | default | description |\n|---|---|---|---|\n")
	for _, s := range specs {
		for _, o := range s.Options {
			w("| `%s` | `%s` | %s | %s |\n", s.Name, o.Name, cell(code(o.Default)), cell(o.Doc))
		}
	}
	w("\n")
}

// ----- JSON Schema -----

// obj is a JSON object of the schema.
type obj = map[string]any

const (
	durationPattern  = `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	signedPattern    = `^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	conditionPattern = `^\s*(>=|<=|==|>|<)?\s*[0-9]+\s*$`
	realCondPattern  = `^\s*(>=|<=|==|>|<)?\s*[0-9]+(\.[0-9]+)?\s*$`
)

// describe is a field's schema description: its doc, default and bounds.
func describe(f Field) string {
	d := plain(f.Doc)
	if f.Default != "" {
		d += ". Default: " + f.Default
	}
	if f.Bounds != "" {
		d += ". " + f.Bounds
	}
	return d
}

// kindSchema is the schema of a value of kind k.
func kindSchema(k Kind) obj {
	switch k {
	case KindString:
		return obj{"type": "string"}
	case KindInt:
		return obj{"type": "integer"}
	case KindNumber:
		return obj{"type": "number"}
	case KindDuration:
		return obj{"$ref": "#/$defs/duration"}
	case KindBool:
		return obj{"type": "boolean"}
	case KindCondition:
		return obj{"$ref": "#/$defs/condition"}
	case KindList:
		return obj{"type": "array"}
	}
	return obj{"type": "object"}
}

// fieldSchema is the schema of one table field (sections get their
// properties from the caller).
func fieldSchema(f Field) obj {
	s := kindSchema(f.Kind)
	if f.Kind == KindList && f.Items != "" && f.Items != KindSection {
		items := kindSchema(f.Items)
		if f.Bounds == "host:port" {
			items["pattern"] = `^.+:[0-9]+$`
		}
		if f.Items == KindInt && strings.HasPrefix(f.Bounds, "each >= 1") {
			items["minimum"] = 1
		}
		s["items"] = items
	}
	if len(f.Allowed) > 0 {
		if f.Kind == KindInt {
			var ns []int
			for _, v := range f.Allowed {
				n, _ := strconv.Atoi(v)
				ns = append(ns, n)
			}
			s["enum"] = ns
		} else {
			s["enum"] = f.Allowed
		}
	}
	if f.Min != nil {
		s["minimum"] = *f.Min
	}
	if f.Path == "name" {
		s["pattern"] = nameRE.String()
	}
	s["description"] = describe(f) // beside a $ref too: fine in draft 2020-12
	return s
}

// sectionSchema is the object schema of the fields under section.
func sectionSchema(section string, extra obj) obj {
	props := obj{}
	var required []string
	for _, f := range under(section) {
		_, name := splitPath(f.Path)
		switch f.Kind {
		case KindSection:
			s := sectionSchema(f.Path, nil)
			s["description"] = describe(f)
			props[name] = s
		default:
			props[name] = fieldSchema(f)
		}
		if f.Required {
			required = append(required, name)
		}
	}
	for k, v := range extra {
		props[k] = v
	}
	s := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func tableField(path string) Field {
	for _, f := range fieldTable {
		if f.Path == path {
			return f
		}
	}
	panic("no field " + path)
}

// buildSchema is docs/scenario.schema.json for the given locks.
func buildSchema(specs []locks.Spec) obj {
	// locks: a name, or an entry naming one lock with its options.
	var names []string
	entries := []any{}
	for _, s := range specs {
		names = append(names, s.Name)
		props := obj{}
		for _, f := range under("locks[]") {
			_, name := splitPath(f.Path)
			props[name] = fieldSchema(f)
		}
		props["name"] = obj{"const": s.Name, "description": plain(s.Summary)}
		for _, o := range s.Options {
			os := obj{"type": []string{"string", "number", "boolean"}, "description": o.Doc}
			if o.Default != "" {
				os["description"] = o.Doc + ". Default: " + o.Default
			}
			if s.Name == execName && o.Name == "command" {
				os = obj{"type": "array", "items": obj{"type": "string"}, "minItems": 1, "description": o.Doc}
			}
			props[o.Name] = os
		}
		entries = append(entries, obj{"type": "object", "required": []string{"name"},
			"properties": props, "additionalProperties": false})
	}
	lockItem := obj{"anyOf": append([]any{obj{"type": "string", "enum": names}}, entries...)}

	// faults: one schema per type, told apart by type.
	var faultItems []any
	for _, typ := range faults.Types() {
		ft, _ := faults.Lookup(typ)
		props := obj{}
		for _, name := range ft.Fields() {
			f := faultFieldOf(typ, name)
			s := kindSchema(f.Kind)
			if f.Kind == KindDuration && f.Bounds == "≠ 0" { // a signed value (faults.Value.Signed)
				s = obj{"$ref": "#/$defs/signedDuration"}
			}
			switch name {
			case "type":
				s = obj{"const": typ}
			case "client":
				s = obj{"type": []string{"string", "integer"}}
			case "groups":
				s["items"] = obj{"type": "array", "items": obj{"type": "string"}, "minItems": 1}
			}
			if f.Min != nil {
				s["minimum"] = *f.Min
			}
			if len(f.Allowed) > 0 {
				s["enum"] = f.Allowed
			}
			s["description"] = plain(f.Doc)
			if name == "type" {
				s["description"] = ft.Doc
			}
			props[name] = s
		}
		faultItems = append(faultItems, obj{"type": "object", "properties": props, "additionalProperties": false,
			"required": append([]string{"type", "at"}, required(ft)...)})
	}

	// sweep: clients and "faults[N].FIELD".
	var sweepFields []string
	for _, f := range faults.FieldNames {
		if sweepable(f) {
			sweepFields = append(sweepFields, f)
		}
	}
	sweepF := tableField(`sweep."faults[N].FIELD"`)
	sweep := obj{"type": "object", "description": describe(tableField("sweep")),
		"properties":           obj{"clients": fieldSchema(tableField("sweep.clients"))},
		"patternProperties":    obj{`^faults\[(0|[1-9][0-9]{0,5})\]\.(` + strings.Join(sweepFields, "|") + `)$`: obj{"type": "array", "minItems": 1, "description": describe(sweepF)}},
		"additionalProperties": false}

	// expect: lock or label -> conditions.
	conds := obj{}
	for _, f := range expectRows() {
		_, name := splitPath(f.Path)
		s := fieldSchema(f)
		if f.Kind == KindCondition && IsGate(name) {
			s["$ref"] = "#/$defs/realCondition"
		}
		conds[name] = s
	}
	expect := obj{"type": "object", "description": describe(tableField("expect")),
		"additionalProperties": obj{"type": "object", "properties": conds, "additionalProperties": false}}

	top := sectionSchema("", obj{
		"locks":  obj{"type": "array", "minItems": 1, "items": lockItem, "description": describe(tableField("locks"))},
		"faults": obj{"type": "array", "items": obj{"anyOf": faultItems}, "description": describe(tableField("faults"))},
		"sweep":  sweep,
		"expect": expect,
	})
	top["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	top["title"] = "locklab scenario"
	top["description"] = "A locklab scenario file (docs/scenario-file.md). Generated from the field table in scenarios/fields.go; do not edit."
	top["$defs"] = obj{
		// YAML reads a bare 0 as a number: the one integer duration.
		"duration": obj{"anyOf": []any{obj{"type": "string", "pattern": durationPattern}, obj{"const": 0}},
			"description": "a Go duration: 500ms, 2s, 1m30s"},
		"signedDuration": obj{"type": "string", "pattern": signedPattern,
			"description": "a Go duration, negative allowed, not 0: 30s, -5s"},
		"condition": obj{"type": []string{"string", "integer"}, "pattern": conditionPattern, "minimum": 0,
			"description": "a count condition: 0, N, \">0\", \">=N\", \"<N\", \"<=N\" or \"==N\""},
		"realCondition": obj{"type": []string{"string", "number"}, "pattern": realCondPattern, "minimum": 0,
			"description": "a condition on a measured figure: N, \">N\", \">=N\", \"<N\", \"<=N\" or \"==N\", N a decimal number"},
	}
	return top
}

// TestResultsDoc requires docs/results.md (written by hand) to name every
// JSON field of result.json's types in report/result.go, read from the
// source so the test needs no import of report.
func TestResultsDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/results.md")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := goparser.ParseFile(fset, "../report/result.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	types := []string{"Result", "Host", "Workload", "Run", "Latency", "TimelineBucket", "ViolationEvent",
		"FaultWindow", "IncidentEvent", "Expectation"}
	found := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || !slices.Contains(types, ts.Name.Name) {
			return true
		}
		found[ts.Name.Name] = true
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		for _, field := range st.Fields.List {
			if field.Tag == nil {
				continue
			}
			tag, _ := strconv.Unquote(field.Tag.Value)
			name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			named := bytes.Contains(doc, []byte("`"+name+"`")) || bytes.Contains(doc, []byte("`"+name+"[]`"))
			if name != "" && name != "-" && !named {
				t.Errorf("docs/results.md does not name %s's field `%s`", ts.Name.Name, name)
			}
		}
		return false
	})
	for _, typ := range types {
		if !found[typ] {
			t.Errorf("report/result.go has no type %s any more: update this test and docs/results.md", typ)
		}
	}
}
