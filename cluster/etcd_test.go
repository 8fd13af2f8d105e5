package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/internal/testenv"
)

func etcdClient(t *testing.T, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		// Notice a connection that went silent (a cut link) and use
		// another endpoint.
		DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func etcdLeader(c *cluster.Cluster, names []string) string {
	for _, name := range names {
		n, ok := c.Node(name)
		if !ok || !n.Alive() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r, _ := n.Role(ctx)
		cancel()
		if r == "leader" {
			return name
		}
	}
	return ""
}

func TestEtcdCluster(t *testing.T) {
	t0 := time.Now()
	c := testenv.Cluster(t, cluster.Spec{Etcd: &cluster.EtcdSpec{Nodes: 3}, Clients: 2})
	t.Logf("etcd 3 nodes ready in %v", time.Since(t0))
	ctx := ctxT(t, 60*time.Second)
	ep := c.Endpoints(1)
	if len(ep.Etcd) != 3 {
		t.Fatalf("endpoints %+v", ep)
	}
	if v := c.Info().Versions[cluster.BackendEtcd]; v == "" {
		t.Errorf("no version: %+v", c.Info())
	}
	for _, n := range c.Nodes() {
		mustLink(t, c, "etcd-peers->"+n.Name)
	}
	if _, err := c.Links("etcd-1->etcd-0"); err == nil {
		t.Error("etcd-1->etcd-0 exists")
	}
	cli := etcdClient(t, ep.Etcd)
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get: %v %v", resp, err)
	}
	names := []string{"etcd-0", "etcd-1", "etcd-2"}

	t.Run("no-bypass", func(t *testing.T) { assertNoDirectPeerConns(t, c, "etcd-") })

	t.Run("isolate-leader", func(t *testing.T) {
		var leader string
		eventually(t, 10*time.Second, "leader", func() error {
			if leader = etcdLeader(c, names); leader == "" {
				return errors.New("no leader")
			}
			return nil
		})
		ls, err := c.Partition([][]string{{leader}, {"clients"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Partition([][]string{{"etcd-0", "etcd-1"}, {"etcd-2"}}); !errors.Is(err, cluster.ErrUnsupported) {
			t.Errorf("two-member group partition: %v", err)
		}
		peer := mustLink(t, c, "etcd-peers->"+leader)
		t0 := time.Now()
		for _, l := range append(ls, peer) {
			if err := l.Cut(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Heal(context.Background()) })
		}
		var others []string
		for _, n := range names {
			if n != leader {
				others = append(others, n)
			}
		}
		eventually(t, 20*time.Second, "new leader", func() error {
			if l := etcdLeader(c, others); l == "" {
				return errors.New("no leader among the others")
			}
			return nil
		})
		t.Logf("new leader %s %v after cutting %s", etcdLeader(c, others), time.Since(t0), peer.Name)
		eventually(t, 10*time.Second, "put during partition", func() error {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err := cli.Put(pctx, "during", "v")
			return err
		})
	})

	t.Run("kill-leader", func(t *testing.T) {
		var leader string
		eventually(t, 10*time.Second, "leader", func() error {
			if leader = etcdLeader(c, names); leader == "" {
				return errors.New("no leader")
			}
			return nil
		})
		n := mustNode(t, c, leader)
		t0 := time.Now()
		if err := n.Kill(ctx); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "put after leader kill", func() error {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err := cli.Put(pctx, "after", "v")
			return err
		})
		t.Logf("%s killed; puts succeed again after %v", leader, time.Since(t0))
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s back after %v", leader, time.Since(t0))
	})
}
