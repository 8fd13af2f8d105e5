package memlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/memlock"
)

func Example() {
	c := memlock.NewClient(memlock.NewTable(), locks.Config{TTL: 10 * time.Second, Prefix: "example:"})
	ctx := context.Background()
	lease, err := c.Locker("orders").Acquire(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("token", lease.Token())
	fmt.Println(lease.Release(ctx))
	// Output:
	// token 1
	// <nil>
}
