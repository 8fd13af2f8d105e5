package zklock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/locklab/locklab/locks"
	_ "github.com/locklab/locklab/locks/zklock" // registers zk-recipe and zk-herd
)

// Example takes zk-recipe through the registry, as the harness does, and
// uses the lease the way a careful holder should: fence every write with
// the token and stop writing when Lost closes.
func Example() {
	ctx := context.Background()
	spec, _ := locks.Lookup("zk-recipe")
	client, err := spec.New(ctx, locks.Config{
		Endpoints: locks.Endpoints{Table: map[string][]string{"zookeeper": {"127.0.0.1:2181"}}},
		Options:   map[string]string{"session_timeout": "10s"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	lease, err := client.Locker("orders").Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-lease.Lost():
		// Disconnected or expired: stop touching the resource.
	case <-time.After(time.Second):
		fmt.Println("write with fencing token", lease.Token())
	}
	if err := lease.Release(ctx); err != nil {
		log.Print(err) // errors.Is(err, locks.ErrNotHeld) when the session expired
	}
}
