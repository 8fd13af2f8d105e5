package scenarios

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong in a scenario file.
type Problem struct {
	File  string // as given to Parse or Load ("scenarios/x.yaml", "builtin:x")
	Line  int    // 1-based; 0 when no line applies (unreadable file)
	Field string // dotted path: "workload.clients", "locks[2].ttl", "faults[0].node"; "" for YAML syntax
	Msg   string // what is wrong and what is allowed
}

// String formats the problem as "file:line: field: msg", leaving out the
// parts that are empty.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error is every problem found in one scenario file. Parse and Load return it
// (as *Error) for any invalid file, YAML syntax errors included, so callers
// can get at the list with errors.As. Problems are sorted by line.
type Error struct {
	File     string
	Problems []Problem
}

// Error prints one problem per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// problems collects what is wrong with a file while it is parsed.
type problems struct {
	file string
	list []Problem
	seen map[string]bool
}

func (ps *problems) add(line int, field, format string, args ...any) {
	p := Problem{File: ps.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	s := p.String()
	if ps.seen == nil {
		ps.seen = map[string]bool{}
	}
	if ps.seen[s] {
		return
	}
	ps.seen[s] = true
	ps.list = append(ps.list, p)
}

// tabMsg replaces yaml's "found character that cannot start any token" (or
// its other words) when a tab in a line's indentation caused the error.
const tabMsg = "a tab character: YAML indentation must use spaces"

// tabHint rewrites each YAML syntax problem that a tab in the indentation
// of its line, of a line before it, or of the next line (yaml.v3 blames
// the line before for "found a tab character that violates indentation")
// explains: it names that line.
func (ps *problems) tabHint(data []byte) {
	for i, p := range ps.list {
		if p.Field != "" || !strings.HasPrefix(p.Msg, "yaml: ") {
			continue
		}
		upto := p.Line
		if upto > 0 {
			upto++
		}
		if line := tabIndented(data, upto); line > 0 {
			ps.list[i].Line, ps.list[i].Msg = line, tabMsg
		}
	}
}

// tabIndented returns the first line, up to line upto (every line when
// upto is 0), whose indentation holds a tab; 0 when none does. Blank lines
// do not count.
func tabIndented(data []byte, upto int) int {
	for i, l := range bytes.Split(data, []byte("\n")) {
		if upto > 0 && i+1 > upto {
			break
		}
		text := bytes.TrimLeft(l, " \t")
		if len(bytes.TrimSpace(text)) > 0 && bytes.IndexByte(l[:len(l)-len(text)], '\t') >= 0 {
			return i + 1
		}
	}
	return 0
}

// err returns nil without problems, else an *Error sorted by line.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	list := append([]Problem(nil), ps.list...)
	sort.SliceStable(list, func(i, j int) bool { return list[i].Line < list[j].Line })
	return &Error{File: ps.file, Problems: list}
}
