package scenarios

// Node and link names (DESIGN.md §3, contract) checked against the cluster a
// scenario describes.

import (
	"fmt"
	"strconv"
	"strings"
)

// nodeKind is a bit set of node kinds, so a fault can say which it accepts.
type nodeKind uint16

const (
	kPrimary    nodeKind = 1 << iota // redis-N
	kReplica                         // redis-N-rM
	kSentinel                        // sentinel-N
	kZK                              // zk-N
	kEtcd                            // etcd-N
	kClients                         // clients: every client
	kClient                          // client-N
	kHolder                          // holder: the client in the critical section
	kEtcdPeers                       // etcd-peers: every etcd member, as a link source only
	kZKLeader                        // zk-leader: the ZooKeeper member leading when the fault starts
	kEtcdLeader                      // etcd-leader: the etcd member leading when the fault starts
	kRedisPeers                      // redis-peers: a Redis node's peers, as a link source only

	kServer    = kPrimary | kReplica | kSentinel | kZK | kEtcd
	kAnyClient = kClients | kClient | kHolder
	kAny       = kServer | kAnyClient
)

// describe names the kinds in k for messages.
func (k nodeKind) describe() string {
	var out []string
	for _, d := range []struct {
		k    nodeKind
		name string
	}{
		{kPrimary, "redis-N"}, {kReplica, "redis-N-rM"}, {kSentinel, "sentinel-N"},
		{kZK, "zk-N"}, {kEtcd, "etcd-N"}, {kClients, "clients"}, {kClient, "client-N"}, {kHolder, "holder"},
		{kEtcdPeers, "etcd-peers"}, {kZKLeader, "zk-leader"}, {kEtcdLeader, "etcd-leader"}, {kRedisPeers, "redis-peers"},
	} {
		if k&d.k != 0 {
			out = append(out, d.name)
		}
	}
	return strings.Join(out, ", ")
}

// node is a parsed node name.
type node struct {
	kind nodeKind
	i    int // index; for a replica the index of its primary
	j    int // replica index
}

// parseNode reads a node name; ok is false when it is not one.
func parseNode(s string) (node, bool) {
	switch s {
	case "clients":
		return node{kind: kClients}, true
	case "holder":
		return node{kind: kHolder}, true
	case "etcd-peers":
		return node{kind: kEtcdPeers}, true
	case "redis-peers":
		return node{kind: kRedisPeers}, true
	case "zk-leader":
		return node{kind: kZKLeader}, true
	case "etcd-leader":
		return node{kind: kEtcdLeader}, true
	}
	num := func(s string) (int, bool) {
		if s == "" || (len(s) > 1 && s[0] == '0') || len(s) > 6 {
			return 0, false
		}
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	for _, p := range []struct {
		prefix string
		kind   nodeKind
	}{{"sentinel-", kSentinel}, {"zk-", kZK}, {"etcd-", kEtcd}, {"client-", kClient}} {
		if rest, ok := strings.CutPrefix(s, p.prefix); ok {
			n, ok := num(rest)
			return node{kind: p.kind, i: n}, ok
		}
	}
	if rest, ok := strings.CutPrefix(s, "redis-"); ok {
		prim, repl, isReplica := strings.Cut(rest, "-r")
		i, ok := num(prim)
		if !ok {
			return node{}, false
		}
		if !isReplica {
			return node{kind: kPrimary, i: i}, true
		}
		j, ok := num(repl)
		return node{kind: kReplica, i: i, j: j}, ok
	}
	return node{}, false
}

// leaderOf maps a leader selector's kind to the kind of the members it
// stands for.
var leaderOf = map[nodeKind]nodeKind{kZKLeader: kZK, kEtcdLeader: kEtcd}

// base is the kind a node name acts as: a leader selector's members' kind,
// else its own.
func (n node) base() nodeKind {
	if k, ok := leaderOf[n.kind]; ok {
		return k
	}
	return n.kind
}

// isLeader reports whether n is a leader selector.
func (n node) isLeader() bool { _, ok := leaderOf[n.kind]; return ok }

// topology is the set of nodes a scenario's cluster and workload have.
type topology struct {
	external bool
	// etcdPairs: etcd peer links exist per directed pair ("etcd-1->etcd-0",
	// provider local); otherwise only per destination ("etcd-peers->etcd-0").
	etcdPairs bool
	redis     int // primaries
	replicas  int // per primary
	sentinel  int
	zk        int
	etcd      int
	// clients is the fewest clients any run of the scenario has (sweeps
	// included), so client-N must be below it; 0 means unknown (the
	// workload had errors) and client-N is not range-checked.
	clients int
	// unsure holds the kinds whose cluster section had errors: their node
	// names are only checked for their form, not their existence.
	unsure nodeKind
}

func (t *topology) exists(n node) bool {
	switch n.kind {
	case kClients, kHolder:
		return true
	case kClient:
		return t.clients == 0 || n.i < t.clients
	case kZKLeader:
		return t.zk > 0 || t.unsure&kZK != 0
	case kEtcdLeader:
		return t.etcd > 0 || t.unsure&kEtcd != 0
	}
	if t.unsure&n.kind != 0 {
		return true
	}
	switch n.kind {
	case kPrimary:
		return n.i < t.redis
	case kReplica:
		return n.i < t.redis && n.j < t.replicas
	case kSentinel:
		return n.i < t.sentinel
	case kZK:
		return n.i < t.zk
	case kEtcd:
		return n.i < t.etcd
	case kEtcdPeers:
		return t.etcd > 0
	case kRedisPeers:
		return t.redis > 0 || t.unsure&kPrimary != 0
	}
	return false
}

// redisPeers reports whether the Redis nodes have peer addresses, and so
// peer links per directed pair (cluster/redispeers.go): with replicas or
// sentinels, not with provider external.
func (t *topology) redisPeers() bool {
	return !t.external && (t.replicas > 0 || t.sentinel > 0 || t.unsure&(kReplica|kSentinel) != 0)
}

// names lists the topology's node names compactly for messages.
func (t *topology) names() string {
	var out []string
	rng := func(prefix string, n int) {
		switch {
		case n == 1:
			out = append(out, prefix+"0")
		case n == 2:
			out = append(out, prefix+"0", prefix+"1")
		case n > 2:
			out = append(out, fmt.Sprintf("%s0..%s%d", prefix, prefix, n-1))
		}
	}
	rng("redis-", t.redis)
	for i := 0; i < t.redis && t.replicas > 0; i++ {
		if i == 3 {
			out = append(out, fmt.Sprintf("redis-N-r0..redis-N-r%d", t.replicas-1))
			break
		}
		rng(fmt.Sprintf("redis-%d-r", i), t.replicas)
	}
	rng("sentinel-", t.sentinel)
	rng("zk-", t.zk)
	rng("etcd-", t.etcd)
	out = append(out, "clients")
	if t.clients > 0 {
		rng("client-", t.clients)
	} else {
		out = append(out, "client-N")
	}
	out = append(out, "holder")
	if t.zk > 0 {
		out = append(out, "zk-leader")
	}
	if t.etcd > 0 {
		out = append(out, "etcd-leader")
	}
	return strings.Join(out, ", ")
}

// checkNode reads a node name that must be of one of kinds and exist. A
// leader selector is accepted wherever its members' kind is.
func (t *topology) checkNode(s string, kinds nodeKind) (node, string) {
	n, ok := parseNode(s)
	if !ok || !t.exists(n) {
		return n, fmt.Sprintf("no node %q (nodes: %s)", s, t.names())
	}
	if n.base()&kinds == 0 {
		return n, fmt.Sprintf("%q is not one of %s", s, kinds.describe())
	}
	return n, ""
}

// candidates are the members a node name may stand for when a fault
// starts: every member of its kind for a leader selector (one of unknown
// index when the cluster section had errors), else the node itself.
func (t *topology) candidates(n node) []node {
	k, ok := leaderOf[n.kind]
	if !ok {
		return []node{n}
	}
	count := t.zk
	if k == kEtcd {
		count = t.etcd
	}
	if t.unsure&k != 0 || count == 0 {
		return []node{{kind: k, i: -1}}
	}
	out := make([]node, count)
	for i := range out {
		out[i] = node{kind: k, i: i}
	}
	return out
}

// name is a member's node name (a candidate of a leader selector).
func (n node) name() string {
	switch n.kind {
	case kZK:
		return "zk-" + strconv.Itoa(n.i)
	case kEtcd:
		return "etcd-" + strconv.Itoa(n.i)
	}
	return "?"
}

// proxied reports whether the cluster has a proxied link a->b, the
// links faults can act on (the model of package faults, DESIGN.md §3): a
// client to any server; in a Redis topology with replicas or sentinels, a
// replica to its primary (replication connections are the replica's), a
// sentinel to every Redis server and every other sentinel, with sentinels
// every server of a master group to every other one (failovers change
// roles), and redis-peers to any of its nodes; one ZooKeeper member to
// another; etcd-peers to an etcd member, and one etcd member to another.
// With provider external only client links exist. a and b are not leader
// selectors (see candidates).
func (t *topology) proxied(a, b node) bool {
	redisServer := kPrimary | kReplica
	switch {
	case a.isClient():
		return b.base()&kServer != 0
	case t.external:
		return false
	case a.kind == kRedisPeers:
		return t.redisPeers() && b.kind&(redisServer|kSentinel) != 0
	case a.kind == kSentinel:
		return b.kind&redisServer != 0 || b.kind == kSentinel && a.i != b.i
	case a.kind&redisServer != 0:
		if b.kind&redisServer == 0 || a.i != b.i || a == b {
			return false
		}
		if t.sentinel > 0 || t.unsure&kSentinel != 0 {
			return true
		}
		return a.kind == kReplica && b.kind == kPrimary
	case a.kind == kZK:
		return b.kind == kZK && a.i != b.i
	case a.kind == kEtcdPeers:
		return b.base() == kEtcd && (t.etcd > 1 || t.unsure&kEtcd != 0)
	case a.kind == kEtcd:
		return t.etcdPairs && b.kind == kEtcd && a.i != b.i
	}
	return false
}

// cut reports whether separating a and b (in different partition groups)
// cuts a proxied link between them.
func (t *topology) cut(a, b node) bool {
	if a.kind == kEtcd && b.kind == kEtcd && !t.external {
		return a.i != b.i // etcd-peers->b carries a's traffic to b
	}
	return t.proxied(a, b) || t.proxied(b, a)
}

// isClient reports whether n stands for one or more harness clients.
func (n node) isClient() bool { return n.kind&kAnyClient != 0 }

// servers lists every server node of the topology, in cluster order.
func (t *topology) servers() []string {
	var out []string
	for i := 0; i < t.redis; i++ {
		out = append(out, "redis-"+strconv.Itoa(i))
	}
	for i := 0; i < t.redis; i++ {
		for j := 0; j < t.replicas; j++ {
			out = append(out, fmt.Sprintf("redis-%d-r%d", i, j))
		}
	}
	for i := 0; i < t.sentinel; i++ {
		out = append(out, "sentinel-"+strconv.Itoa(i))
	}
	for i := 0; i < t.zk; i++ {
		out = append(out, "zk-"+strconv.Itoa(i))
	}
	for i := 0; i < t.etcd; i++ {
		out = append(out, "etcd-"+strconv.Itoa(i))
	}
	return out
}

const linkRules = "links run from a client to a server, from a replica to its primary, from a sentinel to a Redis " +
	"server or another sentinel, between ZooKeeper members, between etcd members, and from etcd-peers or redis-peers " +
	"to a member or node"

// checkLink reads "A->B" and returns its normalised form, or a message
// saying why the cluster has no such proxied link.
func (t *topology) checkLink(s string) (string, string) {
	a, b, ok := strings.Cut(s, "->")
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if !ok || a == "" || b == "" || strings.Contains(b, "->") {
		return "", fmt.Sprintf("%q is not a link: write A->B, e.g. clients->redis-0", s)
	}
	na, msg := t.checkNode(a, kAny|kEtcdPeers|kRedisPeers)
	if msg != "" {
		return "", msg
	}
	nb, msg := t.checkNode(b, kAny)
	if msg != "" {
		return "", msg
	}
	link := a + "->" + b
	if na.isLeader() && na == nb {
		return "", fmt.Sprintf("no link %s: a link from %s to itself", link, a)
	}
	// With a leader selector, the link must exist for some member that may
	// lead (zk-leader->zk-0 fails when the fault starts only if zk-0 leads).
	for _, ca := range t.candidates(na) {
		for _, cb := range t.candidates(nb) {
			if (ca != cb || ca.i < 0) && t.proxied(ca, cb) {
				return link, ""
			}
		}
	}
	na, nb = t.candidates(na)[0], t.candidates(nb)[0]
	switch {
	case nb.isClient():
		return "", fmt.Sprintf("no link %s: links from a client are written client->server (connections the client opens), e.g. %s->%s", link, b, a)
	case t.external && !na.isClient():
		return "", fmt.Sprintf("no link %s: with provider external only client links exist", link)
	case na.kind == kEtcd && nb.kind == kEtcd && na.i != nb.i:
		return "", fmt.Sprintf("no link %s: etcd peer links are proxied per destination only here; use link: etcd-peers->%s (connections from every other member)", link, b)
	case nb.kind == kSentinel && na.kind != kSentinel:
		return "", fmt.Sprintf("no link %s: Redis servers never dial sentinels; Sentinel's connections are %s->%s", link, b, a)
	case na.kind == kPrimary && nb.kind == kReplica && na.i == nb.i:
		return "", fmt.Sprintf("no link %s: the replication link is %s->%s (connections the replica opens; the primary's "+
			"stream flows back on them); links between the servers of a master group in both directions exist with sentinels only", link, b, a)
	case na.kind == kRedisPeers:
		return "", fmt.Sprintf("no link %s: redis-peers links exist to the Redis nodes of a topology with replicas or sentinels", link)
	case na.kind == kEtcdPeers:
		return "", fmt.Sprintf("no link %s: etcd-peers links exist only to etcd members of a cluster of 3 or 5", link)
	}
	return "", fmt.Sprintf("no link %s (%s)", link, linkRules)
}
