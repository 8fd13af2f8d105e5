package cluster_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	redisrow "github.com/locklab/locklab/cluster/backends/redis"
	"github.com/locklab/locklab/testenv"
)

// TestRedisCluster starts a Redis Cluster of 3 primaries with a replica
// each and checks what the locks and faults rely on: every node sees the
// cluster ok, the slots are split evenly with each range's replica behind
// its primary, a cluster client reaches every node through its own
// proxies (Endpoints.Redirect), replication runs over the peer link, and a
// killed primary's replica is promoted by the cluster itself.
func TestRedisCluster(t *testing.T) {
	t0 := time.Now()
	c := testenv.Cluster(t, cluster.Spec{
		Redis:   &cluster.RedisSpec{Mode: cluster.RedisCluster, Primaries: 3, Replicas: 1},
		Clients: 2,
	})
	t.Logf("redis cluster of 3 primaries + 3 replicas ready in %v", time.Since(t0))
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range []string{"redis-0", "redis-0-r0", "redis-1"} {
				b, _ := os.ReadFile(filepath.Join(c.Dir(), "logs", n+".log"))
				t.Logf("%s.log:\n%s", n, b)
			}
		}
	})
	ctx := ctxT(t, 2*time.Minute)
	ep := c.Endpoints(0)
	if !ep.RedisCluster || len(ep.Redis) != 3 {
		t.Fatalf("endpoints: RedisCluster %v, Redis %v", ep.RedisCluster, ep.Redis)
	}
	for _, n := range c.Nodes() {
		info, err := redisClient(t, n.Addr(), 2*time.Second).ClusterInfo(ctx).Result()
		if err != nil {
			t.Fatalf("%s: CLUSTER INFO: %v", n.Name, err)
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_ok:16384", "cluster_known_nodes:6"} {
			if !strings.Contains(info, want) {
				t.Errorf("%s: CLUSTER INFO lacks %s:\n%s", n.Name, want, info)
			}
		}
	}
	mustLink(t, c, "redis-0-r0->redis-0")

	// Every dial of the cluster client but the seeds' (client proxies
	// already) must be to an address the cluster announced that Redirect
	// maps to a client proxy.
	var (
		dialsMu sync.Mutex
		dials   []string
		d       net.Dialer
	)
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: ep.Redis, MaxRetries: -1, ContextTimeoutEnabled: true,
		ClusterStateReloadInterval: time.Second, // as the locks' client: follows a failover
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			to, ok := ep.Redirect[addr]
			if !ok && !slices.Contains(ep.Redis, addr) {
				return nil, fmt.Errorf("no redirect for %s", addr)
			}
			if !ok {
				to = addr
			}
			dialsMu.Lock()
			dials = append(dials, addr)
			dialsMu.Unlock()
			return d.DialContext(ctx, network, to)
		},
	})
	t.Cleanup(func() { cc.Close() })

	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"} // slots on every primary
	for _, k := range keys {
		if err := cc.Set(ctx, k, "v-"+k, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	for _, k := range keys {
		if v, err := cc.Get(ctx, k).Result(); err != nil || v != "v-"+k {
			t.Fatalf("GET %s = %q, %v", k, v, err)
		}
	}
	for _, k := range append(keys, "{a}:fence", "locklab:x:lock-0") {
		if got, err := cc.ClusterKeySlot(ctx, k).Result(); err != nil || int(got) != redisrow.KeySlot(k) {
			t.Errorf("CLUSTER KEYSLOT %s = %d, %v; KeySlot says %d", k, got, err, redisrow.KeySlot(k))
		}
	}
	dialsMu.Lock()
	if len(dials) < 3 {
		t.Errorf("cluster client dialed %v: want every primary", dials)
	}
	dialsMu.Unlock()

	// CLUSTER SLOTS lists a replica once it has replicated something
	// (a non-zero offset), so after the writes.
	var slots []redis.ClusterSlot
	testenv.Eventually(t, 10*time.Second, "every range with its replica", func() (err error) {
		if slots, err = cc.ClusterSlots(ctx).Result(); err != nil {
			return err
		}
		for _, s := range slots {
			if len(s.Nodes) != 2 {
				return fmt.Errorf("slots %d-%d: %d nodes", s.Start, s.End, len(s.Nodes))
			}
		}
		return nil
	})
	if len(slots) != 3 {
		t.Fatalf("CLUSTER SLOTS: %d ranges, want 3: %+v", len(slots), slots)
	}
	for _, s := range slots {
		if len(s.Nodes) != 2 {
			t.Errorf("slots %d-%d: %d nodes, want primary and replica", s.Start, s.End, len(s.Nodes))
			continue
		}
		p, ok := c.NodeAt(s.Nodes[0].Addr)
		r, rok := c.NodeAt(s.Nodes[1].Addr)
		if !ok || !rok || p.Kind != cluster.KindRedis || r.Name != p.Name+"-r0" {
			t.Errorf("slots %d-%d served by %s, %s: not a primary and its replica", s.Start, s.End, s.Nodes[0].Addr, s.Nodes[1].Addr)
			continue
		}
		i := int(p.Name[len("redis-")] - '0')
		if lo, hi := redisrow.SlotRange(i, 3); s.Start != lo || s.End != hi {
			t.Errorf("%s holds slots %d-%d, want %d-%d", p.Name, s.Start, s.End, lo, hi)
		}
	}

	// The bus goes through the links: cutting redis-0 off from the other
	// servers (not from the clients) makes the cluster fail it over.
	t.Run("partition", func(t *testing.T) {
		links, err := c.Partition([][]string{{"redis-0"}, {"redis-1", "redis-2", "redis-0-r0", "redis-1-r0", "redis-2-r0"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if err := l.Cut(); err != nil {
				t.Fatal(err)
			}
		}
		t1 := time.Now()
		testenv.Eventually(t, 30*time.Second, "promotion of redis-0-r0 across the partition", func() error {
			info, err := redisClient(t, mustNode(t, c, "redis-0-r0").Addr(), time.Second).Do(ctx, "ROLE").Slice()
			if err != nil {
				return err
			}
			if info[0] != "master" {
				return fmt.Errorf("redis-0-r0 is a %v", info[0])
			}
			return nil
		})
		t.Logf("redis-0-r0 promoted %v after the partition", time.Since(t1))
		for _, l := range links {
			if err := l.Heal(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// Healed, redis-0 learns it lost its slots and replicates from
		// redis-0-r0 (through redis-0->redis-0-r0).
		testenv.Eventually(t, 30*time.Second, "redis-0 demoted after the heal", func() error {
			p, err := c.Primary(ctx, "redis-0")
			if err != nil {
				return err
			}
			if role, _ := mustNode(t, c, "redis-0").Role(ctx); p.Name != "redis-0-r0" || role != "replica" {
				return fmt.Errorf("primary %s, redis-0 %s", p.Name, role)
			}
			info, err := redisClient(t, mustNode(t, c, "redis-0").Addr(), time.Second).Info(ctx, "replication").Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "master_link_status:up") {
				return fmt.Errorf("redis-0 does not replicate yet")
			}
			return nil
		})
	})

	t.Run("failover", func(t *testing.T) {
		p, err := c.Primary(ctx, "redis-1")
		if err != nil || p.Name != "redis-1" {
			t.Fatalf("Primary(redis-1) = %v, %v", p, err)
		}
		if err := p.Kill(ctx); err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		testenv.Eventually(t, 30*time.Second, "promotion of redis-1-r0", func() error {
			p, err := c.Primary(ctx, "redis-1")
			if err != nil {
				return err
			}
			if p.Name != "redis-1-r0" {
				return fmt.Errorf("primary %s", p.Name)
			}
			return nil
		})
		t.Logf("redis-1-r0 promoted %v after the kill", time.Since(t1))
		// Key "c" is in redis-1's slots (7365): the client follows the new map.
		testenv.Eventually(t, 10*time.Second, "GET c from the promoted replica", func() error {
			return cc.Get(ctx, "c").Err()
		})
	})
}
