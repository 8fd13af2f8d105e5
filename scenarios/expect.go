package scenarios

// The expect section.

import (
	"strings"

	"github.com/locklab/locklab/internal/suggest"
)

func (p *parser) expect(e entry) {
	es, _ := p.mapping(e.val, "expect")
	known := map[string]bool{"default": true}
	var names []string
	for _, l := range p.s.Locks {
		for _, k := range []string{l.Label, l.Name} {
			if k != "" && !known[k] {
				known[k] = true
				names = append(names, k)
			}
		}
	}
	fencing := p.s.Resource.Fencing
	for _, x := range es {
		path := join("expect", x.name)
		if !known[x.name] {
			p.add(x.key.Line, path, "no lock or label %q in locks (known: default, %s)%s", x.name, strings.Join(names, ", "), suggest.Hint(x.name, append([]string{"default"}, names...)))
		}
		f, _ := p.fields(x.val, path, expectFields)
		ex := Expect{Line: x.key.Line}
		p.optInt(f, path, "min_visits", 0, &ex.MinVisits)
		for _, name := range expectFields {
			fe, ok := f[name]
			if !ok || name == "min_visits" {
				continue
			}
			field := join(path, name)
			parse, hint := ParseCondition, conditionHint
			if IsGate(name) {
				parse, hint = ParseRealCondition, realConditionHint
			}
			s, msg := scalar(fe.val, "a condition ("+hint+")")
			if msg != "" {
				p.add(fe.line(), field, "%s", msg)
				continue
			}
			c, err := parse(s)
			if err != nil {
				p.add(fe.line(), field, "%v", err)
				continue
			}
			if name == "availability_during_fault" {
				if c.N > 1 {
					p.add(fe.line(), field, "%s: availability is a fraction, N within 0..1", c)
					continue
				}
				if len(p.faults) == 0 {
					p.add(fe.line(), field, "the scenario has no faults: availability is measured during fault windows only")
					continue
				}
			}
			if name == "stale_rejected" && fencing != "enforce" && !c.Check(0) {
				p.add(fe.line(), field, "%s can never hold: tokens are only rejected with resource.fencing: enforce (fencing is %s)", c, fencing)
			}
			if dst := ex.field(name); dst != nil {
				*dst = c.String()
			}
		}
		if p.s.Expect == nil {
			p.s.Expect = map[string]Expect{}
		}
		p.s.Expect[x.name] = ex
	}
}
