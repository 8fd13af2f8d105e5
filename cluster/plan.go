package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Plan is the topology Start builds from a Spec, computed from the spec
// alone: every node (names in docs/faults.md) and every proxied link. Start
// builds exactly its plan (and fails when it did not), so fault and
// scenario validation can ask it before anything starts.
type Plan struct {
	Provider string
	Clients  int
	// RedisCluster says the Redis nodes form one Redis Cluster
	// (RedisSpec.Mode RedisCluster), which fails over by itself.
	RedisCluster bool
	// Nodes in start order: Redis primaries, replicas, sentinels, then
	// each table backend's by name (etcd, ..., zookeeper).
	Nodes []PlanNode
	// Links are every proxied link: peer links per backend, client links
	// (client-N->node, to the servers of Spec.ClientProxies) last.
	Links []PlanLink
}

// PlanNode is one server of a Plan.
type PlanNode struct {
	Name    string
	Kind    string // Kind*
	Backend string // Backend*
}

// PlanLink is one proxied link of a Plan, traffic From->To.
type PlanLink struct{ From, To string }

// Name is the link's contract name, "From->To".
func (l PlanLink) Name() string { return l.From + "->" + l.To }

// PlanOf returns the plan of spec, with Start's defaults applied (provider
// local, one client, one primary or member per declared backend).
func PlanOf(spec Spec) Plan {
	s := spec.sized()
	p := Plan{Provider: s.Provider, Clients: s.Clients}
	if s.Provider == ProviderExternal {
		if e := s.External; e != nil {
			p.addNumbered("redis-", KindRedis, BackendRedis, len(e.Redis))
			p.planExternalTable(e)
		}
	} else if p.Traits().PacketLinks {
		p.planPackets(s)
	} else {
		if r := s.Redis; r != nil {
			p.planRedis(*r)
		}
		p.planTable(s)
	}
	for i := range p.Clients {
		for _, n := range p.Nodes {
			p.Links = append(p.Links, PlanLink{clientName(i), n.Name})
		}
	}
	return p.WithClientProxies(s.ClientProxies)
}

// WithClientProxies returns p with the client links to the servers of
// nodes only, as PlanOf plans a spec whose ClientProxies is nodes (nil:
// every client link stays). Under a provider whose links are packet
// paths (Traits.PacketLinks), which has no proxies, every client link
// stays.
func (p Plan) WithClientProxies(nodes []string) Plan {
	if nodes == nil || p.Traits().PacketLinks {
		return p
	}
	out := p
	out.Links = nil
	for _, l := range p.Links {
		if !isClient(l.From) || slices.Contains(nodes, l.To) {
			out.Links = append(out.Links, l)
		}
	}
	return out
}

// addNumbered adds count nodes prefix0.. and returns their names.
func (p *Plan) addNumbered(prefix, kind, backend string, count int) []string {
	var names []string
	for i := range count {
		names = append(names, prefix+strconv.Itoa(i))
		p.Nodes = append(p.Nodes, PlanNode{names[i], kind, backend})
	}
	return names
}

// pairLinks adds a link between every ordered pair of distinct names, by
// destination.
func (p *Plan) pairLinks(names []string) {
	for _, to := range names {
		for _, from := range names {
			if from != to {
				p.Links = append(p.Links, PlanLink{from, to})
			}
		}
	}
}

// planRedis adds redis-<i> primaries, redis-<i>-r<j> replicas of each,
// sentinel-<k>, and, with replicas or sentinels, their peer links
// (redispeers.go): for each node, a link from every node that dials its
// peer address, then redis-peers->node.
//
// In a Redis Cluster every server dials every other one (the cluster bus:
// gossip, failure reports, votes), so every ordered pair of servers has a
// link, with a second proxy for the bus; a replica replicates through the
// same links, and the cluster changes roles by itself (redis_cluster.go).
func (p *Plan) planRedis(r RedisSpec) {
	all := p.addRedisNodes(r)
	p.RedisCluster = r.Mode == RedisCluster
	if r.Replicas == 0 && r.Sentinels == 0 && !p.RedisCluster {
		return // independent primaries: nothing dials a peer address
	}
	for _, to := range all {
		for _, from := range all {
			if p.RedisCluster && from.Name != to.Name || redisPeerFrom(from, to, r.Sentinels > 0) {
				p.Links = append(p.Links, PlanLink{from.Name, to.Name})
			}
		}
		p.Links = append(p.Links, PlanLink{RedisPeers, to.Name})
	}
}

// addRedisNodes adds redis-<i> primaries, redis-<i>-r<j> replicas of each
// and sentinel-<k>, and returns them.
func (p *Plan) addRedisNodes(r RedisSpec) []PlanNode {
	first := len(p.Nodes)
	for _, prim := range p.addNumbered("redis-", KindRedis, BackendRedis, r.Primaries) {
		for j := range r.Replicas {
			p.Nodes = append(p.Nodes, PlanNode{fmt.Sprintf("%s-r%d", prim, j), KindReplica, BackendRedis})
		}
	}
	p.addNumbered("sentinel-", KindSentinel, BackendRedis, r.Sentinels)
	return p.Nodes[first:]
}

// redisGroup is the master group a server belongs to: "redis-0" for
// redis-0 and its replicas redis-0-r<j>.
func redisGroup(name string) string { return strings.SplitN(name, "-r", 2)[0] }

// redisPeerFrom reports whether from dials to's peer address, so that the
// link from->to exists: a sentinel dials every server and every other
// sentinel; a server dials only servers of its own master group (as a
// replica, its primary), any of them when sentinels or the cluster may
// change the roles (failover), else a replica its primary.
func redisPeerFrom(from, to PlanNode, failover bool) bool {
	switch {
	case from.Name == to.Name:
		return false
	case from.Kind == KindSentinel:
		return true
	case to.Kind == KindSentinel:
		return false
	case redisGroup(from.Name) != redisGroup(to.Name):
		return false
	case failover:
		return true
	default:
		return from.Kind == KindReplica && to.Kind == KindRedis
	}
}

// Node returns the node called name.
func (p Plan) Node(name string) (PlanNode, bool) {
	i := slices.IndexFunc(p.Nodes, func(n PlanNode) bool { return n.Name == name })
	if i < 0 {
		return PlanNode{}, false
	}
	return p.Nodes[i], true
}

// Kind returns the kind of the node called name, "" when there is none.
func (p Plan) Kind(name string) string {
	n, _ := p.Node(name)
	return n.Kind
}

// NodesOf returns the nodes of backend, in start order.
func (p Plan) NodesOf(backend string) []PlanNode {
	var out []PlanNode
	for _, n := range p.Nodes {
		if n.Backend == backend {
			out = append(out, n)
		}
	}
	return out
}

// Count returns how many nodes are of kind.
func (p Plan) Count(kind string) int {
	k := 0
	for _, n := range p.Nodes {
		if n.Kind == kind {
			k++
		}
	}
	return k
}

// HasLink reports whether the link from->to is proxied.
func (p Plan) HasLink(from, to string) bool {
	return slices.Contains(p.Links, PlanLink{from, to})
}

// ReplicasOf counts the replicas of primary.
func (p Plan) ReplicasOf(primary string) int {
	k := 0
	for _, n := range p.Nodes {
		if n.Kind == KindReplica && redisGroup(n.Name) == primary {
			k++
		}
	}
	return k
}

// diff returns what differs between the nodes and links c holds and p.
func (p Plan) diff(nodes []*Node, links []*Link) error {
	var got, want []string
	for _, n := range nodes {
		got = append(got, "node "+n.Name+" "+n.Kind)
	}
	for _, l := range links {
		got = append(got, "link "+l.Name)
	}
	for _, n := range p.Nodes {
		want = append(want, "node "+n.Name+" "+n.Kind)
	}
	for _, l := range p.Links {
		want = append(want, "link "+l.Name())
	}
	slices.Sort(got)
	slices.Sort(want)
	if slices.Equal(got, want) {
		return nil
	}
	var extra, missing []string
	for _, g := range got {
		if _, ok := slices.BinarySearch(want, g); !ok {
			extra = append(extra, g)
		}
	}
	for _, w := range want {
		if _, ok := slices.BinarySearch(got, w); !ok {
			missing = append(missing, w)
		}
	}
	return fmt.Errorf("cluster: built topology differs from its plan: extra %v, missing %v", extra, missing)
}

// planPackets is the plan of a provider whose links are packet paths
// (Traits.PacketLinks: netns): the same nodes; no proxies, so a link is
// every directed pair of nodes of a backend that talk to each other (a
// Redis topology with replicas or sentinels, ZooKeeper and etcd members),
// a table backend's own links, and (PlanOf) every client to every server,
// whatever ClientProxies says.
func (p *Plan) planPackets(s Spec) {
	if r := s.Redis; r != nil {
		all := p.addRedisNodes(*r)
		if r.Replicas > 0 || r.Sentinels > 0 {
			var names []string
			for _, n := range all {
				names = append(names, n.Name)
			}
			p.pairLinks(names)
		}
	}
	p.planTable(s)
}
