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

// tryLog collects the sends an Acquire reports through locks.Tried (at
// most checker.MaxTries; the lock may report from its own goroutines).
type tryLog struct {
	mu sync.Mutex
	at []time.Time
}

func (t *tryLog) add() {
	now := time.Now()
	t.mu.Lock()
	if len(t.at) < checker.MaxTries {
		t.at = append(t.at, now)
	}
	t.mu.Unlock()
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
