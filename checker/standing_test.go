package checker

import (
	"testing"
	"time"
)

// TestStandingWaiters: waiters whose calls span a held fault's window but
// send nothing inside it count only when the lock's waiters stand in the
// race (a watch the server fires when the holder's state goes).
func TestStandingWaiters(t *testing.T) {
	ms := time.Millisecond
	holder := ExpVisit{Client: 0, Lock: "k", Enter: 0, Exit: 1000 * ms, PromiseEnd: 5000 * ms, Promised: true}
	fault := FaultSpan{Start: 100 * ms, End: 400 * ms, Client: 0, Lease: time.Second}
	for _, standing := range []bool{false, true} {
		s := New(FencingObserve, time.Time{})
		s.SetStanding(standing)
		s.TrackExposure()
		s.mu.Lock()
		for c := 1; c <= 3; c++ {
			// Each waiter sent once before the fault and timed out after it.
			s.sent("k", c, 50*ms, 900*ms, true, s.standing, nil)
		}
		sends := s.exp.sends
		s.mu.Unlock()
		e := Exposures([]FaultSpan{fault}, []ExpVisit{holder}, sends, 2*time.Second)[0]
		want := 0
		if standing {
			want = 3
		}
		if !e.Held || e.Attempts != want {
			t.Errorf("standing %v: held %v, attempts %d, want held with %d", standing, e.Held, e.Attempts, want)
		}
	}
}
