package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// BenchmarkAcquireRelease measures one uncontended client taking and giving
// back a lock: the floor under every hand-off.
func BenchmarkAcquireRelease(b *testing.B) {
	addr := testenv.Redis(b)
	for _, v := range allVariants {
		b.Run(string(v), func(b *testing.B) {
			ctx := context.Background()
			c, err := redislock.New(ctx, v, locks.Config{
				Endpoints: locks.Endpoints{Redis: []string{addr}},
				TTL:       10 * time.Second,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			l := c.Locker(b.Name())
			b.ReportAllocs()
			locktest.AcquireRelease(b, l)
			b.ReportMetric(float64(c.Counters()["requests"])/float64(b.N), "requests/op")
		})
	}
}
