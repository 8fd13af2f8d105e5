package workload

import (
	"context"
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
func recordAttempt(res checker.Resource, cfg Config, client int, lock string, sent, end time.Time, outcome string) {
	r, ok := res.(checker.OpRecorder)
	if !ok {
		return
	}
	from, to := sent.Sub(cfg.Base)+cfg.ClockUncertainty, end.Sub(cfg.Base)-cfg.ClockUncertainty
	if to < from {
		to = from
	}
	_ = r.Record(context.Background(), checker.Op{Op: checker.OpAttempt, Client: client, Lock: lock,
		Invoke: int64(from), Return: int64(to), Outcome: outcome})
}
