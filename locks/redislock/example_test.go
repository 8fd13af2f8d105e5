package redislock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
)

// A watchdog lock: the holder renews its key while it works and stops
// working when Lost says the lock is gone. The token goes with every write
// to the protected resource, which rejects tokens older than one it saw.
func Example() {
	ctx := context.Background()
	c, err := redislock.New(ctx, redislock.Watchdog, locks.Config{
		Endpoints: locks.Endpoints{Redis: []string{"127.0.0.1:6379"}},
		TTL:       5 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	lease, err := c.Locker("orders").Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lease.Release(ctx)
	select {
	case <-lease.Lost():
		fmt.Println("lock lost: stop writing")
	case <-time.After(time.Second): // the work
		fmt.Println("wrote with token", lease.Token())
	}
}
