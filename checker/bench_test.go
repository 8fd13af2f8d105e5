package checker_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
)

// visitOnce is one critical section's resource calls, as the workload makes
// them: Enter, Read, Write, Exit.
func visitOnce(b *testing.B, res *checker.Shared, lock string, client int, token uint64) {
	ctx := context.Background()
	id, err := res.Enter(ctx, checker.Visit{Lock: lock, Client: client, Token: token})
	if err != nil {
		b.Fatal(err)
	}
	v, err := res.Read(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	if err := res.Write(ctx, id, v+1); err != nil {
		b.Fatal(err)
	}
	if err := res.Exit(ctx, id); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkVisit is one client's critical sections on one lock.
func BenchmarkVisit(b *testing.B) {
	res := checker.New(checker.FencingObserve, time.Now())
	var token uint64
	for b.Loop() {
		token++
		visitOnce(b, res, "lock-0", 0, token)
	}
}

// BenchmarkVisitParallel is GOMAXPROCS clients, each on its own lock: the
// resource's one mutex is what they share.
func BenchmarkVisitParallel(b *testing.B) {
	res := checker.New(checker.FencingObserve, time.Now())
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		client := int(next.Add(1))
		lock := fmt.Sprintf("lock-%d", client)
		var token uint64
		for pb.Next() {
			token++
			visitOnce(b, res, lock, client, token)
		}
	})
}
