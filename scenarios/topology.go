package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/locklab/locklab/cluster"
)

// Node and link names (contract: docs/faults.md) checked against the cluster a
// scenario describes.

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

// topology is the set of nodes and proxied links a scenario's cluster and
// workload have: the cluster's plan (cluster.PlanOf, the one model of
// nodes and links), plus what validation must allow for when sections had
// errors.
type topology struct {
	plan     cluster.Plan
	external bool
	redis    int // primaries
	replicas int // per primary
	sentinel int
	zk       int
	etcd     int
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
	case kPrimary, kReplica, kSentinel, kZK, kEtcd:
		_, ok := t.plan.Node(n.name())
		return ok
	case kEtcdPeers:
		return t.etcd > 0
	case kRedisPeers:
		return t.redis > 0 || t.unsure&kPrimary != 0
	}
	return false
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

// name is the node's name: for a leader selector's candidate its member,
// for clients and holder client-0 (every client has the same links).
func (n node) name() string {
	switch n.kind {
	case kPrimary:
		return "redis-" + strconv.Itoa(n.i)
	case kReplica:
		return fmt.Sprintf("redis-%d-r%d", n.i, n.j)
	case kSentinel:
		return "sentinel-" + strconv.Itoa(n.i)
	case kZK:
		return "zk-" + strconv.Itoa(n.i)
	case kEtcd:
		return "etcd-" + strconv.Itoa(n.i)
	case kClient:
		return "client-" + strconv.Itoa(n.i)
	case kClients, kHolder:
		return "client-0"
	case kEtcdPeers:
		return cluster.EtcdPeers
	case kRedisPeers:
		return cluster.RedisPeers
	}
	return "?"
}

// proxied reports whether the cluster's plan has the proxied link a->b,
// the links faults can act on. An end whose kind had errors in the
// cluster section, or a leader selector's unknown member, may have any
// link. a and b are not leader selectors (see candidates).
func (t *topology) proxied(a, b node) bool {
	for _, n := range []node{a, b} {
		if t.unsure&n.kind != 0 || n.i < 0 || n.kind == kRedisPeers && t.unsure&(kReplica|kSentinel) != 0 {
			return true
		}
	}
	return t.plan.HasLink(a.name(), b.name())
}

// cut reports whether separating a and b (in different partition groups)
// cuts a proxied link between them: one either way, or etcd-peers->b, which
// carries a's traffic to b.
func (t *topology) cut(a, b node) bool {
	if a.kind == kEtcd && b.kind == kEtcd && a != b && t.proxied(node{kind: kEtcdPeers}, b) {
		return true
	}
	return t.proxied(a, b) || t.proxied(b, a)
}

// isClient reports whether n stands for one or more harness clients.
func (n node) isClient() bool { return n.kind&kAnyClient != 0 }

// servers lists every server node of the topology, in cluster order.
func (t *topology) servers() []string {
	var out []string
	for _, n := range t.plan.Nodes {
		out = append(out, n.Name)
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

func (p *parser) buildTopology() {
	c := &p.s.Cluster
	t := topology{external: c.Provider == "external", unsure: p.unsure}
	if t.external {
		if x := c.External; x != nil {
			t.redis, t.zk, t.etcd = len(x.Redis), len(x.ZooKeeper), len(x.Etcd)
		}
	} else {
		if r := c.Redis; r != nil {
			t.redis, t.replicas, t.sentinel = r.Primaries, r.Replicas, r.Sentinels
		}
		if z := c.ZooKeeper; z != nil {
			t.zk = z.Nodes
		}
		if e := c.Etcd; e != nil {
			t.etcd = e.Nodes
		}
	}
	if p.clientsOK {
		t.clients = p.s.Workload.Clients
		if sw := p.s.Sweep; sw != nil && len(sw.Clients) > 0 {
			t.clients = sw.Clients[0]
			for _, n := range sw.Clients {
				t.clients = min(t.clients, n)
			}
		}
	}
	t.plan = cluster.PlanOf(p.clusterSpec(t.clients))
	p.topo = t
}
