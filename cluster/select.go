package cluster

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Group names usable in link selectors.
const (
	// Clients stands for every client ("clients->redis-0").
	Clients = "clients"
	// RedisPeers is the source of a Redis node's fallback peer link
	// ("redis-peers->redis-0"): connections to the node's peer address
	// whose sender its demultiplexer could not name (cluster/backends/redis). As a
	// selector end it also matches every peer link into the node
	// (replication, sentinels), as a table backend's Fallback does.
	RedisPeers = "redis-peers"
)

func isClient(name string) bool {
	rest, ok := strings.CutPrefix(name, "client-")
	if !ok {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// matchEnd reports whether a selector end (a node, a client, "clients")
// matches a link end.
func matchEnd(sel, end string) bool {
	return sel == end || (sel == Clients && isClient(end))
}

// Links returns the links a selector names (contract: docs/faults.md):
//
//	"client-3->redis-0"    one link
//	"clients->redis-0"     every client's link to redis-0
//	"redis-0-r0->redis-0"  a peer link (replication)
//	"zk-1->zk-0"           a ZooKeeper peer link (connections zk-1 opens to zk-0)
//	"etcd-1->etcd-0"       an etcd peer link (connections etcd-1 opens to etcd-0;
//	                       local provider)
//	"etcd-peers->etcd-0"   connections from the other etcd members to etcd-0:
//	                       every pair link into etcd-0 and the link for
//	                       senders the demultiplexer could not name
//	"sentinel-1->redis-0"  Sentinel's connections to a Redis server
//	"sentinel-1->sentinel-0" one sentinel's connections to another
//	"redis-0->redis-0-r0"  replication after a failover (with sentinels: every
//	                       server of a master group to every other one)
//	"redis-peers->redis-0" every peer connection into redis-0: its replicas',
//	                       sentinels' and other servers' pair links, and the
//	                       link for senders the demultiplexer could not name
//	"redis-0"              every link touching redis-0, both directions
//	"client-3", "clients"  every link of that client / of every client
//
// "A->B" matches links from A to B where A and B are each "clients", a client
// or a node name. A selector matching nothing is an error that lists the
// links there are.
func (c *Cluster) Links(selector string) ([]*Link, error) {
	sel := strings.TrimSpace(selector)
	all := c.AllLinks()
	var out []*Link
	if a, b, ok := strings.Cut(sel, "->"); ok {
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		for _, l := range all {
			if c.matchFrom(a, l) && matchEnd(b, l.To) {
				out = append(out, l)
			}
		}
	} else {
		for _, l := range all {
			if c.matchFrom(sel, l) || matchEnd(sel, l.To) {
				out = append(out, l)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cluster: no link matches %q; links: %s%s", selector,
			c.describeLinks(all), c.selectorHint(sel))
	}
	return out, nil
}

// matchFrom reports whether a selector's source end matches l's: as
// matchEnd, and a fallback source ("redis-peers", "etcd-peers") also
// matches a link between two nodes of its backend.
func (c *Cluster) matchFrom(sel string, l *Link) bool {
	if matchEnd(sel, l.From) {
		return true
	}
	of := FallbackKinds(sel)
	return of != nil && of(c.kindOf(l.From)) && of(c.kindOf(l.To))
}

// kindOf is the kind of node name, "" for no node.
func (c *Cluster) kindOf(name string) string {
	n, ok := c.Node(name)
	if !ok {
		return ""
	}
	return n.Kind
}

// FallbackKinds returns, for a fallback link source (RedisPeers, a table
// backend's Fallback such as "etcd-peers"), whether a node kind belongs to
// the backend whose unnamed peer connections it carries; nil when sel is
// no fallback source.
func FallbackKinds(sel string) func(kind string) bool {
	for _, b := range Backends() {
		if b.Fallback == sel {
			return func(kind string) bool {
				return slices.ContainsFunc(b.Kinds, func(k TableKind) bool { return k.Kind == kind })
			}
		}
	}
	return nil
}

// IsFallback reports whether name is a fallback link source
// ("redis-peers", "etcd-peers"): the source of links only, no node.
func IsFallback(name string) bool { return FallbackKinds(name) != nil }

// pairSenders are the nodes with a peer link to node: the possible senders
// its fallback link ("etcd-peers->", "redis-peers->") stands in for.
func (c *Cluster) pairSenders(node string) []string {
	var out []string
	to := c.kindOf(node)
	for _, l := range c.AllLinks() {
		if l.To != node {
			continue
		}
		if b, ok := BackendOfKind(c.kindOf(l.From)); ok && b.Fallback != "" && FallbackKinds(b.Fallback)(to) {
			out = append(out, l.From)
		}
	}
	return out
}

// hasPairs reports whether node has peer links per directed pair.
func (c *Cluster) hasPairs(node string) bool { return len(c.pairSenders(node)) > 0 }

// Partition returns the links to cut so that no connection crosses between
// groups: every link whose two ends are in different groups. Members are
// node names, client names or "clients"; nodes in no group keep all their
// links.
//
// Pair links ("etcd-1->etcd-0", "sentinel-1->redis-0", "redis-0-r0->redis-0")
// follow that rule. A node's fallback link ("etcd-peers->etcd-0",
// "redis-peers->redis-0"), whose sender is unknown, is cut when every node
// with a pair link into it is in another group than the node (isolating it
// from all its peers), and left alone otherwise (it carries next to
// nothing: see peers.go).
func (c *Cluster) Partition(groups [][]string) ([]*Link, error) {
	groupOf := func(end string) int {
		for i, g := range groups {
			for _, m := range g {
				if matchEnd(m, end) {
					return i
				}
			}
		}
		return -1
	}
	known := map[string]bool{Clients: true}
	for _, n := range c.Nodes() {
		known[n.Name] = true
	}
	for _, g := range groups {
		for _, m := range g {
			if !known[m] && !(isClient(m) && c.clientIndex(m) < c.spec.Clients) {
				return nil, fmt.Errorf("cluster: partition: unknown node %q", m)
			}
		}
	}
	var out []*Link
	for _, l := range c.AllLinks() {
		gt := groupOf(l.To)
		if IsFallback(l.From) {
			if gt < 0 || !c.hasPairs(l.To) {
				continue
			}
			across := true
			for _, s := range c.pairSenders(l.To) {
				if gs := groupOf(s); gs < 0 || gs == gt {
					across = false
				}
			}
			if across {
				out = append(out, l)
			}
			continue
		}
		gf := groupOf(l.From)
		if gf >= 0 && gt >= 0 && gf != gt {
			out = append(out, l)
		}
	}
	return out, nil
}

func (c *Cluster) clientIndex(name string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "client-"))
	return i
}

// describeLinks lists links compactly: client links folded into
// "client-<0..N-1>->X".
func (c *Cluster) describeLinks(all []*Link) string {
	var peer []string
	clientTo := map[string]bool{}
	var targets []string
	for _, l := range all {
		if isClient(l.From) {
			if !clientTo[l.To] {
				clientTo[l.To] = true
				targets = append(targets, l.To)
			}
			continue
		}
		peer = append(peer, l.Name)
	}
	sort.Strings(peer)
	var parts []string
	if len(targets) > 0 {
		parts = append(parts, fmt.Sprintf("client-<0..%d>->{%s}", c.spec.Clients-1, strings.Join(targets, ",")))
	}
	parts = append(parts, peer...)
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

func (c *Cluster) selectorHint(sel string) string {
	a, b, _ := strings.Cut(sel, "->")
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if na, ok := c.Node(a); ok && na.Kind == KindRedis {
		if nb, ok := c.Node(b); ok && nb.Kind == KindReplica {
			return "; a server dials another only as its replica: the replication link is " + b + "->" + a +
				" (links in both directions between the servers of a master group exist with sentinels only)"
		}
	}
	return ""
}
