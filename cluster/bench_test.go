package cluster_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/testenv"
)

// BenchmarkProxy compares a Redis round trip (PING) dialed directly with
// the same through a client's embedded toxiproxy proxy, with no toxic: the
// cost the proxies add to every request of a run. "parallel" runs
// GOMAXPROCS connections at once.
func BenchmarkProxy(b *testing.B) {
	c := testenv.Cluster(b, cluster.Spec{Redis: &cluster.RedisSpec{Primaries: 1}, Clients: 1})
	node, _ := c.Node("redis-0")
	for _, path := range []struct{ name, addr string }{
		{"direct", node.Addr()},
		{"proxied", c.Endpoints(0).Redis[0]},
	} {
		rc := redis.NewClient(&redis.Options{Addr: path.addr})
		b.Cleanup(func() { rc.Close() })
		ctx := context.Background()
		b.Run(path.name, func(b *testing.B) {
			for b.Loop() {
				if err := rc.Ping(ctx).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(path.name+"/parallel", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := rc.Ping(ctx).Err(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
