package adapters_test

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/adapters"
)

// bsm/redislock behind locks.Locker, renewing while held. The library gives
// no fencing token: Token is 0.
func ExampleNewBSM() {
	ctx := context.Background()
	c, err := adapters.NewBSM(ctx, locks.Config{
		Endpoints: locks.Endpoints{Redis: []string{"127.0.0.1:6379"}},
		TTL:       5 * time.Second,
		Options:   map[string]string{"renew": "true"},
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
		fmt.Println("done")
	}
}
