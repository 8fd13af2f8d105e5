package scenarios

// Fault validation: which fields each fault type takes comes from the
// fault table, everything else from faults.Check against the cluster's
// plan; this file only maps its errors to file:line: field.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
)

// checkFault validates one fault: the fields its type takes and requires
// (faults.Type.Fields, Values), then, when those are sound and the
// cluster section was read without errors, faults.Check against the
// cluster's plan.
func (p *parser) checkFault(fi *faultInfo) {
	spec, ok := faults.Lookup(fi.f.Type)
	if !ok {
		return
	}
	f := &fi.f
	typ := f.Type
	allowed := spec.Fields()
	names := slices.Sorted(maps.Keys(fi.has))
	sound := len(fi.bad) == 0
	for _, name := range names {
		if slices.Contains(allowed, name) {
			continue
		}
		at := fi.has[name]
		if name == "for" {
			p.add(at.line, at.field, "a %s fault does not heal, so it takes no for (allowed: %s)", typ, strings.Join(allowed, ", "))
		} else {
			p.add(at.line, at.field, "not a field of a %s fault (allowed: %s)", typ, strings.Join(allowed, ", "))
		}
	}
	has := func(name string) bool { _, ok := fi.has[name]; return ok }
	if !has("at") {
		p.add(fi.line, join(fi.path, "at"), "required by a %s fault (when it starts, counted from the workload's start, e.g. at: 5s)", typ)
		sound = false
	}
	for _, v := range spec.Values {
		if v.Required && !has(v.Name) {
			p.add(fi.line, join(fi.path, v.Name), "required by a %s fault (%s)", typ, v.Hint)
			sound = false
		}
	}
	if at, ok := fi.has["at"]; ok && !fi.bad["at"] {
		if d := p.s.Workload.Duration; d > 0 && f.At >= d {
			p.add(at.line, at.field, "%s is not before the workload ends (workload.duration %s)", f.At, d)
		}
	}
	if at, ok := fi.has["for"]; ok && !fi.bad["for"] && spec.Heals && f.For == 0 {
		p.add(at.line, at.field, "must be > 0 (got %s); leave for out to last until the end", f.For)
	}
	if !sound || p.plan == nil {
		return
	}
	// pause-client implies process_per_client (checkFaults sets it).
	for _, e := range unjoin(faults.Check(*p.plan, true, []faults.Fault{*f})) {
		var fe *faults.FieldError
		if !errors.As(e, &fe) {
			p.add(fi.line, fi.path, "%v", e)
			continue
		}
		line, field := p.faultField(fi, fe.Field)
		p.add(line, field, "%s", strings.TrimSuffix(fe.Err.Error(), ": "+faults.ErrUnsupported.Error()))
	}
}

// faultField is where a faults.FieldError's field was written: the field
// itself (for a swept value its place in sweep:), a member of groups, or
// the fault when it was not written.
func (p *parser) faultField(fi *faultInfo, field string) (int, string) {
	var g, m int
	if _, err := fmt.Sscanf(field, "groups[%d][%d]", &g, &m); err == nil && g < len(fi.groupLines) && m < len(fi.groupLines[g]) {
		return fi.groupLines[g][m], index(index(fi.has["groups"].field, g), m)
	}
	if at, ok := fi.has[field]; ok {
		return at.line, at.field
	}
	if field == "" {
		return fi.line, fi.path
	}
	return fi.line, join(fi.path, field)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// checkFaults validates every fault against the cluster's plan. A fault
// with swept fields is checked once per swept value (the other swept
// fields at their first value), and problems with a swept value are
// reported at the value in sweep:.
func (p *parser) checkFaults() {
	if !p.clusterBad {
		plan := cluster.PlanOf(p.s.ClusterSpec(p.fewestClients()))
		p.plan = &plan
	}
	var params []SweepParam
	if p.s.Sweep != nil {
		params = p.s.Sweep.Params
	}
	for i := range p.faults {
		fi := &p.faults[i]
		var mine []int
		for k, sp := range params {
			if sp.Fault == i {
				mine = append(mine, k)
			}
		}
		if len(mine) == 0 {
			p.checkFault(fi)
			continue
		}
		base := fi.clone()
		for _, k := range mine {
			sp := params[k]
			for j, v := range p.sweepVals[k] {
				if setFaultField(&base.f, sp.Field, v) == "" {
					base.has[sp.Field] = pos{v.Line, index("sweep.faults["+strconv.Itoa(i)+"]."+sp.Field, j)}
					delete(base.bad, sp.Field)
					break
				}
			}
		}
		for _, k := range mine {
			sp := params[k]
			for j, v := range p.sweepVals[k] {
				inst := base.clone()
				field := index("sweep.faults["+strconv.Itoa(i)+"]."+sp.Field, j)
				if msg := setFaultField(&inst.f, sp.Field, v); msg != "" {
					p.add(v.Line, field, "%s", msg)
					continue
				}
				inst.has[sp.Field] = pos{v.Line, field}
				delete(inst.bad, sp.Field)
				p.checkFault(&inst)
			}
		}
	}
	for _, fi := range p.faults {
		f := fi.f
		f.Line = fi.line
		p.s.Faults = append(p.s.Faults, f)
		if f.Type == FaultPauseClient {
			// pause-client implies process_per_client, even
			// over an explicit false (the design's own example has one).
			p.s.Workload.ProcessPerClient = true
		}
	}
}

// unknownClients stands for the clients of a workload section with errors:
// enough that no client-N a fault names is refused for it.
const unknownClients = 1024

// fewestClients is the fewest clients any run of the scenario has (sweeps
// included): client-N must be below it.
func (p *parser) fewestClients() int {
	if !p.clientsOK {
		return unknownClients
	}
	n := p.s.Workload.Clients
	if sw := p.s.Sweep; sw != nil && len(sw.Clients) > 0 {
		n = sw.Clients[0]
		for _, c := range sw.Clients {
			n = min(n, c)
		}
	}
	return n
}
