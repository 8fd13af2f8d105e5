package scenarios

// Reading a yaml.Node tree with line numbers: the document, aliases and merge
// keys, mappings with unknown-field checks, and scalar conversions that
// return a message saying what is allowed.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/internal/suggest"
)

// maxNodes bounds the size of a document with aliases expanded, so a small
// file of nested aliases ("billion laughs") cannot make validation explode.
const maxNodes = 100_000

// readDoc parses data as exactly one YAML document and returns its root
// node, or nil after recording why not.
func readDoc(data []byte, ps *problems) *yaml.Node {
	doc, extra, err := decodeYAML(data)
	if err != nil {
		line, msg := syntaxError(data, err)
		ps.add(line, "", "%s", msg)
		return nil
	}
	if doc == nil || len(doc.Content) == 0 {
		ps.add(1, "", "empty scenario (needs at least name and locks)")
		return nil
	}
	if extra != nil {
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		ps.add(line, "", "a second YAML document: a scenario file holds exactly one (remove the ---)")
		return nil
	}
	root := doc.Content[0]
	if at, msg := checkGraph(root); msg != "" {
		ps.add(at.Line, "", "%s", msg)
		return nil
	}
	return root
}

// decodeYAML returns the first document and, when there is one, the second.
func decodeYAML(data []byte) (doc, extra *yaml.Node, err error) {
	defer func() {
		// yaml.v3 reports errors by panicking internally and recovers
		// them itself; this only guards against a bug in it.
		if r := recover(); r != nil {
			doc, extra, err = nil, nil, fmt.Errorf("yaml: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first yaml.Node
	if err := dec.Decode(&first); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case errors.Is(err, io.EOF):
		return &first, nil, nil
	case err != nil:
		return nil, nil, err
	}
	return &first, &second, nil
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a yaml.v3 error into a line and a message. yaml.v3 puts
// the line in the text ("yaml: line 3: ...") for most errors; for the
// others the line is the first one at which a prefix of the file fails the
// same way.
func syntaxError(data []byte, err error) (int, string) {
	text := strings.SplitN(err.Error(), "\n", 2)[0]
	if m := yamlLineRE.FindStringSubmatch(text); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, "yaml: " + m[2]
	}
	return prefixLine(data, text), text
}

// prefixLine finds the first line whose prefix of the file fails with the
// message want; 0 when none does (or the file is too big to search).
func prefixLine(data []byte, want string) int {
	if len(data) > 64<<10 {
		return 0
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 2000 {
		return 0
	}
	n := 0
	for i, l := range lines {
		n += len(l)
		_, _, err := decodeYAML(data[:n])
		if err != nil && strings.SplitN(err.Error(), "\n", 2)[0] == want {
			return i + 1
		}
	}
	return 0
}

// checkGraph rejects alias cycles ("&a [*a]", which yaml.v3 builds without
// complaint) and documents that expand past maxNodes. It returns the node
// to blame and a message, or "" when the tree is fine.
func checkGraph(root *yaml.Node) (*yaml.Node, string) {
	size := map[*yaml.Node]int{}
	active := map[*yaml.Node]bool{}
	var bad *yaml.Node
	var msg string
	var walk func(n *yaml.Node) int
	walk = func(n *yaml.Node) int {
		if n == nil || msg != "" {
			return 0
		}
		if s, ok := size[n]; ok {
			return s
		}
		if active[n] {
			bad, msg = n, fmt.Sprintf("alias *%s refers to a node that contains it", n.Value)
			return 0
		}
		active[n] = true
		s := 1
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				bad, msg = n, fmt.Sprintf("unknown alias *%s", n.Value)
				return 0
			}
			if active[n.Alias] {
				bad, msg = n, fmt.Sprintf("alias *%s refers to a node that contains it", n.Value)
				return 0
			}
			s += walk(n.Alias)
		}
		for _, c := range n.Content {
			s += walk(c)
			if s > maxNodes {
				break
			}
		}
		active[n] = false
		if s > maxNodes && msg == "" {
			bad, msg = n, fmt.Sprintf("document too large: more than %d nodes with aliases expanded", maxNodes)
		}
		size[n] = s
		return s
	}
	walk(root)
	return bad, msg
}

// resolve follows aliases (checkGraph has ruled out cycles).
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// entry is one key: value of a mapping. val is as written (an alias stays
// an alias, so lines point at the use); use value() to read it.
type entry struct {
	name string
	key  *yaml.Node
	val  *yaml.Node
}

// line is where the entry's value is, falling back to the key's line.
func (e entry) line() int {
	if e.val != nil && e.val.Line > 0 {
		return e.val.Line
	}
	return e.key.Line
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// kindName names a node's kind for messages ("got a list").
func kindName(n *yaml.Node) string {
	switch {
	case n == nil || isNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	default:
		return strconv.Quote(n.Value)
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// mapping returns the entries of a mapping node in file order, merge keys
// (<<: *base) expanded with explicit keys winning. A null node (a section
// written with no content) is an empty mapping.
func (p *parser) mapping(n *yaml.Node, path string) ([]entry, bool) {
	n = resolve(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		p.add(n.Line, path, "must be a mapping of field: value (got %s)", kindName(n))
		return nil, false
	}
	var own, merged []entry
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		rk := resolve(k)
		if rk == nil || rk.Kind != yaml.ScalarNode || isNull(rk) {
			p.add(k.Line, path, "keys must be plain names (got %s)", kindName(rk))
			continue
		}
		if rk.ShortTag() == "!!merge" {
			merged = append(merged, p.mergeEntries(v, path)...)
			continue
		}
		if seen[rk.Value] {
			p.add(k.Line, join(path, rk.Value), "duplicate field")
			continue
		}
		seen[rk.Value] = true
		own = append(own, entry{name: rk.Value, key: k, val: v})
	}
	for _, e := range merged {
		if !seen[e.name] {
			seen[e.name] = true
			own = append(own, e)
		}
	}
	return own, true
}

// mergeEntries reads the value of a merge key: a mapping or a list of them.
func (p *parser) mergeEntries(v *yaml.Node, path string) []entry {
	rv := resolve(v)
	var srcs []*yaml.Node
	switch {
	case rv != nil && rv.Kind == yaml.MappingNode:
		srcs = []*yaml.Node{rv}
	case rv != nil && rv.Kind == yaml.SequenceNode:
		srcs = rv.Content
	default:
		p.add(v.Line, path, "<< must merge a mapping or a list of mappings (got %s)", kindName(rv))
		return nil
	}
	var out []entry
	for _, s := range srcs {
		es, _ := p.mapping(s, path)
		out = append(out, es...)
	}
	return out
}

// fields reads a mapping whose keys must be among allowed and returns its
// entries by name.
func (p *parser) fields(n *yaml.Node, path string, allowed []string) (map[string]entry, bool) {
	es, ok := p.mapping(n, path)
	out := make(map[string]entry, len(es))
	for _, e := range es {
		if !slices.Contains(allowed, e.name) {
			p.add(e.key.Line, join(path, e.name), "unknown field (allowed: %s)%s", strings.Join(allowed, ", "), suggest.Hint(e.name, allowed))
			continue
		}
		out[e.name] = e
	}
	return out, ok
}

// sequence returns the items of a list node; null is an empty list.
func (p *parser) sequence(n *yaml.Node, path string) ([]*yaml.Node, bool) {
	rn := resolve(n)
	if isNull(rn) {
		return nil, true
	}
	if rn.Kind != yaml.SequenceNode {
		p.add(n.Line, path, "must be a list (got %s)", kindName(rn))
		return nil, false
	}
	return rn.Content, true
}

// Scalar conversions: each returns the value or a message saying what is
// allowed. They read only Kind, Value and the resolved tag, so they work on
// nodes built from strings (sweep values) as well as parsed ones.

func scalar(n *yaml.Node, want string) (string, string) {
	n = resolve(n)
	if isNull(n) {
		return "", "missing value (want " + want + ")"
	}
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Sprintf("must be %s (got %s)", want, kindName(n))
	}
	return n.Value, ""
}

func asString(n *yaml.Node) (string, string) {
	s, msg := scalar(n, "a string")
	if msg == "" && strings.TrimSpace(s) == "" {
		return "", "must not be empty"
	}
	return s, msg
}

func asInt(n *yaml.Node) (int, string) {
	v, msg := asInt64(n)
	return int(v), msg
}

func asInt64(n *yaml.Node) (int64, string) { return decodeScalar[int64](n, "an integer", "!!int") }

func asFloat(n *yaml.Node) (float64, string) {
	return decodeScalar[float64](n, "a number", "!!int", "!!float")
}

func asBool(n *yaml.Node) (bool, string) { return decodeScalar[bool](n, "true or false", "!!bool") }

// decodeScalar decodes n, a scalar with one of tags, into a T; what names
// the values it takes in the message.
func decodeScalar[T any](n *yaml.Node, what string, tags ...string) (T, string) {
	var v T
	s, msg := scalar(n, what)
	if msg != "" {
		return v, msg
	}
	n = resolve(n)
	if !slices.Contains(tags, n.ShortTag()) || n.Decode(&v) != nil {
		var zero T
		return zero, fmt.Sprintf("must be %s (got %q)", what, s)
	}
	return v, ""
}

const durationHint = "use e.g. 30s, 500ms, 2m"

func asDuration(n *yaml.Node) (time.Duration, string) {
	s, msg := scalar(n, "a duration ("+durationHint+")")
	if msg != "" {
		return 0, msg
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Sprintf("%q is not a duration (%s)", s, durationHint)
	}
	return d, ""
}

// get converts an entry's value with conv, recording a problem at the
// entry's line under path when it fails.
func get[T any](p *parser, e entry, path string, conv func(*yaml.Node) (T, string)) (T, bool) {
	v, msg := conv(e.val)
	if msg != "" {
		p.add(e.line(), path, "%s", msg)
		return v, false
	}
	return v, true
}

// oneOf returns a conversion accepting only the given strings.
func oneOf(allowed ...string) func(*yaml.Node) (string, string) {
	return func(n *yaml.Node) (string, string) {
		s, msg := scalar(n, "one of "+strings.Join(allowed, ", "))
		if msg != "" {
			return "", msg
		}
		if !slices.Contains(allowed, s) {
			return "", fmt.Sprintf("must be one of %s (got %q)", strings.Join(allowed, ", "), s)
		}
		return s, ""
	}
}
