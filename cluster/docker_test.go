package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/providers/docker"
	"github.com/locklab/locklab/testenv"
)

// dockerCluster starts spec with the docker provider from the local images
// (built first when missing) and checks, once the cluster is closed, that
// none of its containers and not its network are left.
func dockerCluster(t *testing.T, spec cluster.Spec) *cluster.Cluster {
	t.Helper()
	testenv.RequireDockerImages(t)
	spec.Provider = cluster.ProviderDocker
	spec.RunID = "test-" + t.Name()
	var c *cluster.Cluster
	t.Cleanup(func() { // runs after testenv.Cluster's Close
		if c == nil {
			return
		}
		if left := testenv.DockerLeftovers(t, c.RunID()); len(left) > 0 {
			t.Errorf("after Close: %v", left)
		}
	})
	c = testenv.Cluster(t, spec)
	return c
}

// containerIPs maps each node's container address (the alias that
// Redirect maps to the client's proxy, without the port) to the node. Peer
// addresses, which Redirect maps too, all listen on the gateway, so an
// address there names several nodes and is left out.
func containerIPs(t *testing.T, c *cluster.Cluster) map[string]string {
	t.Helper()
	out := map[string]string{}
	ep := c.Endpoints(0)
	proxyNode := map[string]string{}
	for _, n := range c.Nodes() {
		proxyNode[ep.Redirect[n.Addr()]] = n.Name
	}
	shared := map[string]bool{}
	for real, proxy := range ep.Redirect {
		if strings.HasPrefix(real, "127.0.0.1:") {
			continue
		}
		ap, err := netip.ParseAddrPort(real)
		if err != nil {
			t.Fatalf("redirect key %q: %v", real, err)
		}
		ip := ap.Addr().String()
		if prev, ok := out[ip]; ok && prev != proxyNode[proxy] {
			shared[ip] = true
		}
		out[ip] = proxyNode[proxy]
	}
	for ip := range shared {
		delete(out, ip)
	}
	if len(out) != len(c.Nodes()) {
		t.Fatalf("container addresses %v for %d nodes", out, len(c.Nodes()))
	}
	return out
}

// assertNoDirectContainerConns checks, in the network namespace of every
// node named with prefix, that no established connection goes to another
// node's container address: peer traffic goes through the proxies on the
// gateway.
func assertNoDirectContainerConns(t *testing.T, c *cluster.Cluster, prefix string) {
	t.Helper()
	ips := containerIPs(t, c)
	checked := 0
	for _, n := range c.Nodes() {
		if !strings.HasPrefix(n.Name, prefix) || !n.Alive() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(n.Pid()), "net", "tcp"))
		if err != nil {
			testenv.Unavailable(t, "cannot read %s's sockets from the host: %v", n.Name, err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "01" { // ESTABLISHED
				continue
			}
			remote := hexAddr(f[2])
			host, _, _ := strings.Cut(remote, ":")
			checked++
			if other, ok := ips[host]; ok && other != n.Name {
				t.Errorf("%s has a direct connection to %s (%s), bypassing the proxies", n.Name, other, remote)
			}
		}
	}
	if checked == 0 {
		t.Error("no connections found")
	}
}

// TestDockerRedis: the Redis topology in containers, with every node's
// peer address a demultiplexer on the gateway, as TestRedisReplicationAndSentinel
// checks for local servers.
func TestDockerRedis(t *testing.T) {
	t0 := time.Now()
	c := dockerCluster(t, cluster.Spec{
		Redis:   &cluster.RedisSpec{Replicas: 1, Sentinels: 3, Persistence: cluster.PersistEverysec},
		Clients: 2,
	})
	ctx := ctxT(t, 3*time.Minute)
	var names []string
	for _, n := range c.Nodes() {
		names = append(names, n.Name)
	}
	if got := strings.Join(names, ","); got != "redis-0,redis-0-r0,sentinel-0,sentinel-1,sentinel-2" {
		t.Fatalf("nodes %s", got)
	}
	for _, sel := range []string{"redis-0-r0->redis-0", "client-1->sentinel-2", "sentinel-0->redis-0",
		"sentinel-1->redis-0-r0", "sentinel-2->sentinel-0", "redis-0->redis-0-r0"} {
		mustLink(t, c, sel)
	}
	if v := c.Info().Versions[cluster.BackendRedis]; v == "" {
		t.Errorf("no version: %+v", c.Info())
	}

	ep := c.Endpoints(0)
	rc := redisClient(t, ep.Redis[0], 2*time.Second)
	if err := rc.Set(ctx, "locklab:test:k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	replica := redisClient(t, c.Endpoints(0).Redirect[mustNode(t, c, "redis-0-r0").Addr()], 2*time.Second)
	testenv.Eventually(t, 10*time.Second, "replicated", func() error {
		v, err := replica.Get(ctx, "locklab:test:k").Result()
		if err == nil && v != "v" {
			err = fmt.Errorf("got %q", v)
		}
		return err
	})
	// replicaOfPeer checks that the replica's master is redis-0's peer
	// address on the gateway.
	replicaOfPeer := func(t *testing.T) {
		t.Helper()
		a, err := peerMaster(ctx, c, replica, mustNode(t, c, "redis-0"))
		if err == nil && a == containerAddrOf(t, c, "redis-0") {
			err = fmt.Errorf("replicates from redis-0's container address %s", a)
		}
		if err != nil {
			t.Errorf("replica: %v", err)
		}
	}
	replicaOfPeer(t)
	// Sentinel reports the primary at its peer address, which the
	// client's Redirect maps to its own proxy for redis-0.
	s := redisClient(t, ep.Sentinels[0], 2*time.Second)
	addr, err := s.Do(ctx, "SENTINEL", "get-master-addr-by-name", "redis-0").StringSlice()
	if err != nil || len(addr) != 2 {
		t.Fatalf("get-master-addr-by-name: %v %v", addr, err)
	}
	if got := ep.Redirect[addr[0]+":"+addr[1]]; got != ep.Redis[0] {
		t.Errorf("sentinel reports %v, redirected to %q, want %q", addr, got, ep.Redis[0])
	}
	if n, ok := c.NodeAt(addr[0] + ":" + addr[1]); !ok || n.Name != "redis-0" {
		t.Errorf("NodeAt(%v): %v %v", addr, n, ok)
	}
	if p, err := c.Primary(ctx, "redis-0"); err != nil || p.Name != "redis-0" {
		t.Errorf("Primary: %v %v", p, err)
	}

	t.Run("pause", func(t *testing.T) { redisPauseResume(t, ctx, mustNode(t, c, "redis-0"), ep.Redis[0]) })

	t.Run("kill-restart", func(t *testing.T) {
		n := mustNode(t, c, "redis-0-r0")
		pid := n.Pid()
		if err := n.Kill(ctx); err != nil {
			t.Fatal(err)
		}
		if n.Alive() {
			t.Fatal("alive after Kill")
		}
		short := redisClient(t, ep.Redirect[n.Addr()], 300*time.Millisecond)
		if err := short.Ping(ctx).Err(); err == nil {
			t.Error("PING answered by a killed server")
		}
		if err := n.Pause(ctx); !errors.Is(err, cluster.ErrNotRunning) {
			t.Errorf("Pause of a killed node: %v", err)
		}
		if err := rc.Set(ctx, "locklab:test:while-down", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("replica started again in %v", time.Since(t0))
		if n.Pid() == pid {
			t.Errorf("same pid %d after restart", pid)
		}
		if err := n.Start(ctx); !errors.Is(err, cluster.ErrRunning) {
			t.Errorf("Start of a running node: %v", err)
		}
		testenv.Eventually(t, 10*time.Second, "replica caught up", func() error {
			return short.Get(ctx, "locklab:test:while-down").Err()
		})
	})

	t.Run("past fix-slave-config", func(t *testing.T) {
		if wait := time.Until(t0.Add(fixSlaveConfigWindow)); wait > 0 {
			t.Logf("waiting %v for Sentinel's INFO refreshes", wait.Round(time.Millisecond))
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
		replicaOfPeer(t)
		for _, n := range c.Nodes() {
			if n.Kind != cluster.KindSentinel {
				continue
			}
			b, err := os.ReadFile(n.LogPath())
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "+fix-slave-config") {
				t.Errorf("%s reconfigured the replica:\n%s", n.Name, b)
			}
		}
		// Replication through the pair link: latency delays it.
		l := mustLink(t, c, "redis-0-r0->redis-0")
		name, err := l.Latency(300*time.Millisecond, 0, cluster.StreamDown)
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		if err := rc.Set(ctx, "locklab:test:slow", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 10*time.Second, "replicated", func() error { return replica.Get(ctx, "locklab:test:slow").Err() })
		if took := time.Since(t1); took < 300*time.Millisecond {
			t.Errorf("replication with 300ms latency on %s took %v", l.Name, took)
		}
		l.RemoveToxic(ctx, name)
		assertNoDirectContainerConns(t, c, "")
	})

	t.Run("partition", func(t *testing.T) {
		// The primary cut off from the sentinels, its replica and the
		// clients: the sentinels promote the replica.
		ls, err := c.Partition([][]string{{"redis-0"}, {"sentinel-0", "sentinel-1", "sentinel-2", "redis-0-r0", "clients"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			l.Cut()
		}
		t0 := time.Now()
		testenv.Eventually(t, 30*time.Second, "sentinel promotes redis-0-r0", func() error {
			p, err := c.Primary(ctx, "redis-0")
			if err != nil {
				return err
			}
			if p.Name != "redis-0-r0" {
				return fmt.Errorf("primary %s", p.Name)
			}
			return nil
		})
		t.Logf("promoted %v after the partition (%d links cut)", time.Since(t0), len(ls))
		if r, err := mustNode(t, c, "redis-0").Role(ctx); err != nil || r != "primary" {
			t.Errorf("old primary during the partition: %q, %v", r, err)
		}
		for _, l := range ls {
			l.Heal(ctx)
		}
		// On failure, the nodes' logs say why (+tilt, +sdown, the
		// +convert-to-slave that never came).
		defer func() {
			if t.Failed() {
				t.Log(logTails(c, 40))
			}
		}()
		// After the heal the group converges on one primary, Sentinel's,
		// and the other node replicates from its peer address. That is
		// usually redis-0-r0 with the old primary demoted. But a sentinel
		// whose first PING to the new primary goes unanswered for
		// down-after (1 s) fails over again, back to the healed redis-0:
		// 3 of 28 runs beside two busy loops, +sdown of the new primary
		// 1.02 s after +switch-master and -sdown 0.1 s later (a reconnect,
		// which Sentinel retries every second). Either way Sentinel
		// reached the healed node through its peer address and
		// reconfigured it.
		testenv.Eventually(t, testenv.SentinelDemoteWithin, "one primary after the heal",
			convergedRedis(ctx, t, c, "redis-0", "redis-0", "redis-0-r0"))
		if p, err := c.Primary(ctx, "redis-0"); err == nil && p.Name == "redis-0" {
			t.Logf("sentinels failed back to redis-0 after the heal:\n%s", logTails(c, 12))
		}
	})

	t.Run("failover", func(t *testing.T) {
		// Kill whichever node is the primary now; Sentinel promotes the
		// other one.
		primary, err := c.Primary(ctx, "redis-0")
		if err != nil {
			t.Fatal(err)
		}
		if err := primary.Kill(ctx); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		testenv.Eventually(t, 30*time.Second, "sentinel promotes another node", func() error {
			p, err := c.Primary(ctx, "redis-0")
			if err != nil {
				return err
			}
			if p == primary {
				return fmt.Errorf("primary %s", p.Name)
			}
			return nil
		})
		t.Logf("failover in %v", time.Since(t0))
		// The old primary comes back at the same container address and
		// Sentinel turns it into a replica of the new one.
		if err := primary.Start(ctx); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, testenv.SentinelDemoteWithin, "old primary demoted", func() error {
			r, err := primary.Role(ctx)
			if err == nil && r != "replica" {
				err = fmt.Errorf("role %s", r)
			}
			return err
		})
	})
}

// convergedRedis returns a check that the primary Sentinel reports for
// group is the only one of nodes in role primary, and that every other
// one replicates from the primary's peer address.
func convergedRedis(ctx context.Context, t *testing.T, c *cluster.Cluster, group string, nodes ...string) func() error {
	t.Helper()
	ep := c.Endpoints(0)
	clients := map[*cluster.Node]*redis.Client{}
	for _, name := range nodes {
		n := mustNode(t, c, name)
		clients[n] = redisClient(t, ep.Redirect[n.Addr()], 2*time.Second)
	}
	return func() error {
		p, err := c.Primary(ctx, group)
		if err != nil {
			return err
		}
		for n, rc := range clients {
			r, err := n.Role(ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
			if n == p {
				if r != "primary" {
					return fmt.Errorf("sentinel's primary %s: role %s", n.Name, r)
				}
				continue
			}
			if r != "replica" {
				return fmt.Errorf("%s (sentinel's primary is %s): role %s", n.Name, p.Name, r)
			}
			if _, err := peerMaster(ctx, c, rc, p); err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
		}
		return nil
	}
}

// containerAddrOf is node's container address with its server port (the
// Redirect key that is neither 127.0.0.1 nor on the shared gateway).
func containerAddrOf(t *testing.T, c *cluster.Cluster, node string) string {
	t.Helper()
	for ip, n := range containerIPs(t, c) {
		if n == node {
			port := "6379"
			if strings.HasPrefix(node, "sentinel-") {
				port = "26379"
			}
			return ip + ":" + port
		}
	}
	t.Fatalf("no container address for %s", node)
	return ""
}

func TestDockerRedisPersistenceAcrossRestart(t *testing.T) {
	c := dockerCluster(t, cluster.Spec{Redis: &cluster.RedisSpec{Persistence: cluster.PersistAlways}})
	ctx := ctxT(t, time.Minute)
	rc := redisClient(t, c.Endpoints(0).Redis[0], 2*time.Second)
	if err := rc.Set(ctx, "locklab:test:k", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	n := mustNode(t, c, "redis-0")
	if err := n.Restart(ctx, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "key after restart", func() error {
		v, err := rc.Get(ctx, "locklab:test:k").Result()
		if err == nil && v != "kept" {
			err = fmt.Errorf("got %q", v)
		}
		return err
	})
	b, err := os.ReadFile(n.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if starts := strings.Count(string(b), "=== locklab"); starts < 3 || !strings.Contains(string(b), "Ready to accept connections") {
		t.Errorf("log %s does not show both launches:\n%s", n.LogPath(), b)
	}
}

func TestDockerZooKeeper(t *testing.T) {
	c := dockerCluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}}, Clients: 2})
	ctx := ctxT(t, 2*time.Minute)
	conn := zkConnect(t, c.Endpoints(0).Table["zookeeper"])
	testenv.Eventually(t, 10*time.Second, "create", func() error {
		_, err := conn.Create("/locklab", []byte("x"), 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
	for from := 0; from < 3; from++ {
		for to := 0; to < 3; to++ {
			if from != to {
				if l := mustLink(t, c, fmt.Sprintf("zk-%d->zk-%d", from, to)); len(l.Proxies()) != 2 {
					t.Errorf("%s: %d proxies", l.Name, len(l.Proxies()))
				}
			}
		}
	}
	t.Run("no-bypass", func(t *testing.T) { assertNoDirectContainerConns(t, c, "zk-") })

	t.Run("pause-follower", func(t *testing.T) {
		var follower *cluster.Node
		leader := zkLeader(t, c)
		for _, n := range c.Nodes() {
			if n != leader {
				follower = n
				break
			}
		}
		if err := follower.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		if m := zkMode(c, follower.Name); m != "" {
			t.Errorf("a paused member answered srvr: %q", m)
		}
		if err := follower.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 20*time.Second, "follower serving", func() error {
			if m := zkMode(c, follower.Name); m != "follower" && m != "leader" {
				return fmt.Errorf("mode %q", m)
			}
			return nil
		})
	})

	t.Run("kill-leader", func(t *testing.T) {
		conn := zkKillLeader(t, ctx, c)
		if _, st, err := conn.Get("/locklab"); err != nil || st == nil {
			t.Errorf("data after restart: %v", err)
		}
	})
	t.Run("partition", func(t *testing.T) { zkPartitionLeader(t, ctx, c) })
}

func TestDockerEtcd(t *testing.T) {
	c := dockerCluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 3}}, Clients: 2})
	ctx := ctxT(t, 2*time.Minute)
	ep := c.Endpoints(0)
	cli := etcdClient(t, ep.Table["etcd"])
	if _, err := cli.Put(ctx, "locklab/test/k", "v"); err != nil {
		t.Fatal(err)
	}
	// The member list reports container addresses, which Redirect maps to
	// the client's proxies.
	ml, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ml.Members {
		for _, u := range m.ClientURLs {
			if _, ok := ep.Redirect[strings.TrimPrefix(u, "http://")]; !ok {
				t.Errorf("member %s client URL %s has no redirect", m.Name, u)
			}
		}
	}
	for from := 0; from < 3; from++ {
		for to := 0; to < 3; to++ {
			if from != to {
				mustLink(t, c, fmt.Sprintf("etcd-%d->etcd-%d", from, to))
			}
		}
	}
	t.Run("no-bypass", func(t *testing.T) { assertNoDirectContainerConns(t, c, "etcd-") })

	t.Run("pause-kill-restart", func(t *testing.T) {
		names := []string{"etcd-0", "etcd-1", "etcd-2"}
		var leader string
		testenv.Eventually(t, 10*time.Second, "a leader", func() error {
			if leader = etcdLeader(c, names); leader == "" {
				return errors.New("no leader")
			}
			return nil
		})
		var victim *cluster.Node
		for _, name := range names {
			if name != leader {
				victim = mustNode(t, c, name)
				break
			}
		}
		// Write through the leader: a client of the victim would wait for it.
		lc := etcdClient(t, []string{ep.Redirect[mustNode(t, c, leader).Addr()]})
		if err := victim.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := lc.Put(ctx, "locklab/test/during-pause", "1"); err != nil {
			t.Errorf("put with a follower paused: %v", err)
		}
		if err := victim.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		if err := victim.Kill(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := lc.Put(ctx, "locklab/test/during-kill", "1"); err != nil {
			t.Errorf("put with a follower killed: %v", err)
		}
		t0 := time.Now()
		if err := victim.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (leader %s) paused, resumed, killed and started again; serving %v after Start", victim.Name, leader, time.Since(t0))
		one := etcdClient(t, []string{ep.Redirect[victim.Addr()]})
		testenv.Eventually(t, 10*time.Second, "restarted member has the data", func() error {
			r, err := one.Get(ctx, "locklab/test/during-kill")
			if err == nil && len(r.Kvs) != 1 {
				err = errors.New("key missing")
			}
			return err
		})
	})

	t.Run("isolate-leader", func(t *testing.T) {
		names := []string{"etcd-0", "etcd-1", "etcd-2"}
		// An election may be going on after the earlier subtests: poll.
		var leader string
		deadline := time.Now().Add(30 * time.Second)
		for leader == "" {
			if leader = etcdLeader(c, names); leader == "" && time.Now().After(deadline) {
				t.Fatal("the etcd cluster reports no leader after 30s")
			}
			if leader == "" {
				time.Sleep(100 * time.Millisecond) // polling the members' roles
			}
		}
		var others []string
		for _, n := range names {
			if n != leader {
				others = append(others, n)
			}
		}
		// Peer links per directed pair, as with local servers: the
		// partition cuts both directions between the leader and each other
		// member, and leaves the others' links to each other alone.
		ls, err := c.Partition([][]string{{leader}, others})
		if err != nil {
			t.Fatal(err)
		}
		cut := map[string]bool{}
		for _, l := range ls {
			cut[l.Name] = true
			l.Cut()
		}
		for _, o := range others {
			if !cut[o+"->"+leader] || !cut[leader+"->"+o] {
				t.Errorf("partition %v does not cut %s<->%s", cut, o, leader)
			}
		}
		if cut[others[0]+"->"+others[1]] {
			t.Errorf("partition cuts %s->%s", others[0], others[1])
		}
		t0 := time.Now()
		testenv.Eventually(t, 20*time.Second, "new leader", func() error {
			if etcdLeader(c, others) == "" {
				return errors.New("no leader among the others")
			}
			return nil
		})
		t.Logf("new leader %s after %v", etcdLeader(c, others), time.Since(t0))
		for _, l := range ls {
			l.Heal(ctx)
		}
	})
}

// BenchmarkStartup starts and closes each topology with each provider:
// `go test -run '^$' -bench Startup ./cluster/` prints the times side by
// side (ns/op is one start until ready plus its close). A container start is
// a round trip to the engine (0.3-1 s on a busy 2-core machine) that a local
// spawn does not pay, so small topologies cannot be within 2x of local.
// A measurement, not a timed test: machines are noisy.
func BenchmarkStartup(b *testing.B) {
	testenv.RequireDockerImages(b)
	testenv.RequireBinaries(b, "redis-server", "redis-sentinel", "java", "etcd")
	for _, tc := range []struct {
		name string
		spec cluster.Spec
	}{
		{"redis-1", cluster.Spec{Redis: &cluster.RedisSpec{}}},
		{"redis-3-primaries", cluster.Spec{Redis: &cluster.RedisSpec{Primaries: 3}}},
		{"redis-1+1-replica+3-sentinels", cluster.Spec{Redis: &cluster.RedisSpec{Replicas: 1, Sentinels: 3, Persistence: cluster.PersistEverysec}}},
		{"zookeeper-1", cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 1}}}},
		{"zookeeper-3", cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 3}}}},
		{"zookeeper-5", cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 5}}}},
		{"etcd-1", cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 1}}}},
		{"etcd-3", cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 3}}}},
		{"etcd-5", cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 5}}}},
	} {
		for _, provider := range []string{cluster.ProviderLocal, cluster.ProviderDocker} {
			b.Run(tc.name+"/"+provider, func(b *testing.B) {
				for b.Loop() {
					spec := tc.spec
					spec.Provider, spec.Dir = provider, b.TempDir()
					if provider == cluster.ProviderDocker {
						spec.RunID = "startup"
					}
					ctx, cancel := context.WithTimeout(context.Background(), testenv.ClusterStartTimeout)
					c, err := cluster.Start(ctx, spec)
					cancel()
					if err != nil {
						b.Fatalf("%s: %v", provider, err)
					}
					if err := c.Close(); err != nil {
						b.Errorf("close: %v", err)
					}
				}
			})
		}
	}
}

func TestDockerCleanup(t *testing.T) {
	testenv.RequireDockerImages(t)
	ctx := ctxT(t, time.Minute)
	c, err := cluster.Start(ctx, cluster.Spec{Provider: cluster.ProviderDocker, Redis: &cluster.RedisSpec{},
		Dir: t.TempDir(), RunID: "test-cleanup"})
	if err != nil {
		t.Fatal(err)
	}
	run := c.RunID()
	if left := testenv.DockerLeftovers(t, run); len(left) != 2 {
		t.Fatalf("running cluster: %v", left)
	}
	// The cluster's harness (this process) is alive: a plain cleanup keeps it.
	res, err := docker.Cleanup(ctx, docker.CleanupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if left := testenv.DockerLeftovers(t, run); len(left) != 2 {
		t.Fatalf("cleanup removed a live run: %v (%+v)", left, res)
	}
	// --all, limited to this test's run: other locklab runs on this
	// machine (another test suite, a user's run) must not lose theirs.
	res, err = docker.Cleanup(ctx, docker.CleanupOptions{All: true, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cleanup: %+v", res)
	if left := testenv.DockerLeftovers(t, run); len(left) != 0 {
		t.Errorf("after cleanup --all: %v", left)
	}
	// Close after a cleanup removed everything is not an error.
	if err := c.Close(); err != nil {
		t.Errorf("close after cleanup: %v", err)
	}
}
