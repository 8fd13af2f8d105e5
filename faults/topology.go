package faults

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/locklab/locklab/cluster"
)

// kindClient is the kind topology gives clients, "clients", holder and
// waiters.
const kindClient = "client"

// topology is what Check and Run need to know about a cluster: its plan
// (cluster.PlanOf: nodes, proxied links, clients, provider) and whether
// clients run as their own processes. Check takes the plan of a spec
// before anything starts, Run the plan the running cluster was built from.
type topology struct {
	cluster.Plan
	processPerClient bool
}

// topologyOf is the topology of a running cluster.
func topologyOf(c *cluster.Cluster, processPerClient bool) *topology {
	return &topology{c.Plan(), processPerClient}
}

// names are the server nodes in cluster order.
func (t *topology) names() []string {
	out := make([]string, len(t.Nodes))
	for i, n := range t.Nodes {
		out[i] = n.Name
	}
	return out
}

// clientIndex reads "client-N"; ok is false for anything else.
func clientIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "client-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0 && strconv.Itoa(i) == rest
}

// kind returns the kind of a node name: a cluster.Kind* for servers and
// leader selectors (zk-leader is a ZooKeeper node when the cluster has
// any), kindClient for clients, "clients", holder and waiters (which
// needs a second client).
func (t *topology) kind(name string) (string, bool) {
	if name == cluster.Clients || name == Holder {
		return kindClient, true
	}
	if name == Waiters {
		return kindClient, t.Clients >= 2
	}
	if k, ok := leaderKinds()[name]; ok {
		return k, t.Count(k) > 0
	}
	if i, ok := clientIndex(name); ok {
		return kindClient, i < t.Clients
	}
	k := t.Kind(name)
	return k, k != ""
}

// known returns an error naming the nodes there are when name is none.
func (t *topology) known(name string) (string, error) {
	k, ok := t.kind(name)
	if !ok {
		return "", fmt.Errorf("no node %q (nodes: %s)", name, t.describe())
	}
	return k, nil
}

func (t *topology) describe() string {
	out := t.names()
	out = append(out, cluster.Clients)
	if t.Clients == 1 {
		out = append(out, "client-0")
	} else {
		out = append(out, fmt.Sprintf("client-0..client-%d", t.Clients-1))
	}
	out = append(out, Holder)
	for _, sel := range leaderNames() {
		if t.Count(leaderKinds()[sel]) > 0 {
			out = append(out, sel)
		}
	}
	return strings.Join(out, ", ")
}

// matchEnd reports whether a selector end matches a link end; holder
// matches client-0 (every client has the same links; which one holds the
// lock is known only when the fault starts), waiters every client (any may
// be one).
func matchEnd(sel, end string) bool {
	if sel == end {
		return true
	}
	_, isClient := clientIndex(end)
	switch sel {
	case cluster.Clients, Waiters:
		return isClient
	case Holder:
		return end == "client-0"
	}
	return false
}

// match returns the links a selector names, as cluster.Links does; a
// leader selector matches the links of every member that may lead.
func (t *topology) match(sel string) []cluster.PlanLink {
	var out []cluster.PlanLink
	a, b, arrow := strings.Cut(sel, "->")
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	for _, l := range t.Links {
		if arrow && t.matchFrom(a, l) && t.matchEnd(b, l.To) ||
			!arrow && (t.matchFrom(sel, l) || t.matchEnd(sel, l.To)) {
			out = append(out, l)
		}
	}
	return out
}

// matchEnd is matchEnd with leader selectors: zk-leader matches any
// ZooKeeper member.
func (t *topology) matchEnd(sel, end string) bool {
	if k, ok := leaderKinds()[sel]; ok {
		return t.Kind(end) == k
	}
	return matchEnd(sel, end)
}

// matchFrom matches a selector's source end: as matchEnd, and a fallback
// source (redis-peers, etcd-peers) also matches a link between two nodes
// of its backend (cluster.Links does the same).
func (t *topology) matchFrom(sel string, l cluster.PlanLink) bool {
	if t.matchEnd(sel, l.From) {
		return true
	}
	of := cluster.FallbackKinds(sel)
	return of != nil && of(t.Kind(l.From)) && of(t.Kind(l.To))
}

// isolateGroups are the groups of "isolate: x": x against every other
// server and, unless x is a client, every client.
func (t *topology) isolateGroups(x string) [][]string {
	var rest []string
	for _, n := range t.names() {
		if n != x {
			rest = append(rest, n)
		}
	}
	if k, _ := t.kind(x); k != kindClient {
		rest = append(rest, cluster.Clients)
	}
	return [][]string{{x}, rest}
}
