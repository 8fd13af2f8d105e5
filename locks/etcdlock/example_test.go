package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/locklab/locklab/locks"
	_ "github.com/locklab/locklab/locks/etcdlock" // registers etcd-recipe
)

// Example takes etcd-recipe through the registry, as the harness does, and
// fences the work with the key's create revision.
func Example() {
	ctx := context.Background()
	spec, _ := locks.Lookup("etcd-recipe")
	client, err := spec.New(ctx, locks.Config{
		Endpoints: locks.Endpoints{Table: map[string][]string{"etcd": {"127.0.0.1:2379"}}},
		TTL:       10 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	lease, err := client.Locker("orders").Acquire(ctx)
	if errors.Is(err, locks.ErrLeaseLost) {
		log.Fatal("lease expired while waiting; not holding the lock")
	}
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-lease.Lost():
		// The lease may be gone: stop touching the resource.
	case <-time.After(time.Second):
		fmt.Println("write with fencing token", lease.Token())
	}
	if err := lease.Release(ctx); err != nil {
		log.Print(err)
	}
}
