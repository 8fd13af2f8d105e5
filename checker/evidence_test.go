package checker

import (
	"context"
	"strings"
	"testing"
	"time"
)

// clocked is a resource whose clock reads *now.
func clocked(now *time.Duration) *Shared {
	s := New(FencingOff, time.Time{})
	s.clock = func() time.Duration { return *now }
	return s
}

// TestInWindows: a visit counts in a window when it overlapped it, at
// bucket resolution and never beyond (a visit that left before the start's
// bucket ended, or entered in the end's bucket, does not count); clients
// are counted once per window, visits once in the union; visits still
// inside count up to now.
func TestInWindows(t *testing.T) {
	ctx := context.Background()
	var now time.Duration
	s := clocked(&now)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	visit := func(client int, from, to time.Duration) {
		t.Helper()
		now = from
		id, err := s.Enter(ctx, Visit{Lock: "a", Client: client})
		if err != nil {
			t.Fatal(err)
		}
		if to < 0 {
			return // stays inside
		}
		now = to
		if err := s.Exit(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	visit(0, ms(100), ms(950))   // before the first window
	visit(1, ms(900), ms(1080))  // overlaps the first window within its start bucket only
	visit(1, ms(1200), ms(1400)) // inside the first window
	visit(2, ms(1300), ms(2500)) // across both windows
	visit(0, ms(1900), ms(2000)) // enters in the first window's end bucket
	visit(0, ms(3100), ms(3300)) // inside the second window
	visit(1, ms(3500), -1)       // still inside when counted
	now = ms(4000)

	each, union := s.InWindows([]Window{{Start: ms(1050), End: ms(1950)}, {Start: ms(2200), End: ms(4000)}})
	want := []WindowEvidence{{Visits: 2, Contenders: 2}, {Visits: 3, Contenders: 3}}
	for i := range want {
		if each[i] != want[i] {
			t.Errorf("window %d: %+v, want %+v", i, each[i], want[i])
		}
	}
	if (union != WindowEvidence{Visits: 4, Contenders: 3}) {
		t.Errorf("union %+v, want 4 visits by 3 clients", union)
	}

	// A window shorter than a bucket counts only visits that spanned it.
	each, _ = s.InWindows([]Window{{Start: ms(1420), End: ms(1440)}})
	if (each[0] != WindowEvidence{Visits: 1, Contenders: 1}) {
		t.Errorf("short window: %+v, want client 2's visit alone", each[0])
	}
	if each, union := s.InWindows(nil); len(each) != 0 || union != (WindowEvidence{}) {
		t.Errorf("no windows: %+v %+v", each, union)
	}
	if got := s.VisitsAfter(ms(1050)); got != 5 {
		t.Errorf("VisitsAfter(1.05s) = %d, want 5 (visits begun from the next bucket on)", got)
	}
}

// TestInWindowsSpansStaySmall: short visits of one client in one bucket
// share one span, so a million visits keep a few hundred spans.
func TestInWindowsSpansStaySmall(t *testing.T) {
	ctx := context.Background()
	var now time.Duration
	s := clocked(&now)
	const clients, perClient = 10, 100_000
	for c := range clients {
		for i := range perClient {
			now = time.Duration(i) * 100 * time.Microsecond // 10 s of 0.1 ms visits
			id, err := s.Enter(ctx, Visit{Lock: "a", Client: c})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Exit(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	spans := 0
	for _, sp := range s.ev.spans {
		spans += len(sp)
	}
	if spans > clients*101 {
		t.Errorf("%d spans for %d visits, want at most one per client per bucket", spans, clients*perClient)
	}
	_, union := s.InWindows([]Window{{Start: 0, End: 10 * time.Second}})
	if union.Contenders != clients || union.Visits < clients*perClient*98/100 {
		t.Errorf("union %+v, want %d clients and nearly all %d visits", union, clients, clients*perClient)
	}
}

// TestInWindowsCountsWaiters: over a history in history.jsonl's format, a
// client counts as a contender in a window when it visited there or when
// an acquire of it that granted nothing (refused, timed out, still waiting
// at the end) was in progress there while another client was inside. One
// client re-takes the lock through the window while two others are
// refused: three contenders, two of them waiting. Without the others'
// attempts, or with attempts that failed on the backend or fell in a gap
// when nobody held the lock, the holder contends alone.
func TestInWindowsCountsWaiters(t *testing.T) {
	// Client 0 makes three visits from 0.5 s to 3.5 s with 50 ms gaps;
	// the window is [1 s, 3 s].
	holder := `{"run":0,"seq":1,"client":0,"lock":"lock-0","op":"acquire","visit":1,"invoke_ns":400000000,"return_ns":500000000,"valid_until_ns":4000000000,"outcome":"ok"}
{"run":0,"seq":2,"client":0,"lock":"lock-0","op":"enter","visit":1,"invoke_ns":500000000,"return_ns":500000000,"outcome":"ok"}
{"run":0,"seq":3,"client":0,"lock":"lock-0","op":"exit","visit":1,"invoke_ns":1400000000,"return_ns":1400000000,"outcome":"ok"}
{"run":0,"seq":4,"client":0,"lock":"lock-0","op":"release","visit":1,"invoke_ns":1400000000,"return_ns":1410000000,"outcome":"ok"}
{"run":0,"seq":5,"client":0,"lock":"lock-0","op":"acquire","visit":2,"invoke_ns":1420000000,"return_ns":1450000000,"valid_until_ns":5000000000,"outcome":"ok"}
{"run":0,"seq":6,"client":0,"lock":"lock-0","op":"enter","visit":2,"invoke_ns":1450000000,"return_ns":1450000000,"outcome":"ok"}
{"run":0,"seq":7,"client":0,"lock":"lock-0","op":"exit","visit":2,"invoke_ns":2300000000,"return_ns":2300000000,"outcome":"ok"}
{"run":0,"seq":8,"client":0,"lock":"lock-0","op":"acquire","visit":3,"invoke_ns":2320000000,"return_ns":2350000000,"valid_until_ns":6000000000,"outcome":"ok"}
{"run":0,"seq":9,"client":0,"lock":"lock-0","op":"enter","visit":3,"invoke_ns":2350000000,"return_ns":2350000000,"outcome":"ok"}
{"run":0,"seq":10,"client":0,"lock":"lock-0","op":"exit","visit":3,"invoke_ns":3500000000,"return_ns":3500000000,"outcome":"ok"}
`
	// Client 1 times out after waiting from 0.6 s to 2.6 s; client 2 is
	// refused from 1.15 s to 1.45 s, then still waits at the end.
	refused := `{"run":0,"seq":11,"client":1,"lock":"lock-0","op":"attempt","invoke_ns":600000000,"return_ns":2600000000,"outcome":"acquire_timeout"}
{"run":0,"seq":12,"client":2,"lock":"lock-0","op":"attempt","invoke_ns":1150000000,"return_ns":1450000000,"outcome":"not_obtained"}
{"run":0,"seq":13,"client":2,"lock":"lock-0","op":"attempt","invoke_ns":2900000000,"return_ns":3600000000,"outcome":"waiting"}
`
	// Attempts that show no contention: a backend failure, a wait on
	// another lock, a wait shorter than a bucket, and one after the
	// window.
	noContention := `{"run":0,"seq":11,"client":1,"lock":"lock-0","op":"attempt","invoke_ns":600000000,"return_ns":2600000000,"outcome":"acquire_error"}
{"run":0,"seq":12,"client":2,"lock":"lock-1","op":"attempt","invoke_ns":1150000000,"return_ns":2450000000,"outcome":"acquire_timeout"}
{"run":0,"seq":13,"client":3,"lock":"lock-0","op":"attempt","invoke_ns":1210000000,"return_ns":1290000000,"outcome":"not_obtained"}
{"run":0,"seq":14,"client":4,"lock":"lock-0","op":"attempt","invoke_ns":3050000000,"return_ns":3400000000,"outcome":"not_obtained"}
`
	window := []Window{{Start: time.Second, End: 3 * time.Second}}
	for _, tt := range []struct {
		name    string
		history string
		want    WindowEvidence
	}{
		{"holder and two refused waiters", holder + refused, WindowEvidence{Visits: 3, Contenders: 3, Waiting: 2}},
		{"nobody else tried", holder, WindowEvidence{Visits: 3, Contenders: 1}},
		{"attempts that show no contention", holder + noContention, WindowEvidence{Visits: 3, Contenders: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runs, err := replayInto(strings.NewReader(tt.history), FencingOff)
			if err != nil {
				t.Fatal(err)
			}
			each, union := runs[0].InWindows(window)
			if each[0] != tt.want || union != tt.want {
				t.Errorf("window %+v, union %+v; want %+v", each[0], union, tt.want)
			}
		})
	}
}

// TestInWindowsWaiterNeedsAHolder: a wait counts only in a bucket in which
// another client was inside, a visit still inside included.
func TestInWindowsWaiterNeedsAHolder(t *testing.T) {
	ctx := context.Background()
	var now time.Duration
	s := clocked(&now)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	wait := func(client int, from, to time.Duration) {
		t.Helper()
		if err := s.Record(ctx, Op{Op: OpAttempt, Client: client, Lock: "a", Invoke: int64(from), Return: int64(to), Outcome: AttemptRefused}); err != nil {
			t.Fatal(err)
		}
	}
	wait(1, ms(900), ms(2000)) // nobody inside meanwhile
	now = ms(2050)
	if _, err := s.Enter(ctx, Visit{Lock: "a", Client: 0}); err != nil { // still inside at the end
		t.Fatal(err)
	}
	wait(2, ms(2000), ms(2400)) // overlaps client 0's open visit
	now = ms(3000)
	each, _ := s.InWindows([]Window{{Start: ms(1050), End: ms(2900)}})
	if want := (WindowEvidence{Visits: 1, Contenders: 2, Waiting: 1}); each[0] != want {
		t.Errorf("%+v, want %+v (client 0 visiting, client 2 waiting on it)", each[0], want)
	}
}
