package faults

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
)

func TestCheck(t *testing.T) {
	sentinel := cluster.Spec{Redis: &cluster.RedisSpec{Primaries: 2, Replicas: 1, Sentinels: 3}, Clients: 4}
	plain := cluster.Spec{Redis: &cluster.RedisSpec{Replicas: 1}, Clients: 4}
	etcd := cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 3}}, Clients: 2}
	etcd2 := cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 2}}, Clients: 2}
	zk := cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}}, Clients: 2}
	dockerEtcd := cluster.Spec{Provider: cluster.ProviderDocker, Backends: map[string]cluster.Settings{"etcd": {"nodes": 3}}, Clients: 2}
	dockerSentinel := cluster.Spec{Provider: cluster.ProviderDocker, Redis: &cluster.RedisSpec{Replicas: 1, Sentinels: 3}, Clients: 2}
	primaries := cluster.Spec{Redis: &cluster.RedisSpec{Primaries: 3}, Clients: 2}
	external := cluster.Spec{Provider: cluster.ProviderExternal, External: &cluster.ExternalSpec{Redis: []string{"db:6379"}}, Clients: 2}

	lat := func(f Fault) Fault {
		f.Type, f.Latency = Latency, time.Second
		return f
	}
	part := func(groups ...[]string) Fault {
		return Fault{Type: Partition, Groups: groups}
	}
	node := func(typ, n string) Fault { return Fault{Type: typ, Node: n} }
	for _, tc := range []struct {
		name string
		spec cluster.Spec
		ppc  bool
		f    Fault
		want string // "" = accepted; otherwise a substring of the error
	}{
		// Links.
		{"client link", plain, false, lat(Fault{Link: "clients->redis-0"}), ""},
		{"holder link", plain, false, lat(Fault{Link: "holder->redis-0-r0"}), ""},
		{"one client link", plain, false, lat(Fault{Link: "client-3->redis-0"}), ""},
		{"replication link", plain, false, lat(Fault{Link: "redis-0-r0->redis-0"}), ""},
		{"replication reversed", plain, false, lat(Fault{Link: "redis-0->redis-0-r0"}), "the replication link is redis-0-r0->redis-0"},
		{"replication reversed with sentinels", sentinel, false, lat(Fault{Link: "redis-0->redis-0-r0"}), ""},
		{"replication across groups", sentinel, false, lat(Fault{Link: "redis-1-r0->redis-0"}), "no link redis-1-r0->redis-0"},
		{"redis peers", plain, false, lat(Fault{Link: "redis-peers->redis-0"}), ""},
		{"redis peers without peer addresses", primaries, false, lat(Fault{Link: "redis-peers->redis-0"}), "replicas or sentinels"},
		{"client link reversed", plain, false, lat(Fault{Link: "redis-0->clients"}), "written client->server"},
		{"no such client", plain, false, lat(Fault{Link: "client-4->redis-0"}), `no node "client-4"`},
		{"no such node", plain, false, lat(Fault{Link: "clients->redis-1"}), `no node "redis-1"`},
		{"not a link", plain, false, lat(Fault{Link: "redis-0"}), "not a link"},
		{"link and node", plain, false, lat(Fault{Link: "clients->redis-0", Node: "redis-0"}), "not both"},
		{"no target", plain, false, lat(Fault{}), "needs link"},
		{"node", sentinel, false, lat(Fault{Node: "redis-1"}), ""},
		{"sentinel link", sentinel, false, lat(Fault{Link: "sentinel-0->redis-0"}), ""},
		{"sentinel link to a replica", sentinel, false, lat(Fault{Link: "sentinel-2->redis-1-r0"}), ""},
		{"sentinel link docker", dockerSentinel, false, lat(Fault{Link: "sentinel-0->redis-0"}), ""},
		{"sentinel to sentinel", sentinel, false, lat(Fault{Link: "sentinel-0->sentinel-1"}), ""},
		{"sentinel link reversed", sentinel, false, lat(Fault{Link: "redis-0->sentinel-0"}), "never dial sentinels"},
		{"sentinel client link", sentinel, false, lat(Fault{Link: "clients->sentinel-0"}), ""},
		{"sentinel node", sentinel, false, lat(Fault{Node: "sentinel-0"}), ""},
		{"etcd pair", etcd, false, lat(Fault{Link: "etcd-0->etcd-1"}), ""},
		{"etcd pair docker", dockerEtcd, false, lat(Fault{Link: "etcd-0->etcd-1"}), ""},
		{"etcd peers", etcd, false, lat(Fault{Link: "etcd-peers->etcd-1"}), ""},
		{"etcd node", etcd, false, lat(Fault{Node: "etcd-1"}), ""},
		{"zk pair", zk, false, lat(Fault{Link: "zk-0->zk-2"}), ""},
		{"external client link", external, false, lat(Fault{Link: "clients->redis-0"}), ""},
		{"latency 0", plain, false, Fault{Type: Latency, Link: "clients->redis-0"}, ""},
		{"negative latency", plain, false, Fault{Type: Latency, Link: "clients->redis-0", Latency: -time.Second}, "must be >= 0 (got -1s)"},
		{"bandwidth", plain, false, Fault{Type: Bandwidth, Node: "redis-0", RateKbps: 10}, ""},
		{"bandwidth 0", plain, false, Fault{Type: Bandwidth, Node: "redis-0"}, "rate_kbps"},
		{"reset", plain, false, Fault{Type: Reset, Node: "holder"}, ""},

		// Partitions.
		{"partition", plain, false, part([]string{"redis-0"}, []string{"redis-0-r0", "clients"}), ""},
		{"partition holder", plain, false, part([]string{"holder", "redis-0"}, []string{"redis-0-r0"}), ""},
		{"partition clients split", plain, false, part([]string{"client-1"}, []string{"clients", "redis-0"}), "clients includes every client"},
		{"partition nothing to cut", plain, false, part([]string{"client-1"}, []string{"client-2"}), "cuts nothing"},
		{"partition one group", plain, false, part([]string{"redis-0"}), "at least two groups"},
		{"partition twice", plain, false, part([]string{"redis-0"}, []string{"redis-0", "clients"}), "redis-0 is already in groups[0]"},
		{"partition unknown", plain, false, part([]string{"redis-7"}, []string{"clients"}), `no node "redis-7"`},
		{"partition sentinels", sentinel, false, part([]string{"redis-0"}, []string{"sentinel-0", "clients"}), ""},
		{"partition primary from sentinels", sentinel, false,
			part([]string{"redis-0"}, []string{"sentinel-0", "sentinel-1", "sentinel-2", "redis-0-r0", "clients"}), ""},
		{"partition primary from sentinels docker", dockerSentinel, false,
			part([]string{"redis-0"}, []string{"sentinel-0", "sentinel-1", "sentinel-2", "redis-0-r0", "clients"}), ""},
		{"partition split brain", sentinel, false,
			part([]string{"redis-0", "sentinel-0", "client-0"}, []string{"sentinel-1", "sentinel-2", "redis-0-r0", "client-1"}), ""},
		{"partition sentinels left out", sentinel, false, part([]string{"redis-0", "client-0"}, []string{"redis-0-r0", "client-1"}), ""},
		{"partition independent primaries", primaries, false, part([]string{"redis-0"}, []string{"redis-1"}), "cuts nothing"},
		{"isolate with sentinels", sentinel, false, Fault{Type: Partition, Isolate: "redis-0"}, ""},
		{"isolate a sentinel", sentinel, false, Fault{Type: Partition, Isolate: "sentinel-1"}, ""},
		{"isolate", plain, false, Fault{Type: Partition, Isolate: "redis-0"}, ""},
		{"isolate client", sentinel, false, Fault{Type: Partition, Isolate: "client-2"}, ""},
		{"isolate holder", sentinel, false, Fault{Type: Partition, Isolate: "holder"}, ""},
		{"partition waiters", plain, false, part([]string{"waiters"}, []string{"redis-0", "holder"}), ""},
		{"partition waiters from servers", plain, false, part([]string{"waiters"}, []string{"redis-0"}), ""},
		{"waiters and clients apart", plain, false, part([]string{"waiters"}, []string{"redis-0", "clients"}), "clients includes every client"},
		{"isolate waiters", plain, false, Fault{Type: Partition, Isolate: "waiters"}, "only a partition's groups"},
		{"waiters link", plain, false, lat(Fault{Link: "waiters->redis-0"}), "only a partition's groups"},
		{"waiters node", plain, false, node(Kill, "waiters"), "only a partition's groups"},
		{"isolate etcd", etcd, false, Fault{Type: Partition, Isolate: "etcd-0"}, ""},
		{"isolate etcd docker", dockerEtcd, false, Fault{Type: Partition, Isolate: "etcd-0"}, ""},
		{"etcd one vs one", etcd2, false, part([]string{"etcd-0"}, []string{"etcd-1"}), ""},
		{"etcd one vs two", etcd, false, part([]string{"etcd-0"}, []string{"etcd-1", "etcd-2"}), ""},
		{"etcd one vs two docker", dockerEtcd, false, part([]string{"etcd-0"}, []string{"etcd-1", "etcd-2"}), ""},
		{"etcd one vs one docker", dockerEtcd, false, part([]string{"etcd-0"}, []string{"etcd-1"}), ""},
		{"etcd clients", etcd, false, part([]string{"etcd-0", "etcd-1", "etcd-2"}, []string{"clients"}), ""},
		{"isolate zk", zk, false, Fault{Type: Partition, Isolate: "zk-1"}, ""},
		{"external partition", external, false, part([]string{"clients"}, []string{"redis-0"}), ""},
		{"groups and isolate", plain, false, Fault{Type: Partition, Isolate: "redis-0", Groups: [][]string{{"a"}}}, "not both"},

		// Leader selectors.
		{"isolate zk leader", zk, false, Fault{Type: Partition, Isolate: "zk-leader"}, ""},
		{"isolate etcd leader", etcd, false, Fault{Type: Partition, Isolate: "etcd-leader"}, ""},
		{"isolate etcd leader docker", dockerEtcd, false, Fault{Type: Partition, Isolate: "etcd-leader"}, ""},
		{"leader and a member", zk, false, part([]string{"zk-leader", "zk-0"}, []string{"zk-1", "zk-2", "clients"}), ""},
		{"leader alone", zk, false, part([]string{"zk-leader"}, []string{"zk-0", "zk-1", "zk-2", "clients"}), ""},
		{"leader against one", zk, false, part([]string{"zk-leader"}, []string{"zk-0"}), "when zk-0 leads: group 1 is empty"},
		{"leader twice", zk, false, part([]string{"zk-leader"}, []string{"zk-leader", "clients"}), "zk-leader is already in groups[0]"},
		{"leader missing", zk, false, Fault{Type: Partition, Isolate: "etcd-leader"}, `no node "etcd-leader"`},
		{"leader link", zk, false, lat(Fault{Link: "zk-leader->zk-1"}), ""},
		{"leader client link", etcd, false, lat(Fault{Link: "clients->etcd-leader"}), ""},
		{"leader to itself", zk, false, lat(Fault{Link: "zk-leader->zk-leader"}), "to itself"},
		{"leader node", zk, false, lat(Fault{Node: "zk-leader"}), ""},
		{"kill leader", zk, false, node(Kill, "zk-leader"), ""},
		{"pause etcd leader", etcd, false, node(Pause, "etcd-leader"), ""},
		{"failover leader", zk, false, node(Failover, "zk-leader"), "a failover fault acts on redis or postgres"},

		// Servers.
		{"pause", sentinel, false, node(Pause, "sentinel-2"), ""},
		{"pause client", sentinel, false, node(Pause, "client-0"), "acts on redis"},
		{"kill", zk, false, node(Kill, "zk-2"), ""},
		{"kill unknown", zk, false, node(Kill, "zk-3"), `no node "zk-3"`},
		{"restart", etcd, false, node(Restart, "etcd-0"), ""},
		{"restart external", external, false, node(Restart, "redis-0"), "provider external"},
		{"kill external", external, false, node(Kill, "redis-0"), "provider external"},
		{"pause external", external, false, node(Pause, "redis-0"), "provider external"},
		{"failover", sentinel, false, node(Failover, "redis-1"), ""},
		{"failover replica", sentinel, false, node(Failover, "redis-0-r0"), "acts on redis nodes"},
		{"failover no sentinel", plain, false, node(Failover, "redis-0"), "no sentinels"},
		{"failover no replica", cluster.Spec{Redis: &cluster.RedisSpec{Sentinels: 3}}, false, node(Failover, "redis-0"), "replica of redis-0"},
		{"failover external", external, false, node(Failover, "redis-0"), "provider external"},
		{"clock-jump", sentinel, false, Fault{Type: ClockJump, Node: "redis-1-r0", Offset: time.Second}, ""},
		{"clock-jump zk", zk, false, Fault{Type: ClockJump, Node: "zk-0", Offset: time.Second}, ""},
		{"clock-jump zk-leader back", zk, false, Fault{Type: ClockJump, Node: "zk-leader", Offset: -time.Second}, ""},
		{"clock-jump sentinel", sentinel, false, Fault{Type: ClockJump, Node: "sentinel-0", Offset: time.Second}, ""},
		{"clock-jump etcd", etcd, false, Fault{Type: ClockJump, Node: "etcd-0", Offset: time.Second}, "reads the clock from the vDSO"},
		{"clock-jump docker", dockerSentinel, false, Fault{Type: ClockJump, Node: "redis-0", Offset: time.Second}, "images do not carry the clock shim"},
		{"clock-jump no offset", plain, false, node(ClockJump, "redis-0"), "offset"},
		{"clock-jump external", external, false, Fault{Type: ClockJump, Node: "redis-0", Offset: time.Second}, ""},
		{"clock-jump external back", external, false, Fault{Type: ClockJump, Node: "redis-0", Offset: -time.Second}, "only a forward clock-jump"},
		{"clock-drift", plain, false, Fault{Type: ClockDrift, Node: "redis-0", Values: map[string]any{"rate": 1.5}}, ""},
		{"clock-drift rate 1", plain, false, Fault{Type: ClockDrift, Node: "redis-0", Values: map[string]any{"rate": 1.0}}, "must not be 1"},
		{"clock-drift no rate", plain, false, node(ClockDrift, "redis-0"), "rate"},
		{"clock-drift external", external, false, Fault{Type: ClockDrift, Node: "redis-0", Values: map[string]any{"rate": 1.5}}, "provider external"},
		{"clock-strobe", zk, false, Fault{Type: ClockStrobe, Node: "zk-1", Offset: time.Second, Values: map[string]any{"period": time.Second}}, ""},
		{"clock-strobe no period", zk, false, Fault{Type: ClockStrobe, Node: "zk-1", Offset: time.Second}, "period"},

		// Clients.
		{"pause-client", plain, true, Fault{Type: PauseClient, Client: "3"}, ""},
		{"pause-client holder", plain, true, Fault{Type: PauseClient, Client: "holder"}, ""},
		{"pause-client in process", plain, false, Fault{Type: PauseClient, Client: "holder"}, "process_per_client"},
		{"pause-client missing", plain, true, Fault{Type: PauseClient, Client: "4"}, "no client 4"},
		{"pause-client external", external, true, Fault{Type: PauseClient, Client: "1"}, ""},

		{"unknown type", plain, false, Fault{Type: "flood"}, "unknown fault type"},
		{"negative at", plain, false, lat(Fault{Node: "redis-0", At: -time.Second}), "before the workload starts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(cluster.PlanOf(tc.spec), tc.ppc, []Fault{lat(Fault{Node: "clients"}), tc.f})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Fault != 1 || fe.Type != tc.f.Type || !strings.HasPrefix(err.Error(), "faults[1]") {
				t.Errorf("error %q (%#v): want a *FieldError for faults[1]", err, fe)
			}
			t.Log(err)
		})
	}
}

func TestCheckJoinsErrors(t *testing.T) {
	err := Check(cluster.PlanOf(cluster.Spec{Redis: &cluster.RedisSpec{}}), false, []Fault{
		{Type: Kill, Node: "redis-3"},
		{Type: Kill, Node: "redis-0"},
		{Type: PauseClient, Client: "0"},
	})
	var idx []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FieldError
		if errors.As(e, &fe) {
			idx = append(idx, fe.Fault)
		}
	}
	if !slices.Equal(idx, []int{0, 2}) {
		t.Errorf("errors for faults %v, want [0 2]: %v", idx, err)
	}
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("pause-client in process is not ErrUnsupported: %v", err)
	}
}

// TestCheckFields: each problem names the field at fault as a scenario
// file writes it, so a parser can point at its line.
func TestCheckFields(t *testing.T) {
	zk := cluster.PlanOf(cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}}, Clients: 2})
	external := cluster.PlanOf(cluster.Spec{Provider: cluster.ProviderExternal,
		External: &cluster.ExternalSpec{Table: map[string][]string{"zookeeper": {"a:2181", "b:2181"}}}, Clients: 2})
	for _, tc := range []struct {
		name  string
		plan  cluster.Plan
		f     Fault
		field string
	}{
		{"unknown type", zk, Fault{Type: "flood"}, "type"},
		{"negative at", zk, Fault{Type: Kill, Node: "zk-0", At: -time.Second}, "at"},
		{"negative for", zk, Fault{Type: Pause, Node: "zk-0", For: -time.Second}, "for"},
		{"no rate", zk, Fault{Type: Bandwidth, Node: "zk-0"}, "rate_kbps"},
		{"no target", zk, Fault{Type: Reset}, ""},
		{"link and node", zk, Fault{Type: Reset, Link: "clients->zk-0", Node: "zk-0"}, "node"},
		{"missing node", zk, Fault{Type: Kill, Node: "zk-7"}, "node"},
		{"missing link end", zk, Fault{Type: Reset, Link: "clients->zk-7"}, "link"},
		{"group member", zk, Fault{Type: Partition, Groups: [][]string{{"zk-0"}, {"zk-1", "zk-9"}}}, "groups[1][1]"},
		{"member twice", zk, Fault{Type: Partition, Groups: [][]string{{"zk-0"}, {"zk-1", "zk-0"}}}, "groups[1][1]"},
		{"link source in a group", zk, Fault{Type: Partition, Groups: [][]string{{"etcd-peers"}, {"clients"}}}, "groups[0][0]"},
		{"cuts nothing", zk, Fault{Type: Partition, Groups: [][]string{{"client-0"}, {"client-1"}}}, "groups"},
		{"isolate and groups", zk, Fault{Type: Partition, Isolate: "zk-0", Groups: [][]string{{"zk-0"}, {"zk-1"}}}, "isolate"},
		{"server fault, external", external, Fault{Type: Kill, Node: "zk-0"}, "type"},
		{"peers apart, external", external, Fault{Type: Partition, Groups: [][]string{{"zk-0"}, {"zk-1", "clients"}}}, "groups"},
		{"client index", zk, Fault{Type: PauseClient, Client: "5"}, "client"},
		{"waiters alone", cluster.PlanOf(cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}}, Clients: 1}),
			Fault{Type: Partition, Groups: [][]string{{"waiters"}, {"zk-0"}}}, "groups"},
		{"waiters in a link", zk, Fault{Type: Latency, Latency: time.Second, Link: "waiters->zk-0"}, "link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.plan, true, []Fault{tc.f})
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Fault != 0 || fe.Field != tc.field {
				t.Fatalf("got %v (%#v), want a *FieldError on field %q", err, fe, tc.field)
			}
			t.Log(err)
		})
	}
}
