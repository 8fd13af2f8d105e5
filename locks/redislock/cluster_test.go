package redislock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestRedisCluster runs the package's locks on a Redis Cluster of 3
// primaries (each client through its own proxies, the cluster client
// dialing every announced address through Endpoints.Redirect): redis-cad's
// conformance under contention, with increasing tokens, and one
// acquire/release of each multi-key kind, whose hash-tagged keys must fall
// in one slot (a CROSSSLOT error otherwise).
func TestRedisCluster(t *testing.T) {
	const clients = 4
	cl := testenv.Cluster(t, cluster.Spec{
		Redis:   &cluster.RedisSpec{Mode: cluster.RedisCluster, Primaries: 3},
		Clients: clients,
	})
	connect := func(t *testing.T, v redislock.Variant, i int, opts map[string]string) *redislock.Client {
		t.Helper()
		cfg := locks.Config{Endpoints: cl.Endpoints(i), TTL: 10 * time.Second, Seed: int64(i), Options: opts}
		c, err := redislock.New(locktest.Timeout(t, 10*time.Second), v, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Run("redis-cad", func(t *testing.T) {
		locktest.Contend(t, locktest.Contenders{
			Connect: func(i int) locks.Client { return connect(t, redislock.CAD, i, nil) },
			Clients: clients, Rounds: 10, Hold: time.Millisecond, Within: time.Minute, Fencing: true,
		})
	})
	for _, v := range []redislock.Variant{redislock.Watchdog, redislock.Reentrant, redislock.RW, redislock.Fair, redislock.Semaphore} {
		t.Run(string(v), func(t *testing.T) {
			var opts map[string]string
			if v == redislock.Semaphore {
				opts = map[string]string{"permits": "2"}
			}
			c := connect(t, v, 0, opts)
			// Three lock names, so three slots.
			for _, name := range []string{"a", "b", "c"} {
				lease, err := c.Locker(strings.ReplaceAll(t.Name(), "/", "-") + name).Acquire(locktest.Timeout(t, 10*time.Second))
				if err != nil {
					t.Fatalf("Acquire %s: %v", name, err)
				}
				if err := lease.Release(context.Background()); err != nil {
					t.Fatalf("Release %s: %v", name, err)
				}
			}
		})
	}
}
