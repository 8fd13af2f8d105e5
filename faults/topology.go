package faults

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/locklab/locklab/cluster"
)

// kindClient is the kind topology gives clients, "clients" and holder.
const kindClient = "client"

// topology is what Check and Run need to know about a cluster: its nodes,
// its proxied links, its clients and provider. Check builds it from a Spec
// before anything starts (newTopology, which mirrors cluster's builders);
// Run from the running cluster (topologyOf). TestTopologyMatchesCluster
// keeps the two in step.
type topology struct {
	provider         string
	clients          int
	processPerClient bool
	names            []string          // server nodes in cluster order
	kinds            map[string]string // server node -> cluster.Kind*
	links            []linkEnds        // proxied links
}

type linkEnds struct{ from, to string }

func (l linkEnds) String() string { return l.from + "->" + l.to }

// newTopology is the topology cluster.Start(spec) will build.
func newTopology(spec cluster.Spec, processPerClient bool) *topology {
	t := &topology{provider: spec.Provider, clients: spec.Clients,
		processPerClient: processPerClient, kinds: map[string]string{}}
	if t.provider == "" {
		t.provider = cluster.ProviderLocal
	}
	if t.clients <= 0 {
		t.clients = 1
	}
	add := func(name, kind string) {
		t.names = append(t.names, name)
		t.kinds[name] = kind
	}
	if t.provider == cluster.ProviderExternal {
		if e := spec.External; e != nil {
			for i := range e.Redis {
				add("redis-"+strconv.Itoa(i), cluster.KindRedis)
			}
			for i := range e.ZooKeeper {
				add("zk-"+strconv.Itoa(i), cluster.KindZooKeeper)
			}
			for i := range e.Etcd {
				add("etcd-"+strconv.Itoa(i), cluster.KindEtcd)
			}
		}
	} else {
		if r := spec.Redis; r != nil {
			primaries := max(r.Primaries, 1)
			var redis []string
			addRedis := func(name, kind string) {
				add(name, kind)
				redis = append(redis, name)
			}
			for i := range primaries {
				addRedis("redis-"+strconv.Itoa(i), cluster.KindRedis)
			}
			for i := range primaries {
				for j := range r.Replicas {
					addRedis(fmt.Sprintf("redis-%d-r%d", i, j), cluster.KindReplica)
				}
			}
			for k := range r.Sentinels {
				addRedis("sentinel-"+strconv.Itoa(k), cluster.KindSentinel)
			}
			// Peer links where every node has a peer address (cluster/redispeers.go).
			if r.Replicas > 0 || r.Sentinels > 0 {
				for _, to := range redis {
					for _, from := range redis {
						if t.redisPeerFrom(from, to, r.Sentinels > 0) {
							t.links = append(t.links, linkEnds{from, to})
						}
					}
					t.links = append(t.links, linkEnds{cluster.RedisPeers, to})
				}
			}
		}
		if z := spec.ZooKeeper; z != nil {
			n := max(z.Nodes, 1)
			for i := range n {
				add("zk-"+strconv.Itoa(i), cluster.KindZooKeeper)
			}
			for i := range n {
				for j := range n {
					if i != j {
						t.links = append(t.links, linkEnds{"zk-" + strconv.Itoa(i), "zk-" + strconv.Itoa(j)})
					}
				}
			}
		}
		if e := spec.Etcd; e != nil {
			n := max(e.Nodes, 1)
			for i := range n {
				add("etcd-"+strconv.Itoa(i), cluster.KindEtcd)
			}
			for i := 0; n > 1 && i < n; i++ {
				t.links = append(t.links, linkEnds{cluster.EtcdPeers, "etcd-" + strconv.Itoa(i)})
			}
			// Pair links exist where a demultiplexer names each sender:
			// local processes and docker containers (cluster/etcdpeers.go,
			// cluster/docker_etcd.go), not external servers.
			for i := 0; n > 1 && t.provider != cluster.ProviderExternal && i < n; i++ {
				for j := range n {
					if i != j {
						t.links = append(t.links, linkEnds{"etcd-" + strconv.Itoa(j), "etcd-" + strconv.Itoa(i)})
					}
				}
			}
		}
	}
	for c := range t.clients {
		for _, n := range t.names {
			t.links = append(t.links, linkEnds{"client-" + strconv.Itoa(c), n})
		}
	}
	return t
}

// topologyOf is the topology of a running cluster.
func topologyOf(c *cluster.Cluster, processPerClient bool) *topology {
	t := &topology{provider: c.Info().Provider, clients: c.Clients(),
		processPerClient: processPerClient, kinds: map[string]string{}}
	for _, n := range c.Nodes() {
		t.names = append(t.names, n.Name)
		t.kinds[n.Name] = n.Kind
	}
	for _, l := range c.AllLinks() {
		t.links = append(t.links, linkEnds{l.From, l.To})
	}
	return t
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
// any), kindClient for clients, "clients" and holder.
func (t *topology) kind(name string) (string, bool) {
	if name == cluster.Clients || name == Holder {
		return kindClient, true
	}
	if k, ok := leaderKinds[name]; ok {
		return k, t.count(k) > 0
	}
	if i, ok := clientIndex(name); ok {
		return kindClient, i < t.clients
	}
	k, ok := t.kinds[name]
	return k, ok
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
	out := append([]string(nil), t.names...)
	out = append(out, cluster.Clients)
	if t.clients == 1 {
		out = append(out, "client-0")
	} else {
		out = append(out, fmt.Sprintf("client-0..client-%d", t.clients-1))
	}
	out = append(out, Holder)
	for _, sel := range []string{ZKLeader, EtcdLeader} {
		if t.count(leaderKinds[sel]) > 0 {
			out = append(out, sel)
		}
	}
	return strings.Join(out, ", ")
}

// matchEnd reports whether a selector end matches a link end; holder
// matches client-0 (every client has the same links; which one holds the
// lock is known only when the fault starts).
func matchEnd(sel, end string) bool {
	if sel == end {
		return true
	}
	_, isClient := clientIndex(end)
	switch sel {
	case cluster.Clients:
		return isClient
	case Holder:
		return end == "client-0"
	}
	return false
}

// match returns the links a selector names, as cluster.Links does; a
// leader selector matches the links of every member that may lead.
func (t *topology) match(sel string) []linkEnds {
	var out []linkEnds
	a, b, arrow := strings.Cut(sel, "->")
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	for _, l := range t.links {
		if arrow && t.matchFrom(a, l) && t.matchEnd(b, l.to) ||
			!arrow && (t.matchFrom(sel, l) || t.matchEnd(sel, l.to)) {
			out = append(out, l)
		}
	}
	return out
}

// matchEnd is matchEnd with leader selectors: zk-leader matches any
// ZooKeeper member.
func (t *topology) matchEnd(sel, end string) bool {
	if k, ok := leaderKinds[sel]; ok {
		return t.kinds[end] == k
	}
	return matchEnd(sel, end)
}

// matchFrom matches a selector's source end: as matchEnd, and etcd-peers
// also matches an etcd member's link to another, redis-peers a Redis
// node's link to another (cluster.Links does the same).
func (t *topology) matchFrom(sel string, l linkEnds) bool {
	return t.matchEnd(sel, l.from) ||
		sel == cluster.EtcdPeers && t.kinds[l.from] == cluster.KindEtcd && t.kinds[l.to] == cluster.KindEtcd ||
		sel == cluster.RedisPeers && isRedisKind(t.kinds[l.from]) && isRedisKind(t.kinds[l.to])
}

// isRedisKind reports whether kind is a node kind of a Redis topology.
func isRedisKind(kind string) bool {
	return kind == cluster.KindRedis || kind == cluster.KindReplica || kind == cluster.KindSentinel
}

// etcdPairs reports whether etcd peer links exist per directed pair.
func (t *topology) etcdPairs() bool {
	for _, l := range t.links {
		if t.kinds[l.from] == cluster.KindEtcd {
			return true
		}
	}
	return false
}

// replicasOf counts the replicas of primary.
func (t *topology) replicasOf(primary string) int {
	n := 0
	for _, name := range t.names {
		if t.kinds[name] == cluster.KindReplica && strings.HasPrefix(name, primary+"-r") {
			n++
		}
	}
	return n
}

func (t *topology) count(kind string) int {
	n := 0
	for _, name := range t.names {
		if t.kinds[name] == kind {
			n++
		}
	}
	return n
}

// redisPeerFrom reports whether Redis node from dials to's peer address
// (as cluster's redisPeerFrom): a sentinel dials every server and every
// other sentinel; a server dials servers of its own master group only,
// any of them with sentinels (failovers change roles), else a replica its
// primary.
func (t *topology) redisPeerFrom(from, to string, sentinels bool) bool {
	kf, kt := t.kinds[from], t.kinds[to]
	group := func(name string) string { return strings.SplitN(name, "-r", 2)[0] }
	switch {
	case from == to:
		return false
	case kf == cluster.KindSentinel:
		return true
	case kt == cluster.KindSentinel:
		return false
	case group(from) != group(to):
		return false
	case sentinels:
		return true
	default:
		return kf == cluster.KindReplica && kt == cluster.KindRedis
	}
}

// isolateGroups are the groups of "isolate: x": x against every other
// server and, unless x is a client, every client.
func (t *topology) isolateGroups(x string) [][]string {
	var rest []string
	for _, n := range t.names {
		if n != x {
			rest = append(rest, n)
		}
	}
	if k, _ := t.kind(x); k != kindClient {
		rest = append(rest, cluster.Clients)
	}
	return [][]string{{x}, rest}
}
