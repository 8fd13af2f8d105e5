package checker

import (
	"context"
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
	want := []WindowEvidence{{Visits: 2, Clients: 2}, {Visits: 3, Clients: 3}}
	for i := range want {
		if each[i] != want[i] {
			t.Errorf("window %d: %+v, want %+v", i, each[i], want[i])
		}
	}
	if (union != WindowEvidence{Visits: 4, Clients: 3}) {
		t.Errorf("union %+v, want 4 visits by 3 clients", union)
	}

	// A window shorter than a bucket counts only visits that spanned it.
	each, _ = s.InWindows([]Window{{Start: ms(1420), End: ms(1440)}})
	if (each[0] != WindowEvidence{Visits: 1, Clients: 1}) {
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
	if union.Clients != clients || union.Visits < clients*perClient*98/100 {
		t.Errorf("union %+v, want %d clients and nearly all %d visits", union, clients, clients*perClient)
	}
}
