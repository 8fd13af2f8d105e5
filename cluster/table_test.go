package cluster_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster"
	_ "github.com/locklab/locklab/cluster/backends/all"
)

// TestTablePlan: the plan of table backends names their nodes as the
// contract says, in start order, with the replication links their rows
// declare and a client link to every node; external lists are numbered.
func TestTablePlan(t *testing.T) {
	p := cluster.PlanOf(cluster.Spec{Clients: 2, Backends: map[string]cluster.Settings{
		"postgres": {"replicas": 2}, "mariadb": {},
	}})
	var names []string
	for _, n := range p.Nodes {
		names = append(names, n.Name+"/"+n.Kind+"/"+n.Backend)
	}
	want := []string{"mariadb-0/mariadb/mariadb", "postgres-0/postgres/postgres",
		"postgres-0-r0/postgres-replica/postgres", "postgres-0-r1/postgres-replica/postgres"}
	if !slices.Equal(names, want) {
		t.Errorf("nodes %v, want %v", names, want)
	}
	for _, l := range [][2]string{{"postgres-0-r0", "postgres-0"}, {"postgres-0-r1", "postgres-0"}, {"client-1", "mariadb-0"}, {"client-0", "postgres-0-r1"}} {
		if !p.HasLink(l[0], l[1]) {
			t.Errorf("no link %s->%s in %v", l[0], l[1], p.Links)
		}
	}
	ext := cluster.PlanOf(cluster.Spec{Provider: cluster.ProviderExternal,
		External: &cluster.ExternalSpec{Table: map[string][]string{"postgres": {"db1:5432", "db2:5432"}}}})
	if got := ext.NodesOf("postgres"); len(got) != 2 || got[1].Name != "postgres-1" {
		t.Errorf("external postgres nodes %v, want postgres-0, postgres-1", got)
	}
}

// TestTableProviders: every table backend runs on every provider; a row
// without a provider is refused, naming both.
func TestTableProviders(t *testing.T) {
	for _, b := range cluster.Backends() {
		for _, prov := range []string{"", cluster.ProviderLocal, cluster.ProviderNetns, cluster.ProviderDocker, cluster.ProviderExternal} {
			if err := b.Runs(prov); err != nil {
				t.Errorf("%s on provider %q: %v", b.Name, prov, err)
			}
		}
	}
	row := cluster.TableBackend{Name: "x", Providers: []string{cluster.ProviderLocal}}
	want := "provider docker does not run x yet"
	if err := row.Runs(cluster.ProviderDocker); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Runs(docker) of a local-only row = %v, want an error saying %q", err, want)
	}
}

// TestTableFaultKinds: the rows say which server faults act on their nodes.
func TestTableFaultKinds(t *testing.T) {
	if k := cluster.KindsActedOnBy("failover"); !slices.Contains(k, "postgres") || slices.Contains(k, "mariadb") {
		t.Errorf("failover acts on %v, want postgres's kinds and not mariadb's", k)
	}
	if k := cluster.KindsActedOnBy("pause"); !slices.Contains(k, "mariadb") || !slices.Contains(k, "postgres-replica") {
		t.Errorf("pause acts on %v, want mariadb and postgres-replica among them", k)
	}
}

// TestTableRedisListed: Redis's row is listed first, found by name and by
// each of its kinds, and its failover acts on primaries only.
func TestTableRedisListed(t *testing.T) {
	if bs := cluster.Backends(); len(bs) < 7 || bs[0].Name != cluster.BackendRedis {
		t.Fatalf("rows %d, first %q; want Redis's first", len(bs), bs[0].Name)
	}
	for _, k := range []string{cluster.KindRedis, cluster.KindReplica, cluster.KindSentinel} {
		if b, ok := cluster.BackendOfKind(k); !ok || b.Name != cluster.BackendRedis {
			t.Errorf("BackendOfKind(%s) = %q, %v; want redis", k, b.Name, ok)
		}
	}
	k := cluster.KindsActedOnBy("failover")
	if !slices.Contains(k, cluster.KindRedis) || slices.Contains(k, cluster.KindReplica) || slices.Contains(k, cluster.KindSentinel) {
		t.Errorf("failover acts on %v, want Redis primaries and not its replicas or sentinels", k)
	}
	if k := cluster.KindsActedOnBy("clock-jump"); !slices.Contains(k, cluster.KindSentinel) || slices.Contains(k, "etcd") {
		t.Errorf("clock-jump acts on %v, want Redis's kinds (a sentinel among them) and not etcd", k)
	}
}

// TestTableValidate: a section's settings are checked against its row's
// fields (kind, least value, allowed values) and Check, as Start checks a
// spec built in Go before anything starts.
func TestTableValidate(t *testing.T) {
	redis, _ := cluster.LookupBackend(cluster.BackendRedis)
	nats, _ := cluster.LookupBackend("nats")
	for _, tc := range []struct {
		row      cluster.TableBackend
		set      cluster.Settings
		provider string
		want     string // "" when valid
	}{
		{redis, cluster.Settings{"primaries": 3, "replicas": 1}, "local", ""},
		{redis, cluster.Settings{"primaries": 0}, "local", "redis.primaries: must be >= 1 (got 0)"},
		{redis, cluster.Settings{"replicas": -1}, "local", "redis.replicas: must be >= 0 (got -1)"},
		{redis, cluster.Settings{"persistence": "sometimes"}, "local", `redis.persistence: must be one of none, everysec, always (got "sometimes")`},
		{redis, cluster.Settings{"primaries": "3"}, "local", "redis.primaries: 3 is not an int"},
		{redis, cluster.Settings{"mode": "cluster", "primaries": 3}, "local", ""},
		{redis, cluster.Settings{"mode": "cluster", "primaries": 2}, "local", "redis.primaries: mode cluster needs at least 3 primaries"},
		{redis, cluster.Settings{"mode": "cluster", "primaries": 3, "sentinels": 3}, "local", "redis.sentinels: must be 0 with mode cluster"},
		{redis, cluster.Settings{"mode": "cluster", "primaries": 3}, "docker", "redis.mode: cluster is not supported by provider docker yet"},
		{nats, cluster.Settings{"nodes": 3}, "local", ""},
		{nats, cluster.Settings{"nodes": 2}, "local", "nats.nodes: "},
	} {
		err := tc.row.Validate(tc.set, tc.provider)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %v on %s: %v, want valid", tc.row.Name, tc.set, tc.provider, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v on %s: %v, want an error saying %q", tc.row.Name, tc.set, tc.provider, err, tc.want)
		}
	}
	_, err := cluster.Start(context.Background(), cluster.Spec{Provider: cluster.ProviderNetns,
		Redis: &cluster.RedisSpec{Mode: cluster.RedisCluster, Primaries: 3}, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "cluster is not supported by provider netns") {
		t.Errorf("Start of a Redis Cluster under netns: %v, want it refused before anything starts", err)
	}
}

// TestTableCredentialsChecked: RegisterBackend refuses a credential
// variable of no known kind, one another row or the harness reads already,
// one that needs a credential its row does not declare, and a password or
// CA file that String would show.
func TestTableCredentialsChecked(t *testing.T) {
	row := func(creds ...cluster.TableCredential) cluster.TableBackend {
		return cluster.TableBackend{Name: "credtest", Kinds: []cluster.TableKind{{Kind: "credtest", Pattern: "credtest-0"}},
			Plan:        func(cluster.Settings) ([]cluster.PlanNode, []cluster.PlanLink) { return nil, nil },
			Build:       func(*cluster.Build) (cluster.Started, error) { return cluster.Started{}, nil },
			Credentials: creds}
	}
	for _, tc := range []struct {
		name  string
		creds []cluster.TableCredential
		want  string
	}{
		{"unknown kind", []cluster.TableCredential{{Env: "LOCKLAB_CREDTEST_KEY", What: "key"}}, `unknown kind "key"`},
		{"another row's", []cluster.TableCredential{{Env: "LOCKLAB_POSTGRES_PASSWORD", What: "password", Secret: true}}, "read by postgres already"},
		{"the harness's", []cluster.TableCredential{{Env: "LOCKLAB_ETCD_PASSWORD", What: "password", Secret: true}}, "read by the harness already"},
		{"a password shown", []cluster.TableCredential{{Env: "LOCKLAB_CREDTEST_PASSWORD", What: "password"}}, "a password is a secret"},
		{"a CA file's name shown", []cluster.TableCredential{{Env: "LOCKLAB_CREDTEST_CACERT", What: "cacert"}}, "a cacert names a file"},
		{"needs what the row lacks", []cluster.TableCredential{{Env: "LOCKLAB_CREDTEST_USER", What: "user", Needs: "password"}}, "needs a password"},
		{"not LOCKLAB_", []cluster.TableCredential{{Env: "PGPASSWORD", What: "password", Secret: true}}, "want a LOCKLAB_ variable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), tc.want) {
					t.Errorf("RegisterBackend: panic %v, want %q", r, tc.want)
				}
			}()
			cluster.RegisterBackend(row(tc.creds...))
		})
	}
	if _, ok := cluster.LookupBackend("credtest"); ok {
		t.Error("a refused row is in the table")
	}
}
