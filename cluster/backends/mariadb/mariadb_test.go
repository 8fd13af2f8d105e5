package mariadb_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/mariadb"
	"github.com/locklab/locklab/testenv"
)

// TestStartRestartClose starts mariadb-0, restarts it on the same data
// dir, and checks that Close leaves no server process behind.
func TestStartRestartClose(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{Clients: 1, Backends: map[string]cluster.Settings{mariadb.Name: {}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, ok := c.Node("mariadb-0")
	if !ok || n.Kind != mariadb.Kind {
		t.Fatalf("no mariadb-0 node: %v", c.Plan().Nodes)
	}
	if got := c.Endpoints(0).Table[mariadb.Name]; len(got) != 1 || got[0] == n.Addr() {
		t.Fatalf("client 0's mariadb addresses = %v, want one proxied address (server at %s)", got, n.Addr())
	}
	if err := n.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if r, err := n.Role(ctx); err != nil || r != "primary" {
		t.Fatalf("role after restart = %q, %v", r, err)
	}
	pid := n.Pid()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Errorf("mariadbd (pid %d) still running after Close", pid)
	}
}
