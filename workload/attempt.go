package workload

import (
	"context"
	"sync"
	"time"

	"github.com/locklab/locklab/checker"
)

// recordAttempt sends the resource's history an acquire of lock by client
// that granted nothing (checker.OpAttempt): sent at sent, given up at end
// with outcome (ErrNotObtained, ErrAcquireTimeout, ErrAcquire, or
// checker.AttemptWaiting when the run ended while it waited). The checker
// counts a waiter as contending for the lock while another client holds
// it. Times are narrowed by the client's clock uncertainty: the attempt
// was certainly in progress over what is recorded.
func recordAttempt(res checker.Resource, cfg Config, client int, lock string, sent, end time.Time, outcome string, tries []int64) {
	r, ok := res.(checker.OpRecorder)
	if !ok {
		return
	}
	from, to := sent.Sub(cfg.Base)+cfg.ClockUncertainty, end.Sub(cfg.Base)-cfg.ClockUncertainty
	if to < from {
		to = from
	}
	_ = r.Record(context.Background(), checker.Op{Op: checker.OpAttempt, Client: client, Lock: lock,
		Invoke: int64(from), Return: int64(to), Outcome: outcome, Tries: tries})
}

// tryLog collects the sends an Acquire reports through locks.Tried (the
// lock may report from its own goroutines). It keeps at most
// checker.MaxTries, spread over the whole call: once full it drops every
// other kept send and from then on keeps every stride-th, so a long wait
// still shows its sends late in the call, only fewer of them (a count of
// sends in a window can be understated, never overstated).
type tryLog struct {
	mu     sync.Mutex
	at     []time.Time
	seen   int // sends reported
	stride int // keep every stride-th send (0: every one)
}

func (t *tryLog) add() {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen++
	if t.stride > 1 && (t.seen-1)%t.stride != 0 {
		return
	}
	if len(t.at) == checker.MaxTries {
		kept := t.at[:0]
		for i := 0; i < len(t.at); i += 2 {
			kept = append(kept, t.at[i])
		}
		t.at = kept
		t.stride = max(t.stride, 1) * 2
		if (t.seen-1)%t.stride != 0 {
			return
		}
	}
	t.at = append(t.at, now)
}

// since returns the sends as nanoseconds since base.
func (t *tryLog) since(base time.Time) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.at) == 0 {
		return nil
	}
	out := make([]int64, len(t.at))
	for i, at := range t.at {
		out[i] = int64(at.Sub(base))
	}
	return out
}
