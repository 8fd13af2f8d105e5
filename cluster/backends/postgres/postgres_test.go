package postgres_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/postgres"
	"github.com/locklab/locklab/locks/pglock"
	"github.com/locklab/locklab/testenv"
)

// TestStartFailoverClose starts a primary with a replica, checks the
// roles and the client's addresses, fails over, and checks that Close
// leaves no server process behind.
func TestStartFailoverClose(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{Clients: 2, Backends: map[string]cluster.Settings{postgres.Name: {"replicas": 1}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, _ := c.Node("postgres-0")
	r, _ := c.Node("postgres-0-r0")
	for n, want := range map[*cluster.Node]string{p: "primary", r: "replica"} {
		if got, err := n.Role(ctx); err != nil || got != want {
			t.Fatalf("role of %s = %q, %v; want %s", n.Name, got, err, want)
		}
	}
	if got := c.Endpoints(1).Table[postgres.Name]; len(got) != 2 {
		t.Fatalf("client 1's postgres addresses = %v, want 2", got)
	}
	if !c.Plan().HasLink("postgres-0-r0", "postgres-0") {
		t.Fatalf("no replication link in the plan: %v", c.Plan().Links)
	}
	if v := c.Info().Versions[postgres.Name]; !strings.HasPrefix(v, "15") && v == "" {
		t.Errorf("version %q", v)
	}
	// The same servers as provider external: reached through the second
	// cluster's client proxies, the writable one found by
	// target_session_attrs=read-write.
	ext := testenv.Cluster(t, cluster.Spec{Provider: cluster.ProviderExternal, Clients: 1,
		External: &cluster.ExternalSpec{Table: map[string][]string{postgres.Name: {r.Addr(), p.Addr()}}}})
	cs, err := pglock.ConnString(ext.Endpoints(0), "")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	var recovery bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery); err != nil || recovery {
		t.Errorf("external: connected to a server in recovery %v (%v), want the primary", recovery, err)
	}
	conn.Close(ctx)

	detail, err := c.Failover(ctx, "postgres-0")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(detail)
	if got, err := r.Role(ctx); err != nil || got != "primary" {
		t.Fatalf("after failover, role of %s = %q, %v; want primary", r.Name, got, err)
	}
	pid := r.Pid()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Errorf("postgres (pid %d) still running after Close", pid)
	}
}
