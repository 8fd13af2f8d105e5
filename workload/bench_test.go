package workload_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/memlock"
	"github.com/locklab/locklab/workload"
)

// BenchmarkRecorder is one critical section's recording (acquired,
// completed, released) by GOMAXPROCS clients into one recorder.
func BenchmarkRecorder(b *testing.B) {
	rec := workload.NewRecorder(time.Now())
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec.Acquired(150 * time.Microsecond)
			rec.Completed(time.Now())
			rec.Released(120 * time.Microsecond)
		}
	})
}

// BenchmarkLoopMem is the whole client loop (acquire, resource calls,
// recording, release) on the in-process lock: 8 clients, one key each,
// zero critical section. ns/op is wall time of harness per critical
// section; its inverse is the harness's ceiling.
func BenchmarkLoopMem(b *testing.B) {
	const clients = 8
	tab := memlock.NewTable()
	cs := make([]locks.Client, clients)
	for i := range cs {
		cs[i] = memlock.NewClient(tab, locks.Config{TTL: 10 * time.Second})
	}
	base := time.Now()
	res := checker.New(checker.FencingObserve, base)
	rec := workload.NewRecorder(base)
	cfg := workload.Config{Clients: clients, Keys: clients, KeyPerClient: true, Ops: b.N, Base: base}
	b.ResetTimer()
	workload.Drive(context.Background(), cfg, cs, res, rec)
	b.StopTimer()
	if sum := rec.Summary(); sum.Ops != int64(b.N) || len(sum.Errors) > 0 {
		b.Fatalf("ops %d of %d, errors %v", sum.Ops, b.N, sum.Errors)
	}
	if v := res.Summary().Violations; v > 0 {
		b.Fatalf("%d violations", v)
	}
}
