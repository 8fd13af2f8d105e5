package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/backends/etcd"
	"github.com/locklab/locklab/testenv"
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
	c := testenv.Cluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 3}}, Clients: 2})
	t.Logf("etcd 3 nodes ready in %v", time.Since(t0))
	ctx := ctxT(t, 60*time.Second)
	ep := c.Endpoints(1)
	if len(ep.Table["etcd"]) != 3 {
		t.Fatalf("endpoints %+v", ep)
	}
	if v := c.Info().Versions[etcd.Name]; v == "" {
		t.Errorf("no version: %+v", c.Info())
	}
	for _, n := range c.Nodes() {
		// The pair links from the two others, and the one for senders
		// the demultiplexer cannot name.
		if ls, err := c.Links("etcd-peers->" + n.Name); err != nil || len(ls) != 3 {
			t.Errorf("etcd-peers->%s: %d links, %v", n.Name, len(ls), err)
		}
	}
	mustLink(t, c, "etcd-1->etcd-0")
	cli := etcdClient(t, ep.Table["etcd"])
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
		testenv.Eventually(t, 10*time.Second, "leader", func() error {
			if leader = etcdLeader(c, names); leader == "" {
				return errors.New("no leader")
			}
			return nil
		})
		var others []string
		for _, n := range names {
			if n != leader {
				others = append(others, n)
			}
		}
		ls, err := c.Partition([][]string{{leader}, append([]string{"clients"}, others...)})
		if err != nil {
			t.Fatal(err)
		}
		peers := 0
		for _, l := range ls {
			if l.From != leader && l.To != leader {
				t.Errorf("%s cut, it does not touch %s", l.Name, leader)
			}
			if !strings.HasPrefix(l.From, "client-") {
				peers++
			}
		}
		if peers != 5 { // two pairs each way and etcd-peers->leader
			t.Errorf("%d peer links cut, want 5", peers)
		}
		t0 := time.Now()
		for _, l := range ls {
			if err := l.Cut(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Heal(context.Background()) })
		}
		testenv.Eventually(t, 20*time.Second, "new leader", func() error {
			if l := etcdLeader(c, others); l == "" {
				return errors.New("no leader among the others")
			}
			return nil
		})
		t.Logf("new leader %s %v after isolating %s", etcdLeader(c, others), time.Since(t0), leader)
		testenv.Eventually(t, 10*time.Second, "put during partition", func() error {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err := cli.Put(pctx, "during", "v")
			return err
		})
	})

	t.Run("kill-leader", func(t *testing.T) {
		var leader string
		testenv.Eventually(t, 10*time.Second, "leader", func() error {
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
		testenv.Eventually(t, 20*time.Second, "put after leader kill", func() error {
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

// TestEtcdIsolate isolates etcd-0, made the leader first, from both other
// members and from every client: the other two elect a leader and serve
// writes through the clients' links to them, etcd-0 serves none and sees
// none (it has no quorum and hears nothing), and after the heal etcd-0
// catches up.
func TestEtcdIsolate(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 3}}, Clients: 1})
	ctx := ctxT(t, 90*time.Second)
	names := []string{"etcd-0", "etcd-1", "etcd-2"}
	ep := c.Endpoints(0)
	direct := func(name string) *clientv3.Client { return etcdClient(t, []string{mustNode(t, c, name).Addr()}) }
	e0 := direct("etcd-0")

	// Make etcd-0 the leader, so the majority must elect another.
	var leader string
	testenv.Eventually(t, 10*time.Second, "leader", func() error {
		if leader = etcdLeader(c, names); leader == "" {
			return errors.New("no leader")
		}
		return nil
	})
	if leader != "etcd-0" {
		st, err := e0.Status(ctx, mustNode(t, c, "etcd-0").Addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := direct(leader).MoveLeader(ctx, st.Header.MemberId); err != nil {
			t.Fatalf("move leader from %s to etcd-0: %v", leader, err)
		}
		testenv.Eventually(t, 10*time.Second, "etcd-0 leads", func() error {
			if l := etcdLeader(c, names); l != "etcd-0" {
				return fmt.Errorf("leader %q", l)
			}
			return nil
		})
	}

	// Connections between members went through their pair links, none
	// through etcd-peers: a lease kept alive through a follower (which
	// forwards it to the leader without sender headers) included.
	e1 := direct("etcd-1")
	lease, err := e1.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e1.KeepAliveOnce(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	used := peerLinkConns(t, c)
	for _, l := range c.AllLinks() {
		switch {
		case l.From == etcd.Peers && used[l.Name] > 0:
			t.Errorf("%s carries %d connections: a sender was not identified", l.Name, used[l.Name])
		case l.From != etcd.Peers && !strings.HasPrefix(l.From, "client-") && used[l.Name] == 0:
			t.Errorf("%s carries no connection", l.Name)
		}
	}
	t.Logf("connections per peer link: %v", used)

	ls, err := c.Partition([][]string{{"etcd-0"}, {"etcd-1", "etcd-2", "clients"}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for _, l := range ls {
		l.Cut()
	}
	healed := false
	heal := func() {
		if !healed {
			healed = true
			for _, l := range ls {
				l.Heal(context.Background())
			}
		}
	}
	t.Cleanup(heal)

	testenv.Eventually(t, 20*time.Second, "a leader among etcd-1, etcd-2", func() error {
		if l := etcdLeader(c, names[1:]); l == "" {
			return errors.New("none")
		}
		return nil
	})
	t.Logf("%s leads %v after the cut", etcdLeader(c, names[1:]), time.Since(t0))
	// Through client-0's link to etcd-1 only.
	via1 := etcdClient(t, []string{ep.Table["etcd"][1]})
	testenv.Eventually(t, 20*time.Second, "put through client-0->etcd-1", func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := via1.Put(pctx, "during", "v")
		return err
	})
	// etcd-0 has no quorum: it steps down and commits nothing.
	testenv.Eventually(t, 10*time.Second, "etcd-0 steps down", func() error {
		if r, _ := mustNode(t, c, "etcd-0").Role(ctx); r == "leader" {
			return errors.New("still leads")
		}
		return nil
	})
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = e0.Put(pctx, "minority", "v")
	cancel()
	if err == nil {
		t.Error("etcd-0 committed a write without quorum")
	}
	// Nor does it hear from the majority.
	if r, err := e0.Get(ctx, "during", clientv3.WithSerializable()); err != nil || len(r.Kvs) != 0 {
		t.Errorf("etcd-0 local read of a key written on the majority: %v, %v", r, err)
	}

	heal()
	t.Logf("healed after %v", time.Since(t0))
	testenv.Eventually(t, 20*time.Second, "etcd-0 catches up", func() error {
		r, err := e0.Get(ctx, "during", clientv3.WithSerializable())
		if err != nil || len(r.Kvs) != 1 {
			return fmt.Errorf("%v %v", r, err)
		}
		return nil
	})
	via0 := etcdClient(t, []string{ep.Table["etcd"][0]})
	testenv.Eventually(t, 20*time.Second, "put through client-0->etcd-0", func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := via0.Put(pctx, "after", "v")
		return err
	})
	if r, err := via1.Get(ctx, "minority"); err == nil && len(r.Kvs) != 0 {
		t.Errorf("the write etcd-0 could not commit appeared after the heal: %v", r.Kvs)
	}
}

// peerLinkConns counts the open connections into each peer link's proxy
// (the demultiplexers' forwarded connections), by link name.
func peerLinkConns(t *testing.T, c *cluster.Cluster) map[string]int {
	t.Helper()
	byAddr := map[string]string{}
	for _, l := range c.AllLinks() {
		if !strings.HasPrefix(l.From, "client-") {
			byAddr[l.Addr()] = l.Name
		}
	}
	out := map[string]int{}
	sockets := tcpSockets(t)
	dir := filepath.Join("/proc", strconv.Itoa(os.Getpid()), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil || !strings.HasPrefix(target, "socket:[") {
			continue
		}
		s, ok := sockets[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")]
		if name, isPeer := byAddr[s[1]]; ok && isPeer {
			out[name]++
		}
	}
	return out
}
