package workload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/testenv"
	"github.com/locklab/locklab/workload"
)

// flakyResource is the real resource whose Write fails once after n
// successful ones.
type flakyResource struct {
	*checker.Shared
	n      atomic.Int64
	writes atomic.Int64
}

func (f *flakyResource) Write(ctx context.Context, visit uint64, value int64) error {
	if f.writes.Add(1) == f.n.Load()+1 {
		return errors.New("injected resource failure")
	}
	return f.Shared.Write(ctx, visit, value)
}

// TestResourceErrorEndsClient: after a resource-call error the client stops
// locking (it must never go on unchecked), it does not carry on to the
// run's end.
func TestResourceErrorEndsClient(t *testing.T) {
	addr := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := time.Now()
	res := &flakyResource{Shared: checker.New(checker.FencingOff, base)}
	res.n.Store(3)
	rec := workload.NewRecorder(base)
	cfg := workload.Config{Clients: 1, Duration: 20 * time.Second, Base: base}
	start := time.Now()
	if err := workload.Run(ctx, cfg, redisCAD(t, addr), res, rec); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("client ran %v after the resource error: it should stop", took)
	}
	sum, truth := rec.Summary(), res.Summary()
	if sum.Errors[workload.ErrResource] != 1 || truth.Visits != 4 || sum.Ops != 3 {
		t.Errorf("errors %v, visits %d, ops %d: want 1 resource error, 4 visits, 3 ops", sum.Errors, truth.Visits, sum.Ops)
	}
	if truth.Inside != 0 {
		t.Errorf("%d visits left inside", truth.Inside)
	}
}

// TestOnLost: with a critical section longer than the TTL, a careful client
// (abort) skips every write because its promise ran out; the default client
// writes anyway.
func TestOnLost(t *testing.T) {
	addr := testenv.Redis(t)
	spec, _ := locks.Lookup("redis-cad")
	for _, tc := range []struct {
		onLost      string
		wantAborted bool
	}{{workload.OnLostIgnore, false}, {workload.OnLostAbort, true}} {
		t.Run(tc.onLost, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			base := time.Now()
			res := checker.New(checker.FencingOff, base)
			rec := workload.NewRecorder(base)
			cfg := workload.Config{Clients: 1, Ops: 3, CriticalSection: 150 * time.Millisecond, Base: base, OnLost: tc.onLost}
			connect := func(ctx context.Context, i int) (locks.Client, error) {
				return spec.New(ctx, locks.Config{Endpoints: locks.Endpoints{Redis: []string{addr}}, TTL: 50 * time.Millisecond,
					Prefix: "wl:" + t.Name() + ":"})
			}
			if err := workload.Run(ctx, cfg, connect, res, rec); err != nil {
				t.Fatal(err)
			}
			sum, truth := rec.Summary(), res.Summary()
			aborted := sum.Errors[workload.ErrAbortedLost]
			if tc.wantAborted && (aborted != 3 || truth.Writes != 0) {
				t.Errorf("abort: %d aborted, %d writes; want 3 and 0", aborted, truth.Writes)
			}
			if !tc.wantAborted && (aborted != 0 || truth.Writes != 3) {
				t.Errorf("ignore: %d aborted, %d writes; want 0 and 3", aborted, truth.Writes)
			}
		})
	}
}

// TestHistory: every operation of a run goes to the history, and replaying
// it gives the resource's own figures.
func TestHistory(t *testing.T) {
	addr := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := time.Now()
	res := checker.New(checker.FencingObserve, base)
	var buf bytes.Buffer
	h := checker.NewHistory(&buf, 0)
	res.SetHistory(h)
	rec := workload.NewRecorder(base)
	cfg := workload.Config{Clients: 3, Ops: 60, Base: base}
	if err := workload.Run(ctx, cfg, redisCAD(t, addr), res, rec); err != nil {
		t.Fatal(err)
	}
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var op checker.Op
		if err := json.Unmarshal([]byte(line), &op); err != nil {
			t.Fatal(err)
		}
		ops[op.Op]++
		if op.Op == checker.OpAcquire && (op.ValidUntil <= op.Return || op.Invoke > op.Return) {
			t.Errorf("acquire line with promise %d, invoke %d, return %d", op.ValidUntil, op.Invoke, op.Return)
		}
	}
	for _, op := range []string{"acquire", "enter", "read", "write", "exit", "release"} {
		if ops[op] != 60 {
			t.Errorf("%d %s lines, want 60 (%v)", ops[op], op, ops)
		}
	}
	sums, err := checker.Replay(&buf, checker.FencingObserve)
	if err != nil {
		t.Fatal(err)
	}
	live := res.Summary()
	if r := sums[0]; r.Visits != live.Visits || r.Writes != live.Writes || r.Violations != live.Violations || r.Incidents != live.Incidents {
		t.Errorf("replay %+v, live %+v", r, live)
	}
}
