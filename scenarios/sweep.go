package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
)

// Expand returns the runs of a sweep: one scenario per combination of the
// swept values, clients outermost, then the fault parameters in file order
// with the last varying fastest. Each has the values applied, Sweep nil,
// and Variant naming the values ("clients=4 faults[0].for=5s"). A scenario
// without a sweep expands to one copy of itself. Parse has validated every
// value, so Expand cannot fail on a parsed scenario; on a hand-built one a
// value that does not convert leaves the field as it was.
func (s *Scenario) Expand() []*Scenario {
	type dim struct {
		name   string
		values []string
		apply  func(c *Scenario, v string)
	}
	var dims []dim
	if sw := s.Sweep; sw != nil {
		if len(sw.Clients) > 0 {
			vals := make([]string, len(sw.Clients))
			for i, n := range sw.Clients {
				vals[i] = strconv.Itoa(n)
			}
			dims = append(dims, dim{"clients", vals, func(c *Scenario, v string) {
				c.Workload.Clients, _ = strconv.Atoi(v)
			}})
		}
		for _, sp := range sw.Params {
			if len(sp.Values) == 0 || sp.Fault < 0 || sp.Fault >= len(s.Faults) {
				continue
			}
			sp := sp
			dims = append(dims, dim{fmt.Sprintf("faults[%d].%s", sp.Fault, sp.Field), sp.Values, func(c *Scenario, v string) {
				f := c.Faults[sp.Fault]
				if setFaultField(&f, sp.Field, &yaml.Node{Kind: yaml.ScalarNode, Value: v}) == "" {
					c.Faults[sp.Fault] = f
				}
			}})
		}
	}
	if len(dims) == 0 {
		c := s.clone()
		c.Sweep = nil
		return []*Scenario{c}
	}
	var out []*Scenario
	idx := make([]int, len(dims))
	for {
		c := s.clone()
		c.Sweep = nil
		parts := make([]string, len(dims))
		c.Params = make(map[string]string, len(dims))
		for d, i := range idx {
			v := dims[d].values[i]
			dims[d].apply(c, v)
			parts[d] = dims[d].name + "=" + v
			c.Params[dims[d].name] = v
		}
		c.Variant = strings.Join(parts, " ")
		out = append(out, c)
		d := len(dims) - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < len(dims[d].values) {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return out
		}
	}
}

// clone returns a deep copy of s.
func (s *Scenario) clone() *Scenario {
	c := *s
	if r := s.Cluster.Redis; r != nil {
		x := *r
		c.Cluster.Redis = &x
	}
	if s.Cluster.Backends != nil {
		c.Cluster.Backends = map[string]cluster.Settings{}
		for name, set := range s.Cluster.Backends {
			c.Cluster.Backends[name] = maps.Clone(set)
		}
	}
	if e := s.Cluster.External; e != nil {
		c.Cluster.External = &cluster.ExternalSpec{
			Redis: append([]string(nil), e.Redis...),
		}
		for name, addrs := range e.Table {
			if c.Cluster.External.Table == nil {
				c.Cluster.External.Table = map[string][]string{}
			}
			c.Cluster.External.Table[name] = append([]string(nil), addrs...)
		}
	}
	c.Locks = append([]Lock(nil), s.Locks...)
	for i, l := range c.Locks {
		if l.Options != nil {
			o := make(map[string]string, len(l.Options))
			for k, v := range l.Options {
				o[k] = v
			}
			c.Locks[i].Options = o
		}
	}
	c.Faults = append([]Fault(nil), s.Faults...)
	for i, f := range c.Faults {
		if f.Groups != nil {
			g := make([][]string, len(f.Groups))
			for j, grp := range f.Groups {
				g[j] = append([]string(nil), grp...)
			}
			c.Faults[i].Groups = g
		}
	}
	if s.Sweep != nil {
		sw := Sweep{Clients: append([]int(nil), s.Sweep.Clients...)}
		for _, sp := range s.Sweep.Params {
			sp.Values = append([]string(nil), sp.Values...)
			sw.Params = append(sw.Params, sp)
		}
		c.Sweep = &sw
	}
	if s.Expect != nil {
		c.Expect = make(map[string]Expect, len(s.Expect))
		for k, v := range s.Expect {
			c.Expect[k] = v
		}
	}
	return &c
}

func (p *parser) sweep(e entry) {
	es, ok := p.mapping(e.val, "sweep")
	sw := &Sweep{}
	clientsOK := true
	for _, x := range es {
		path := join("sweep", x.name)
		if x.name == "clients" {
			items, _ := p.sequence(x.val, path)
			seen := map[int]bool{}
			for j, it := range items {
				v, msg := asInt(it)
				switch {
				case msg != "":
				case v < 1:
					msg = fmt.Sprintf("must be >= 1 (got %d)", v)
				case seen[v]:
					msg = fmt.Sprintf("duplicate value %d", v)
				}
				if msg != "" {
					p.add(it.Line, index(path, j), "%s", msg)
					clientsOK = false
					continue
				}
				seen[v] = true
				sw.Clients = append(sw.Clients, v)
			}
			if len(items) == 0 {
				p.add(x.line(), path, "needs at least one value, e.g. clients: [1, 4, 16]")
			}
			continue
		}
		m := sweepKeyRE.FindStringSubmatch(x.name)
		if m == nil {
			p.add(x.key.Line, path, `unknown field (allowed: clients, faults[N].FIELD such as "faults[0].for")`)
			continue
		}
		i, _ := strconv.Atoi(m[1])
		field := m[2]
		if i >= len(p.faults) {
			p.add(x.key.Line, path, "no fault %d (faults has %d entries)", i, len(p.faults))
			continue
		}
		if !sweepable(field) {
			var fields []string
			for _, f := range faults.FieldNames {
				if sweepable(f) {
					fields = append(fields, f)
				}
			}
			p.add(x.key.Line, path, "%s cannot be swept (sweepable fault fields: %s)", field, strings.Join(fields, ", "))
			continue
		}
		if spec, ok := faults.Lookup(p.faults[i].f.Type); ok && !slices.Contains(spec.Fields(), field) {
			p.add(x.key.Line, path, "a %s fault has no field %s (allowed: %s)", p.faults[i].f.Type, field, strings.Join(spec.Fields(), ", "))
			continue
		}
		items, _ := p.sequence(x.val, path)
		if len(items) == 0 {
			p.add(x.line(), path, "needs at least one value, e.g. [1s, 5s]")
			continue
		}
		param := SweepParam{Fault: i, Field: field, Line: x.key.Line}
		seen := map[string]bool{}
		var nodes []*yaml.Node
		for j, it := range items {
			v, msg := scalar(it, "a value")
			if msg == "" {
				// Store client and link values the way the fault field
				// stores them, so "client-3" and 3 sweep the same client.
				var f Fault
				if setFaultField(&f, field, it) == "" {
					switch field {
					case "client":
						v = f.Client
					case "link":
						v = f.Link
					}
				}
			}
			if msg == "" && seen[v] {
				msg = fmt.Sprintf("duplicate value %q", v)
			}
			if msg != "" {
				p.add(it.Line, index(path, j), "%s", msg)
				continue
			}
			seen[v] = true
			param.Values = append(param.Values, v)
			nodes = append(nodes, resolve(it))
		}
		if len(nodes) > 0 {
			sw.Params = append(sw.Params, param)
			p.sweepVals = append(p.sweepVals, nodes)
		}
	}
	if !clientsOK {
		p.clientsOK = false
	}
	if ok && len(es) == 0 {
		p.add(e.line(), "sweep", `empty: set clients: [1, 4] and/or "faults[N].FIELD": [values]`)
	}
	runs := max(1, len(sw.Clients))
	for _, sp := range sw.Params {
		runs = min(runs*len(sp.Values), MaxSweepRuns+1)
	}
	if runs > MaxSweepRuns {
		p.add(e.key.Line, "sweep", "more than %d runs per lock (every combination of the values runs); sweep fewer values", MaxSweepRuns)
	}
	if len(sw.Clients) > 0 || len(sw.Params) > 0 {
		p.s.Sweep = sw
	}
}
