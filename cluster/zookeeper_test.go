package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/zookeeper"
	"github.com/locklab/locklab/testenv"
)

func zkConnect(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(servers, 5*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

func TestZooKeeperEnsemble(t *testing.T) {
	t0 := time.Now()
	c := testenv.Cluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}}, Clients: 2})
	t.Logf("zookeeper 3 nodes ready in %v", time.Since(t0))
	ctx := ctxT(t, 60*time.Second)
	ep := c.Endpoints(0)
	if len(ep.Table["zookeeper"]) != 3 {
		t.Fatalf("endpoints %+v", ep)
	}
	if v := c.Info().Versions[zookeeper.Name]; v == "" {
		t.Errorf("no version: %+v", c.Info())
	}
	conn := zkConnect(t, ep.Table["zookeeper"])
	testenv.Eventually(t, 10*time.Second, "create", func() error {
		_, err := conn.Create("/locklab", []byte("x"), 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})

	// Every peer link exists, per directed pair.
	for from := 0; from < 3; from++ {
		for to := 0; to < 3; to++ {
			if from != to {
				l := mustLink(t, c, fmt.Sprintf("zk-%d->zk-%d", from, to))
				if len(l.Proxies()) != 2 {
					t.Errorf("%s: %d proxies", l.Name, len(l.Proxies()))
				}
			}
		}
	}
	t.Run("no-bypass", func(t *testing.T) {
		// No member has a connection to another member's real address:
		// all peer traffic goes through the proxies.
		assertNoDirectPeerConns(t, c, "zk-")
	})

	t.Run("kill-leader", func(t *testing.T) { zkKillLeader(t, ctx, c) })
	t.Run("partition", func(t *testing.T) { zkPartitionLeader(t, ctx, c) })
}

// zkKillLeader kills the ensemble's leader, waits until the rest serve a
// write, starts the leader again and returns a connection to the rest.
func zkKillLeader(t *testing.T, ctx context.Context, c *cluster.Cluster) *zk.Conn {
	leader := zkLeader(t, c)
	t0 := time.Now()
	if err := leader.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for _, n := range c.Nodes() {
		if n != leader {
			rest = append(rest, c.Endpoints(1).Redirect[n.Addr()])
		}
	}
	conn := zkConnect(t, rest)
	testenv.Eventually(t, 20*time.Second, "write after leader kill", func() error {
		_, err := conn.Create("/after", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		return err
	})
	t.Logf("%s killed; the rest serve writes again after %v", leader.Name, time.Since(t0))
	if err := leader.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s rejoined after %v", leader.Name, time.Since(t0))
	return conn
}

// zkPartitionLeader isolates the leader from its peers (not from
// clients), waits until the others elect a new leader, heals and waits
// until every member serves again.
func zkPartitionLeader(t *testing.T, ctx context.Context, c *cluster.Cluster) {
	leader := zkLeader(t, c)
	var others []string
	for _, n := range c.Nodes() {
		if n != leader {
			others = append(others, n.Name)
		}
	}
	ls, err := c.Partition([][]string{{leader.Name}, others})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 4 {
		t.Fatalf("partition links %d", len(ls))
	}
	t0 := time.Now()
	for _, l := range ls {
		if err := l.Cut(); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 30*time.Second, "new leader", func() error {
		if l := zkLeaderOf(c, others); l == "" {
			return errors.New("no leader among " + strings.Join(others, ","))
		}
		return nil
	})
	t.Logf("new leader %s %v after isolating %s", zkLeaderOf(c, others), time.Since(t0), leader.Name)
	for _, l := range ls {
		if err := l.Heal(ctx); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 30*time.Second, "all serving after heal", func() error {
		for _, n := range c.Nodes() {
			if m := zkMode(c, n.Name); m != "leader" && m != "follower" {
				return fmt.Errorf("%s: mode %q", n.Name, m)
			}
		}
		return nil
	})
	t.Logf("ensemble whole again %v after the cut", time.Since(t0))
}

func zkLeader(t *testing.T, c *cluster.Cluster) *cluster.Node {
	t.Helper()
	var names []string
	for _, n := range c.Nodes() {
		names = append(names, n.Name)
	}
	var leader string
	testenv.Eventually(t, 20*time.Second, "a leader", func() error {
		if leader = zkLeaderOf(c, names); leader == "" {
			return errors.New("no leader")
		}
		return nil
	})
	return mustNode(t, c, leader)
}
