package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/internal/suggest"
)

// Fault types (contract names: docs/scenario-file.md): package faults owns the fault
// table; these are its names under the spelling scenarios has always
// exported.
const (
	FaultLatency     = faults.Latency
	FaultBandwidth   = faults.Bandwidth
	FaultPartition   = faults.Partition
	FaultReset       = faults.Reset
	FaultPause       = faults.Pause
	FaultKill        = faults.Kill
	FaultRestart     = faults.Restart
	FaultFailover    = faults.Failover
	FaultPauseClient = faults.PauseClient
	FaultClockJump   = faults.ClockJump
)

// sweepable reports whether a fault field can be swept: every scalar field
// except type.
func sweepable(field string) bool {
	return field != "type" && field != "groups" && slices.Contains(faults.FieldNames, field)
}

// pos is where a field of a fault was written: its line and the field path
// to report (for a swept value, the sweep entry).
type pos struct {
	line  int
	field string
}

// faultInfo is a fault as parsed, with what validation needs to know about
// how it was written.
type faultInfo struct {
	f          Fault
	path       string // "faults[2]"
	line       int
	has        map[string]pos  // fields written (or swept)
	bad        map[string]bool // fields whose value did not convert
	groupLines [][]int         // line of each groups member
}

func (fi *faultInfo) clone() faultInfo {
	c := *fi
	c.has = make(map[string]pos, len(fi.has))
	for k, v := range fi.has {
		c.has[k] = v
	}
	c.bad = make(map[string]bool, len(fi.bad))
	for k, v := range fi.bad {
		c.bad[k] = v
	}
	return c
}

// setFaultField converts n into the named scalar field of f (a value
// field as its declaration in the fault table says); it returns a message
// saying what is allowed when n does not fit.
func setFaultField(f *Fault, name string, n *yaml.Node) string {
	durations := map[string]*time.Duration{"at": &f.At, "for": &f.For, "after_enter": &f.AfterEnter, "after_enter_max": &f.AfterEnterMax}
	texts := map[string]*string{"type": &f.Type, "node": &f.Node, "isolate": &f.Isolate, "when": &f.When}
	var msg string
	v, isValue := faults.LookupValue(name)
	switch {
	case isValue:
		var x any
		switch v.Kind {
		case faults.KindDuration:
			x, msg = asDuration(n)
		case faults.KindEnum:
			x, msg = asString(n)
		case faults.KindFactor:
			x, msg = asFloat(n)
		default:
			x, msg = asInt(n)
		}
		if msg == "" {
			if err := f.SetValue(name, x); err != nil {
				msg = err.Error()
			}
		}
	case durations[name] != nil:
		*durations[name], msg = asDuration(n)
	case texts[name] != nil:
		*texts[name], msg = asString(n)
	case name == "link":
		f.Link, msg = asString(n)
		if a, b, ok := strings.Cut(f.Link, "->"); ok {
			f.Link = strings.TrimSpace(a) + "->" + strings.TrimSpace(b)
		}
	case name == "client":
		f.Client, msg = asClient(n)
	default:
		msg = "not a scalar fault field"
	}
	return msg
}

// asClient reads pause-client's client: "holder", an index, or client-N;
// the result is "holder" or the index in decimal.
func asClient(n *yaml.Node) (string, string) {
	s, msg := scalar(n, "holder or a client index")
	if msg != "" {
		return "", msg
	}
	if s == "holder" {
		return s, ""
	}
	if i, err := strconv.Atoi(strings.TrimPrefix(s, "client-")); err == nil && i >= 0 {
		return strconv.Itoa(i), ""
	}
	return "", fmt.Sprintf("must be holder or a client index such as 0 (got %q)", s)
}

// parseFault reads faults[i] without cross-checks.
func (p *parser) parseFault(n *yaml.Node, i int) faultInfo {
	fi := faultInfo{path: index("faults", i), line: n.Line, has: map[string]pos{}, bad: map[string]bool{}}
	es, _ := p.mapping(n, fi.path)
	var spec *faults.Type
	for _, e := range es {
		if e.name == "type" {
			t, ok := get(p, e, join(fi.path, "type"), asString)
			if !ok {
				break
			}
			if s, known := faults.Lookup(t); known {
				spec = &s
				fi.f.Type = t
			} else {
				p.add(e.line(), join(fi.path, "type"), "unknown fault type %q (known: %s)%s", t, strings.Join(faults.Types(), ", "), suggest.Hint(t, faults.Types()))
			}
		}
	}
	for _, e := range es {
		field := join(fi.path, e.name)
		if !slices.Contains(faults.FieldNames, e.name) {
			allowed := faults.FieldNames
			if spec != nil {
				allowed = spec.Fields()
			}
			p.add(e.key.Line, field, "unknown field (allowed: %s)%s", strings.Join(allowed, ", "), suggest.Hint(e.name, allowed))
			continue
		}
		fi.has[e.name] = pos{e.line(), field}
		switch e.name {
		case "type":
			if spec == nil {
				fi.bad["type"] = true
			}
		case "groups":
			if !p.parseGroups(e, &fi) {
				fi.bad["groups"] = true
			}
		default:
			if msg := setFaultField(&fi.f, e.name, e.val); msg != "" {
				p.add(e.line(), field, "%s", msg)
				fi.bad[e.name] = true
			}
		}
	}
	if _, ok := fi.has["type"]; !ok {
		p.add(fi.line, join(fi.path, "type"), "required (one of %s)", strings.Join(faults.Types(), ", "))
	}
	return fi
}

// parseGroups reads a partition's groups: a list of lists of node names.
func (p *parser) parseGroups(e entry, fi *faultInfo) bool {
	path := join(fi.path, "groups")
	items, ok := p.sequence(e.val, path)
	if !ok {
		return false
	}
	fi.f.Groups = nil
	fi.groupLines = nil
	good := true
	for i, g := range items {
		gpath := index(path, i)
		members, ok := p.sequence(g, gpath)
		if !ok {
			good = false
			continue
		}
		var names []string
		var lines []int
		for j, m := range members {
			s, msg := asString(m)
			if msg != "" {
				p.add(m.Line, index(gpath, j), "%s", msg)
				good = false
				continue
			}
			names = append(names, s)
			lines = append(lines, m.Line)
		}
		if len(members) == 0 {
			p.add(g.Line, gpath, "empty group")
			good = false
		}
		fi.f.Groups = append(fi.f.Groups, names)
		fi.groupLines = append(fi.groupLines, lines)
	}
	return good
}
