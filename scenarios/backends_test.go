package scenarios

import (
	"testing"

	"github.com/locklab/locklab/cluster"
)

// TestTableSections: the sections of the cluster's backend table parse
// into cluster.Spec.Backends, get added when a lock needs them, and take
// external lists.
func TestTableSections(t *testing.T) {
	s, err := Parse("x.yaml", []byte("name: x\ncluster:\n  postgres: {replicas: 2}\nlocks: [pg-advisory, mariadb-get-lock]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Cluster.Backends["postgres"]["replicas"]; got != 2 {
		t.Errorf("postgres replicas = %v, want 2", got)
	}
	if _, ok := s.Cluster.Backends["mariadb"]; !ok {
		t.Errorf("mariadb section not added for mariadb-get-lock: %v", s.Cluster.Backends)
	}
	if n := len(cluster.PlanOf(s.ClusterSpec(1)).NodesOf("postgres")); n != 3 {
		t.Errorf("postgres nodes in the plan: %d, want 3", n)
	}
	s, err = Parse("x.yaml", []byte("name: x\ncluster:\n  provider: external\n  external: {postgres: [db1:5432, db2:5432]}\nlocks: [pg-advisory]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Cluster.External.Table["postgres"]; len(got) != 2 {
		t.Errorf("external postgres = %v", got)
	}
	s, err = Parse("x.yaml", []byte("name: x\ncluster:\n  provider: docker\nlocks: [pg-advisory, mariadb-get-lock]\n"))
	if err != nil {
		t.Fatalf("provider docker with table backends: %v", err)
	}
	if err := s.ClusterSpec(1).CheckBackends(); err != nil {
		t.Errorf("provider docker refuses %v: %v", s.Cluster.Backends, err)
	}
	s, err = Parse("x.yaml", []byte("name: x\ncluster:\n  provider: docker\n  nats: {nodes: 3, image: my/nats:2.9}\nlocks: [nats-kv]\n"))
	if err != nil {
		t.Fatalf("a table backend's image: %v", err)
	}
	if got := s.Cluster.Backends["nats"][cluster.ImageField]; got != "my/nats:2.9" {
		t.Errorf("nats image = %v, want my/nats:2.9", got)
	}
}

// TestTableSectionErrors: bad table sections name file, line and field.
func TestTableSectionErrors(t *testing.T) {
	const lock = "locks: [pg-advisory]\n"
	checkBad(t, []badCase{
		{"unknown field", "name: x\ncluster:\n  postgres: {replica: 1}\n" + lock,
			"x.yaml:3: cluster.postgres.replica: ", "unknown field (allowed: replicas, image)"},
		{"negative replicas", "name: x\ncluster:\n  postgres:\n    replicas: -1\n" + lock,
			"x.yaml:4: cluster.postgres.replicas: ", "must be >= 0"},
		{"not an int", "name: x\ncluster:\n  postgres: {replicas: many}\n" + lock,
			"x.yaml:3: cluster.postgres.replicas: ", "integer"},
		{"external missing", "name: x\ncluster:\n  provider: external\n  external: {redis: [r:6379]}\n" + lock,
			"x.yaml:5: cluster.external.postgres: ", "lock pg-advisory needs postgres servers"},
		{"external bad address", "name: x\ncluster:\n  provider: external\n  external:\n    mariadb: [db1]\nlocks: [mariadb-get-lock]\n",
			"x.yaml:5: cluster.external.mariadb[0]: ", "is not host:port"},
		{"section with external", "name: x\ncluster:\n  provider: external\n  postgres: {}\n  external: {postgres: [db:5432]}\n" + lock,
			"x.yaml:4: cluster.postgres: ", "not used with provider external"},
	})
}
