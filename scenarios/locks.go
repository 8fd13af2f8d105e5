package scenarios

// The locks section: lock entries, their options and labels.

import (
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/internal/suggest"
	"github.com/locklab/locklab/locks"
)

// lockMeta is what validation needs about how a locks entry was written.
type lockMeta struct {
	path     string
	line     int
	spec     locks.Spec
	known    bool
	explicit bool     // label: given
	written  []string // "k=v" of ttl, retry, key and options as written
}

// knownLocks lists the registered lock names for messages.
func knownLocks() string {
	names := locks.Names()
	if len(names) == 0 {
		return "none registered: import github.com/locklab/locklab/locks/all"
	}
	return strings.Join(names, ", ")
}

func (p *parser) lockList(e entry) {
	items, ok := p.sequence(e.val, "locks")
	if ok && len(items) == 0 {
		p.add(e.line(), "locks", "needs at least one lock (known: %s)", knownLocks())
	}
	for i, n := range items {
		p.lock(n, i)
	}
	p.labels()
}

// lookup finds a lock spec, reporting an unknown name at line under field.
func (p *parser) lookup(name string, line int, field string) (locks.Spec, bool) {
	spec, ok := locks.Lookup(name)
	if !ok {
		p.add(line, field, "unknown lock %q (known: %s)%s", name, knownLocks(), suggest.Hint(name, locks.Names()))
	}
	return spec, ok
}

func (p *parser) lock(n *yaml.Node, i int) {
	path := index("locks", i)
	l := Lock{Line: n.Line}
	m := lockMeta{path: path, line: n.Line}
	rn := resolve(n)
	switch {
	case rn.Kind == yaml.ScalarNode && !isNull(rn):
		l.Name = rn.Value
		m.spec, m.known = p.lookup(l.Name, n.Line, path)
	case rn.Kind == yaml.MappingNode:
		es, _ := p.mapping(rn, path)
		var opts []entry
		for _, e := range es {
			if e.name == "name" {
				if name, ok := get(p, e, join(path, "name"), asString); ok {
					l.Name = name
					m.spec, m.known = p.lookup(name, e.line(), join(path, "name"))
				}
			}
		}
		if l.Name == "" {
			if _, named := find(es, "name"); !named {
				p.add(n.Line, join(path, "name"), "required: the lock's name (known: %s)", knownLocks())
			}
		}
		for _, e := range es {
			field := join(path, e.name)
			raw, _ := scalar(e.val, "")
			switch e.name {
			case "name":
			case "ttl", "retry":
				dst := &l.TTL
				if e.name == "retry" {
					dst = &l.Retry
				}
				if v, ok := get(p, e, field, asDuration); ok {
					if v <= 0 {
						p.add(e.line(), field, "must be > 0 (got %s)", v)
					}
					*dst = v
					m.written = append(m.written, e.name+"="+raw)
				}
			case "key":
				if v, ok := get(p, e, field, asString); ok {
					l.Key = v
					m.written = append(m.written, "key="+v)
				}
			case "label":
				if v, ok := get(p, e, field, asString); ok {
					l.Label, m.explicit = v, true
				}
			case "command":
				if l.Name != execName {
					opts = append(opts, e) // reported as an unknown field
					break
				}
				p.execCommand(&l, &m, e, field)
			default:
				opts = append(opts, e)
			}
		}
		p.lockOptions(&l, &m, opts)
	default:
		p.add(n.Line, path, "must be a lock name or {name: NAME, ttl: ..., <options>} (got %s)", kindName(rn))
	}
	p.execLock(&l, &m)
	p.s.Locks = append(p.s.Locks, l)
	p.locks = append(p.locks, m)
}

// lockOptions checks a lock entry's backend options against its spec.
func (p *parser) lockOptions(l *Lock, m *lockMeta, opts []entry) {
	if !m.known {
		return // the name is wrong or missing: nothing to check options against
	}
	allowed := append([]string(nil), lockFields...)
	for _, o := range m.spec.Options {
		allowed = append(allowed, o.Name)
	}
	good := true
	for _, e := range opts {
		field := join(m.path, e.name)
		if !slices.Contains(allowed, e.name) {
			p.add(e.key.Line, field, "unknown field (allowed: %s)%s", strings.Join(allowed, ", "), suggest.Hint(e.name, allowed))
			good = false
			continue
		}
		v, msg := scalar(e.val, "a value")
		if msg == "" {
			msg = checkOption(m.spec, e.name, v)
		}
		if msg != "" {
			p.add(e.line(), field, "%s", msg)
			good = false
			continue
		}
		if l.Options == nil {
			l.Options = map[string]string{}
		}
		l.Options[e.name] = v
		m.written = append(m.written, e.name+"="+v)
	}
	if good && len(l.Options) > 0 {
		if err := m.spec.CheckOptions(l.Options); err != nil {
			p.add(m.line, m.path, "%v", err)
		}
	}
}

// checkOption runs the option's own Check, for a message without the
// "lock x option y:" prefix CheckOptions adds (the field path says that).
func checkOption(spec locks.Spec, name, v string) string {
	for _, o := range spec.Options {
		if o.Name == name && o.Check != nil {
			if err := o.Check(v); err != nil {
				return err.Error()
			}
		}
	}
	return ""
}

func find(es []entry, name string) (entry, bool) {
	for _, e := range es {
		if e.name == name {
			return e, true
		}
	}
	return entry{}, false
}

// labels gives every lock entry its label and checks they are unique.
func (p *parser) labels() {
	ls := p.s.Locks
	count := map[string]int{}
	for _, l := range ls {
		count[l.Name]++
	}
	for i := range ls {
		m := &p.locks[i]
		switch {
		case m.explicit:
		case count[ls[i].Name] > 1 && len(m.written) > 0:
			w := append([]string(nil), m.written...)
			sort.Strings(w)
			ls[i].Label = ls[i].Name + " " + strings.Join(w, " ")
		default:
			ls[i].Label = ls[i].Name
		}
	}
	used := map[string]int{}
	for i, l := range ls {
		if l.Name == "" {
			continue
		}
		m := p.locks[i]
		switch j, dup := used[l.Label]; {
		case l.Label == "default":
			p.add(m.line, m.path, `label "default" is reserved for expect: default; choose another label`)
			continue
		case dup && !m.explicit && !p.locks[j].explicit && ls[j].Name == l.Name:
			p.add(m.line, m.path, "same lock and options as locks[%d]: give one a label: to run both", j)
			continue
		case dup:
			p.add(m.line, m.path, "label %q is already used by locks[%d]", l.Label, j)
			continue
		}
		used[l.Label] = i
		for j, o := range ls {
			if j != i && o.Name == l.Label && l.Name != l.Label {
				p.add(m.line, m.path, "label %q is the name of another lock (locks[%d]), so expect: could not tell them apart", l.Label, j)
				break
			}
		}
	}
}

// lockLine is the line of the first locks entry named name.
func (p *parser) lockLine(name string) int {
	for _, l := range p.s.Locks {
		if l.Name == name {
			return l.Line
		}
	}
	return 0
}
