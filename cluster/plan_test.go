package cluster_test

import (
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/testenv"
)

func planLinks(p cluster.Plan) []string {
	var out []string
	for _, l := range p.Links {
		out = append(out, l.Name())
	}
	return out
}

func TestPlanOf(t *testing.T) {
	p := cluster.PlanOf(cluster.Spec{Redis: &cluster.RedisSpec{Replicas: 1}, Clients: 2})
	var nodes []string
	for _, n := range p.Nodes {
		nodes = append(nodes, n.Name+":"+n.Kind)
	}
	if want := []string{"redis-0:redis", "redis-0-r0:replica"}; !slices.Equal(nodes, want) {
		t.Errorf("nodes %v, want %v", nodes, want)
	}
	want := []string{"redis-0-r0->redis-0", "redis-peers->redis-0", "redis-peers->redis-0-r0",
		"client-0->redis-0", "client-0->redis-0-r0", "client-1->redis-0", "client-1->redis-0-r0"}
	if got := planLinks(p); !slices.Equal(got, want) {
		t.Errorf("links %v, want %v", got, want)
	}

	// etcd's row plans a link per directed pair and etcd-peers links for
	// local and docker, pair links only for netns, none for external servers.
	etcd := map[string]cluster.Settings{"etcd": {"nodes": 3}}
	// (netns keeps its client links, carried by the kernel.)
	for prov, peers := range map[string]bool{cluster.ProviderLocal: true, cluster.ProviderDocker: true, cluster.ProviderNetns: false} {
		p := cluster.PlanOf(cluster.Spec{Provider: prov, Backends: etcd, ClientProxies: []string{}})
		if got := planLinks(p); len(got) != 9 || !slices.Contains(got, "etcd-1->etcd-0") || peers != slices.Contains(got, "etcd-peers->etcd-2") {
			t.Errorf("%s etcd plan: links %v", prov, got)
		}
	}
	ext := cluster.PlanOf(cluster.Spec{Provider: cluster.ProviderExternal,
		External: &cluster.ExternalSpec{Table: map[string][]string{"etcd": {"a:1", "b:2", "c:3"}}}})
	if got := planLinks(ext); len(ext.Nodes) != 3 || len(got) != 3 || got[0] != "client-0->etcd-0" {
		t.Errorf("external etcd plan: nodes %v, links %v", ext.Nodes, got)
	}

	// ClientProxies keeps every client's link to the servers it names.
	only := cluster.PlanOf(cluster.Spec{Redis: &cluster.RedisSpec{Replicas: 1}, Clients: 2, ClientProxies: []string{"redis-0-r0"}})
	if !only.HasLink("client-1", "redis-0-r0") || only.HasLink("client-1", "redis-0") || !only.HasLink("redis-0-r0", "redis-0") {
		t.Errorf("ClientProxies [redis-0-r0]: links %v", planLinks(only))
	}
}

// TestDirectClients: a server without client proxies is reached at its
// real address.
// TestPlanRedisCluster: in a Redis Cluster every server dials every other
// one (the cluster bus; replication within a group, both ways since the
// cluster swaps roles in a failover), and the plan says it is one.
func TestPlanRedisCluster(t *testing.T) {
	p := cluster.PlanOf(cluster.Spec{Redis: &cluster.RedisSpec{Mode: cluster.RedisCluster, Primaries: 3, Replicas: 1}})
	if !p.RedisCluster || p.Count(cluster.KindRedis) != 3 || p.Count(cluster.KindReplica) != 3 {
		t.Fatalf("plan %+v", p)
	}
	for _, l := range []string{"redis-0-r0->redis-0", "redis-0->redis-0-r0", "redis-2-r0->redis-2", "redis-2->redis-2-r0"} {
		if !slices.Contains(planLinks(p), l) {
			t.Errorf("no link %s in %v", l, planLinks(p))
		}
	}
	if !p.HasLink("redis-1", "redis-0") || !p.HasLink("redis-1-r0", "redis-0") || !p.HasLink("redis-peers", "redis-0") {
		t.Errorf("no bus links across groups: %v", planLinks(p))
	}
	if cluster.PlanOf(cluster.Spec{Redis: &cluster.RedisSpec{Replicas: 1}}).RedisCluster {
		t.Error("a standalone plan says RedisCluster")
	}
}

func TestDirectClients(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{Redis: &cluster.RedisSpec{}, Clients: 2, ClientProxies: []string{}})
	ctx := ctxT(t, 60*time.Second)
	n := mustNode(t, c, "redis-0")
	if ls := c.AllLinks(); len(ls) != 0 {
		t.Errorf("links %v, want none", ls)
	}
	ep := c.Endpoints(1)
	if len(ep.Redis) != 1 || ep.Redis[0] != n.Addr() {
		t.Fatalf("endpoints %+v: want the real address %s", ep, n.Addr())
	}
	if err := redisClient(t, ep.Redis[0], 2*time.Second).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestStartPlan: StartPlan builds the plan it is handed (here one whose
// client links were narrowed to none after PlanOf) and Plan returns it.
func TestStartPlan(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	ctx := ctxT(t, 60*time.Second)
	spec := cluster.Spec{Redis: &cluster.RedisSpec{}, Clients: 2, Dir: t.TempDir()}
	plan := cluster.PlanOf(spec).WithClientProxies([]string{})
	if want := cluster.PlanOf(cluster.Spec{Redis: &cluster.RedisSpec{}, Clients: 2, ClientProxies: []string{}}); !slices.Equal(planLinks(plan), planLinks(want)) {
		t.Errorf("narrowed links %v, PlanOf with ClientProxies %v", planLinks(plan), planLinks(want))
	}
	c, err := cluster.StartPlan(ctx, spec, plan)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if ls := c.AllLinks(); len(ls) != 0 || len(c.Plan().Links) != 0 {
		t.Errorf("links %v, plan links %v: want none", ls, planLinks(c.Plan()))
	}
	if err := redisClient(t, c.Endpoints(1).Redis[0], 2*time.Second).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}
