package redlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redlock"
)

// Redlock on five independent primaries. The holder must finish before
// ValidUntil, or stop when Lost says the validity ran out: Redlock gives
// no fencing token the protected resource could check.
func Example() {
	ctx := context.Background()
	c, err := redlock.New(ctx, locks.Config{
		Endpoints: locks.Endpoints{Redis: []string{
			"127.0.0.1:6379", "127.0.0.1:6380", "127.0.0.1:6381", "127.0.0.1:6382", "127.0.0.1:6383",
		}},
		TTL:     5 * time.Second,
		Options: map[string]string{"renew": "true"},
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
	held := lease.(*redlock.Lease)
	fmt.Println("held on", held.Nodes(), "for", held.Validity())
	select {
	case <-lease.Lost():
		fmt.Println("lock lost: stop writing")
	case <-time.After(time.Second): // the work
		fmt.Println("done")
	}
}
