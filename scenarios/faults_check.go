package scenarios

// Fault validation against the fault table (package faults) and the cluster's plan, with file:line.

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/locklab/locklab/faults"
)

// checkFault validates one fault against its type and the topology.
func (p *parser) checkFault(fi *faultInfo) {
	spec, ok := faults.Lookup(fi.f.Type)
	if !ok {
		return
	}
	f := &fi.f
	typ := f.Type
	allowed := spec.Fields()
	names := make([]string, 0, len(fi.has))
	for name := range fi.has {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if contains(allowed, name) {
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
	good := func(name string) bool { return has(name) && !fi.bad[name] }
	need := func(name, hint string) bool {
		if !has(name) {
			p.add(fi.line, join(fi.path, name), "required by a %s fault (%s)", typ, hint)
			return false
		}
		return !fi.bad[name]
	}
	at := func(name string) (int, string) { x := fi.has[name]; return x.line, x.field }
	bad := func(name, format string, args ...any) {
		line, field := at(name)
		p.add(line, field, format, args...)
	}

	if need("at", "when it starts, counted from the workload's start, e.g. at: 5s") {
		switch d := p.s.Workload.Duration; {
		case f.At < 0:
			bad("at", "must be >= 0 (got %s)", f.At)
		case d > 0 && f.At >= d:
			bad("at", "%s is not before the workload ends (workload.duration %s)", f.At, d)
		}
	}
	if good("for") && spec.Heals && f.For <= 0 {
		bad("for", "must be > 0 (got %s); leave for out to last until the end", f.For)
	}
	for _, r := range spec.Required {
		need(r, valueHint[r])
	}
	positive := func(name string, v int64, show string) {
		if good(name) && v <= 0 {
			bad(name, "must be > 0 (got %s)", show)
		}
	}
	nonNegative := func(name string, v int64, show string) {
		if good(name) && v < 0 {
			bad(name, "must be >= 0 (got %s)", show)
		}
	}
	// latency 0 is allowed: the baseline point of a latency sweep.
	nonNegative("latency", int64(f.Latency), f.Latency.String())
	nonNegative("jitter", int64(f.Jitter), f.Jitter.String())
	positive("rate_kbps", int64(f.RateKbps), strconv.Itoa(f.RateKbps))
	nonNegative("delay", int64(f.Delay), f.Delay.String())
	positive("offset", int64(f.Offset), f.Offset.String())

	t := &p.topo
	if t.external && !spec.External {
		bad("type", "a %s fault is not possible with provider external, which allows only client-side faults "+
			"(latency, bandwidth, partition and reset on client links; pause-client)", typ)
		return
	}
	switch spec.Target {
	case faults.OnLinkOrNode:
		switch {
		case !has("link") && !has("node"):
			p.add(fi.line, fi.path, "a %s fault needs link: A->B or node: NAME", typ)
		case has("link") && has("node"):
			bad("node", "set link or node, not both")
		case good("link"):
			if _, msg := t.checkLink(f.Link); msg != "" {
				bad("link", "%s", msg)
			}
		case good("node"):
			// A bare node name means every link touching it (docs/faults.md);
			// clients, client-N and holder name the client ends.
			if _, msg := t.checkNode(f.Node, kAny|kClients|kClient|kHolder); msg != "" {
				bad("node", "%s", msg)
			}
		}
	case faults.OnServer:
		if !need("node", "the server it acts on: "+nodeKinds(spec.Kinds).describe()) {
			break
		}
		if _, msg := t.checkNode(f.Node, nodeKinds(spec.Kinds)); msg != "" {
			bad("node", "%s", msg)
			break
		}
		if typ == FaultFailover && t.unsure&kPrimary == 0 {
			if t.sentinel == 0 {
				bad("node", "failover needs Sentinel to promote a replica: set cluster.redis.sentinels (e.g. 3)")
			}
			if t.replicas == 0 {
				bad("node", "failover needs a replica to promote: set cluster.redis.replicas >= 1")
			}
		}
	case faults.OnPartition:
		switch {
		case !has("groups") && !has("isolate"):
			p.add(fi.line, fi.path, "a partition needs groups: [[A, B], [C]] or isolate: NAME")
		case has("groups") && has("isolate"):
			bad("isolate", "set groups or isolate, not both")
		case good("isolate"):
			p.checkIsolate(fi)
		case good("groups"):
			p.checkGroups(fi)
		}
	case faults.OnClient:
		if need("client", "holder or a client index") && f.Client != "holder" {
			if i, _ := strconv.Atoi(f.Client); t.clients > 0 && i >= t.clients {
				bad("client", "no client %d (clients are 0..%d)", i, t.clients-1)
			}
		}
	}
}

// valueHint says what a required value field means, for "required" errors.
var valueHint = map[string]string{
	"latency":   "the delay to add, e.g. latency: 500ms",
	"rate_kbps": "the bandwidth limit in kB/s, e.g. rate_kbps: 64",
	"offset":    "how far the clock jumps forward, e.g. offset: 10s",
}

// member is one node of a partition group.
type member struct {
	n     node
	name  string
	group int
}

// checkIsolate checks isolate: x, which is groups [[x], [every other
// server, and clients unless x is a client]].
func (p *parser) checkIsolate(fi *faultInfo) {
	t := &p.topo
	at := fi.has["isolate"]
	x := fi.f.Isolate
	n, msg := t.checkNode(x, kAny)
	if msg != "" {
		p.add(at.line, at.field, "%s", msg)
		return
	}
	if t.unsure != 0 {
		return // the other servers are not known
	}
	ms := []member{{n, x, 0}}
	for _, s := range t.servers() {
		if s != x {
			o, _ := parseNode(s)
			ms = append(ms, member{o, s, 1})
		}
	}
	if !n.isClient() {
		ms = append(ms, member{node{kind: kClients}, "clients", 1})
	}
	if msg := t.partitionLeaders(ms, 2); msg != "" {
		p.add(at.line, at.field, "%s", msg)
	}
}

// checkGroups checks a partition's groups: known nodes, each in one group,
// and at least one link to cut.
func (p *parser) checkGroups(fi *faultInfo) {
	t := &p.topo
	groups := fi.f.Groups
	at := fi.has["groups"]
	if len(groups) < 2 {
		p.add(at.line, at.field, "needs at least two groups to cut apart (got %d)", len(groups))
		return
	}
	var ms []member
	seen := map[string]int{}
	valid := true
	for i, g := range groups {
		for j, name := range g {
			mline, mfield := fi.groupLines[i][j], index(index(at.field, i), j)
			n, msg := t.checkNode(name, kAny)
			if msg == "" {
				if prev, dup := seen[name]; dup {
					msg = fmt.Sprintf("%s is already in %s", name, index(at.field, prev))
				}
			}
			if msg != "" {
				p.add(mline, mfield, "%s", msg)
				valid = false
				continue
			}
			seen[name] = i
			ms = append(ms, member{n, name, i})
		}
	}
	if !valid {
		return
	}
	if msg := t.partitionLeaders(ms, len(groups)); msg != "" {
		p.add(at.line, at.field, "%s", msg)
	}
}

// partitionLeaders is partition for groups that may name leader selectors:
// they are checked for every member that may lead, as package faults
// resolves them when the fault starts (a selector takes its member out of
// every other place the groups name it). ngroups is the number of groups.
func (t *topology) partitionLeaders(ms []member, ngroups int) string {
	var sels []nodeKind
	for _, m := range ms {
		if m.n.isLeader() && !slices.Contains(sels, m.n.kind) {
			sels = append(sels, m.n.kind)
		}
	}
	if len(sels) == 0 {
		return t.partition(ms)
	}
	choices := []map[nodeKind]node{{}}
	for _, k := range sels {
		var next []map[nodeKind]node
		for _, a := range choices {
			for _, c := range t.candidates(node{kind: k}) {
				b := map[nodeKind]node{k: c}
				for kk, v := range a {
					b[kk] = v
				}
				next = append(next, b)
			}
		}
		choices = next
	}
	for _, a := range choices {
		placed := map[node]bool{}
		for _, c := range a {
			placed[c] = true
		}
		var resolved []member
		seen := map[node]int{}
		size := make([]int, ngroups)
		for _, m := range ms {
			n := m.n
			if c, ok := a[n.kind]; ok {
				n = c
			} else if placed[n] {
				continue // the selector places it
			}
			if g, dup := seen[n]; dup && g == m.group {
				continue
			}
			seen[n] = m.group
			size[m.group]++
			resolved = append(resolved, member{n, n.name(), m.group})
			if !m.n.isLeader() {
				resolved[len(resolved)-1].name = m.name
			}
		}
		var leads []string
		for _, k := range sels {
			if a[k].i >= 0 {
				leads = append(leads, a[k].name())
			}
		}
		when := ""
		if len(leads) > 0 {
			when = "when " + strings.Join(leads, " and ") + " leads: "
		}
		for g, n := range size {
			if n == 0 {
				return fmt.Sprintf("%sgroup %d is empty (a leader selector takes its member out of every other group)", when, g)
			}
		}
		if msg := t.partition(resolved); msg != "" {
			return when + msg
		}
	}
	return ""
}

// partition checks the members of a partition's groups against the
// proxied links and returns what is wrong, or "".
func (t *topology) partition(ms []member) string {
	etcdIn := map[int]int{} // group -> etcd members in it
	for _, m := range ms {
		if m.n.kind == kEtcd {
			etcdIn[m.group]++
		}
	}
	if msg := t.plan.EtcdSplit(etcdIn); msg != "" {
		return msg
	}
	cuts := false
	for a := range ms {
		for b := a + 1; b < len(ms); b++ {
			x, y := ms[a], ms[b]
			if x.group == y.group {
				continue
			}
			switch {
			case x.n.isClient() && y.n.isClient() && (x.n.kind == kClients || y.n.kind == kClients):
				return fmt.Sprintf("%s and %s are in different groups, but clients includes every client", x.name, y.name)
			case t.external && !x.n.isClient() && !y.n.isClient() && x.n.kind == y.n.kind && x.n.kind&(kZK|kEtcd) != 0:
				return fmt.Sprintf("%s and %s are in different groups, but with provider external their peer traffic is not "+
					"proxied: only client links can be cut", x.name, y.name)
			case t.cut(x.n, y.n):
				cuts = true
			}
		}
	}
	if !cuts {
		return fmt.Sprintf("no proxied link runs between the groups, so the partition cuts nothing (%s)", linkRules)
	}
	return ""
}

// checkFaults validates every fault against the topology. A fault with
// swept fields is checked once per swept value (the other swept fields at
// their first value), and problems with a swept value are reported at the
// value in sweep:.
func (p *parser) checkFaults() {
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
