package workload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/workload"
)

// TestAttemptsRecorded: an acquire that timed out behind a holder goes to
// the history as an attempt line over its wait, and the resource counts
// its client as contending: one holder at a time, the others waiting
// longer than their acquire timeout, all three contend in a window in
// the middle of the run. The run's end finds a waiter still waiting, and
// no client tries again after it.
func TestAttemptsRecorded(t *testing.T) {
	base := time.Now()
	res := checker.New(checker.FencingOff, base)
	var buf bytes.Buffer
	h := checker.NewHistory(&buf, 0)
	res.SetHistory(h)
	rec := workload.NewRecorder(base)
	cfg := workload.Config{Clients: 3, Duration: 1500 * time.Millisecond, CriticalSection: 400 * time.Millisecond,
		AcquireTimeout: 250 * time.Millisecond, Base: base}
	workload.Drive(context.Background(), cfg, memClients(3), res, rec)
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]int{}
	lateGrants := 0 // granted once the run's end woke the holder and it let go
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var op checker.Op
		if err := json.Unmarshal([]byte(line), &op); err != nil {
			t.Fatal(err)
		}
		if op.Op == checker.OpAcquire && op.Return >= int64(cfg.Duration) {
			lateGrants++
		}
		if op.Op != checker.OpAttempt {
			continue
		}
		outcomes[op.Outcome]++
		if op.Visit != 0 || op.Lock != workload.LockName(0) || op.Return-op.Invoke < int64(200*time.Millisecond) && op.Outcome == checker.AttemptTimedOut {
			t.Errorf("attempt line %s", line)
		}
	}
	if outcomes[checker.AttemptTimedOut] == 0 || outcomes[checker.AttemptTimedOut] != int(rec.Summary().Errors[workload.ErrAcquireTimeout]) {
		t.Errorf("attempt outcomes %v, acquire timeouts counted %d", outcomes, rec.Summary().Errors[workload.ErrAcquireTimeout])
	}
	// At the end two clients wait behind the holder. The run's end wakes
	// them and the holder at once; on a loaded machine the holder can let
	// go before a waiter's own context has heard of the end, and that
	// waiter is granted the lock rather than recorded as waiting.
	if n := outcomes[checker.AttemptWaiting]; n+lateGrants == 0 || n > cfg.Clients {
		t.Errorf("attempt outcomes %v, %d grants after the end: want a waiter still waiting at the end (or granted as it came), at most one per client (no attempt begun after it)", outcomes, lateGrants)
	}
	each, _ := res.InWindows([]checker.Window{{Start: 300 * time.Millisecond, End: 1200 * time.Millisecond}})
	if each[0].Contenders != 3 {
		t.Errorf("window evidence %+v, want 3 contenders", each[0])
	}
}
