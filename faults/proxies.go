package faults

import (
	"slices"

	"github.com/locklab/locklab/cluster"
)

// ClientProxies returns the servers of plan whose client links the faults
// fs may act on, in plan order, for cluster.Spec.ClientProxies: proxies
// only where a fault can act. A server is in it when any client's link to
// it may be faulted (a latency, bandwidth or reset fault naming the link,
// a client end or the server itself; a partition that may put a client and
// the server in different groups; a restart, whose server may come back on
// another port that only a proxy follows), and then every client's link to
// it is proxied, so no client is slower than its peers before the fault.
// Leader selectors and holder count for every member or client they may
// stand for. With no such fault the result is empty (not nil): clients
// connect directly.
//
// plan is the plan of the cluster's spec with ClientProxies nil (every
// client link proxied).
func ClientProxies(plan cluster.Plan, processPerClient bool, fs []Fault) []string {
	t := &topology{plan, processPerClient}
	need := map[string]bool{}
	for _, f := range fs {
		for _, l := range t.clientLinks(f) {
			need[l.To] = true
		}
	}
	out := []string{}
	for _, n := range t.Nodes {
		if need[n.Name] {
			out = append(out, n.Name)
		}
	}
	return out
}

// clientLinks are the client links of t (every client's, all proxied)
// that f may act on.
func (t *topology) clientLinks(f Fault) []cluster.PlanLink {
	typ, _ := Lookup(f.Type)
	var ls []cluster.PlanLink
	switch {
	case typ.Target == OnLinkOrNode && f.Link != "":
		ls = t.match(f.Link)
	case typ.Target == OnLinkOrNode:
		ls = t.match(f.Node)
	case typ.Target == OnPartition:
		ls = t.crossing(f)
	case f.Type == Restart || f.Type == PowerCut:
		ls = t.match(f.Node)
	}
	var out []cluster.PlanLink
	for _, l := range ls {
		if _, ok := clientIndex(l.From); ok {
			out = append(out, l)
		}
	}
	return out
}

// crossing returns the links of t a partition may cut: those whose ends
// may fall in different groups (isolate expanded; a leader selector may be
// any member, so a member it may stand for is in its group too).
func (t *topology) crossing(f Fault) []cluster.PlanLink {
	groups := f.Groups
	if f.Isolate != "" {
		groups = t.isolateGroups(f.Isolate)
	}
	groupsOf := func(end string) []int {
		var gs []int
		for gi, g := range groups {
			for _, m := range g {
				if t.matchEnd(m, end) || (m == Holder || m == Waiters) && clientEnd(end) {
					gs = append(gs, gi)
				}
			}
		}
		return gs
	}
	var out []cluster.PlanLink
	for _, l := range t.Links {
		from, to := groupsOf(l.From), groupsOf(l.To)
		if slices.ContainsFunc(from, func(a int) bool {
			return slices.ContainsFunc(to, func(b int) bool { return a != b })
		}) {
			out = append(out, l)
		}
	}
	return out
}

func clientEnd(end string) bool { _, ok := clientIndex(end); return ok }
