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
			p.planExternal(e)
		}
	} else {
		// A Redis Cluster fails over by itself (no sentinels).
		p.RedisCluster = s.Redis != nil && s.Redis.Mode == RedisCluster
		p.planRows(s)
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

// addNumbered adds count nodes prefix0.. of kind and backend.
func (p *Plan) addNumbered(prefix, kind, backend string, count int) {
	for i := range count {
		p.Nodes = append(p.Nodes, PlanNode{prefix + strconv.Itoa(i), kind, backend})
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

// ReplicasOf counts the replicas of primary: the nodes of its backend
// named <primary>-r<N> (redis-0-r0, postgres-0-r1).
func (p Plan) ReplicasOf(primary string) int {
	pn, ok := p.Node(primary)
	if !ok {
		return 0
	}
	k := 0
	for _, n := range p.Nodes {
		j, ok := strings.CutPrefix(n.Name, primary+"-r")
		if _, err := strconv.Atoi(j); ok && err == nil && n.Backend == pn.Backend {
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
