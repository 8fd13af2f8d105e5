package checker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// step is one operation of a hand-built visit sequence. Visits are named by
// the step that entered them ("a", "b"); value -1 on a write means read+1.
type step struct {
	op     string // enter, read, write, exit
	visit  string
	lock   string
	client int
	token  uint64
}

func enter(v, lock string, client int, token uint64) step {
	return step{op: "enter", visit: v, lock: lock, client: client, token: token}
}
func rw(v string) step   { return step{op: "rw", visit: v} } // read then write read+1
func exit(v string) step { return step{op: "exit", visit: v} }
func read(v string) step { return step{op: "read", visit: v} }
func write(v string) step {
	return step{op: "write", visit: v}
}

func TestSequences(t *testing.T) {
	tests := []struct {
		name    string
		fencing Fencing
		steps   []step
		want    Summary // only the counting fields are compared
		wantErr int     // how many writes fail with ErrStaleToken
	}{
		{
			name:  "serial visits are clean",
			steps: []step{enter("a", "L", 0, 1), rw("a"), exit("a"), enter("b", "L", 1, 2), rw("b"), exit("b")},
			want:  Summary{Visits: 2, Writes: 2, Counter: 2},
		},
		{
			name:  "different locks never overlap",
			steps: []step{enter("a", "L1", 0, 1), enter("b", "L2", 1, 1), rw("a"), rw("b"), exit("a"), exit("b")},
			want:  Summary{Visits: 2, Writes: 2, Counter: 2},
		},
		{
			// a writes after b's higher token was seen at b's Enter: stale.
			name:  "overlap without interleaved rw: violation, no lost update",
			steps: []step{enter("a", "L", 0, 1), enter("b", "L", 1, 2), rw("a"), exit("a"), rw("b"), exit("b")},
			want:  Summary{Visits: 2, Writes: 2, Counter: 2, SafetyFigures: SafetyFigures{Violations: 1, StaleTokens: 1, StaleAccepted: 1}},
		},
		{
			name: "interleaved read-hold-write loses an update",
			steps: []step{
				enter("a", "L", 0, 1), read("a"), enter("b", "L", 1, 2), read("b"),
				write("b"), exit("b"), write("a"), exit("a"),
			},
			// a's write carries token 1 after 2 was seen: stale (observe by default off: counted)
			want: Summary{Visits: 2, Writes: 2, Counter: 1, SafetyFigures: SafetyFigures{LostUpdates: 1, Violations: 1, StaleTokens: 1, StaleAccepted: 1}},
		},
		{
			name:    "enforce rejects the stale write and keeps the counter",
			fencing: FencingEnforce,
			steps: []step{
				enter("a", "L", 0, 1), read("a"), enter("b", "L", 1, 2), read("b"),
				write("b"), exit("b"), write("a"), exit("a"),
			},
			want:    Summary{Visits: 2, Writes: 1, Counter: 1, SafetyFigures: SafetyFigures{Violations: 1, StaleTokens: 1, StaleRejected: 1}},
			wantErr: 1,
		},
		{
			name:    "observe applies the stale write",
			fencing: FencingObserve,
			steps: []step{
				enter("a", "L", 0, 5), read("a"), enter("b", "L", 1, 6), rw("b"), exit("b"),
				enter("c", "L", 2, 7), rw("c"), exit("c"), write("a"), exit("a"),
			},
			want: Summary{Visits: 3, Writes: 3, Counter: 1, SafetyFigures: SafetyFigures{LostUpdates: 2, Violations: 2, StaleTokens: 1, StaleAccepted: 1}},
		},
		{
			name:    "late enter with an old token is stale even without overlap",
			fencing: FencingEnforce,
			steps: []step{
				enter("b", "L", 1, 6), rw("b"), exit("b"),
				enter("a", "L", 0, 5), rw("a"), exit("a"),
			},
			want:    Summary{Visits: 2, Writes: 1, Counter: 1, SafetyFigures: SafetyFigures{StaleTokens: 1, StaleRejected: 1}},
			wantErr: 1,
		},
		{
			name:    "token 0 is never stale",
			fencing: FencingEnforce,
			steps:   []step{enter("a", "L", 0, 0), rw("a"), exit("a"), enter("b", "L", 1, 0), rw("b"), exit("b")},
			want:    Summary{Visits: 2, Writes: 2, Counter: 2},
		},
		{
			name:    "equal tokens are not stale",
			fencing: FencingEnforce,
			steps:   []step{enter("a", "L", 0, 3), rw("a"), exit("a"), enter("b", "L", 0, 3), rw("b"), exit("b")},
			want:    Summary{Visits: 2, Writes: 2, Counter: 2},
		},
		{
			name: "three inside at once: every pair counted",
			steps: []step{
				enter("a", "L", 0, 1), enter("b", "L", 1, 2), enter("c", "L", 2, 3),
				exit("a"), exit("b"), exit("c"),
			},
			want: Summary{Visits: 3, SafetyFigures: SafetyFigures{Violations: 3}},
		},
		{
			name:  "same client entering twice is still a violation",
			steps: []step{enter("a", "L", 0, 1), enter("b", "L", 0, 2), exit("a"), exit("b")},
			want:  Summary{Visits: 2, SafetyFigures: SafetyFigures{Violations: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			r := New(tt.fencing, time.Now())
			ids := map[string]uint64{}
			reads := map[string]int64{}
			staleErrs := 0
			doWrite := func(v string) {
				err := r.Write(ctx, ids[v], reads[v]+1)
				if errors.Is(err, ErrStaleToken) {
					staleErrs++
				} else if err != nil {
					t.Fatalf("write %s: %v", v, err)
				}
			}
			for _, s := range tt.steps {
				var err error
				switch s.op {
				case "enter":
					ids[s.visit], err = r.Enter(ctx, Visit{Lock: s.lock, Client: s.client, Token: s.token})
				case "read":
					reads[s.visit], err = r.Read(ctx, ids[s.visit])
				case "write":
					doWrite(s.visit)
				case "rw":
					reads[s.visit], err = r.Read(ctx, ids[s.visit])
					doWrite(s.visit)
				case "exit":
					err = r.Exit(ctx, ids[s.visit])
				}
				if err != nil {
					t.Fatalf("%s %s: %v", s.op, s.visit, err)
				}
			}
			got := r.Summary()
			if staleErrs != tt.wantErr {
				t.Errorf("ErrStaleToken returned %d times, want %d", staleErrs, tt.wantErr)
			}
			type counts struct{ V, W, C, L, Vi, S, SR, SA, In int }
			g := counts{got.Visits, got.Writes, int(got.Counter), got.LostUpdates, got.Violations, got.StaleTokens, got.StaleRejected, got.StaleAccepted, got.Inside}
			w := counts{tt.want.Visits, tt.want.Writes, int(tt.want.Counter), tt.want.LostUpdates, tt.want.Violations, tt.want.StaleTokens, tt.want.StaleRejected, tt.want.StaleAccepted, 0}
			if g != w {
				t.Errorf("summary = %+v, want %+v", g, w)
			}
			if len(got.Events) != got.Violations {
				t.Errorf("%d events for %d violations", len(got.Events), got.Violations)
			}
		})
	}
}

func TestViolationDetails(t *testing.T) {
	ctx := context.Background()
	r := New(FencingOff, time.Now())
	var seen []Violation
	r.OnViolation(func(v Violation) { seen = append(seen, v) })
	a, _ := r.Enter(ctx, Visit{Lock: "L", Client: 3, Token: 10})
	time.Sleep(5 * time.Millisecond) // make At measurably later than a's entry
	bEnter := time.Now()
	b, _ := r.Enter(ctx, Visit{Lock: "L", Client: 7, Token: 11})
	open := r.Summary()
	if len(open.Events) != 1 || !open.Events[0].Open {
		t.Fatalf("want one open violation, got %+v", open.Events)
	}
	time.Sleep(20 * time.Millisecond) // the overlap we expect to measure
	_ = r.Exit(ctx, a)
	aExited := time.Now()
	time.Sleep(10 * time.Millisecond) // b alone inside: must not count as overlap
	bExit := time.Now()
	_ = r.Exit(ctx, b)
	ev := r.Summary().Events[0]
	if ev.First != 3 || ev.Second != 7 || ev.FirstToken != 10 || ev.SecondToken != 11 || ev.Lock != "L" || ev.Open {
		t.Errorf("violation = %+v", ev)
	}
	if ev.At < 5*time.Millisecond {
		t.Errorf("At = %v, want >= 5ms", ev.At)
	}
	// The overlap runs from b's entry to a's exit: at least the 20ms slept,
	// at most what the test measured around those calls, and strictly less
	// than b's whole stay (it ends at the first exit).
	if ev.Overlap < 20*time.Millisecond || ev.Overlap > aExited.Sub(bEnter) || ev.Overlap >= bExit.Sub(bEnter) {
		t.Errorf("Overlap = %v, want in [20ms, %v] and < %v", ev.Overlap, aExited.Sub(bEnter), bExit.Sub(bEnter))
	}
	if len(seen) != 1 || seen[0].Second != 7 {
		t.Errorf("OnViolation saw %+v", seen)
	}
}

func TestWaitInsideAndExitClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := New(FencingOff, time.Now())
	id := enterAsHolder(ctx, t, r, 4, "before the holder read the resource")
	// Once it has written back, client 4 is done: the holder is the next
	// client to read, though 4 has not left yet.
	if err := r.Write(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	enterAsHolder(ctx, t, r, 2, "while the only reader had written back")
	r.ExitClient(2)
	r.ExitClient(4)
	if in := r.Inside(); len(in) != 0 {
		t.Fatalf("inside after ExitClient: %v", in)
	}
	short, cancel2 := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel2()
	if _, err := r.WaitInside(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitInside on empty resource: %v", err)
	}
}

// enterAsHolder waits for a holder while client enters r (token = client):
// WaitInside must not answer until client reads (early says what else
// would be wrong then), and must answer client once it has. It returns
// client's visit.
func enterAsHolder(ctx context.Context, t *testing.T, r *Shared, client int, early string) uint64 {
	t.Helper()
	got := make(chan int, 1)
	go func() {
		c, err := r.WaitInside(ctx)
		if err != nil {
			c = -1
		}
		got <- c
	}()
	id, err := r.Enter(ctx, Visit{Lock: "L", Client: client, Token: uint64(client)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-got:
		t.Fatalf("WaitInside returned %d %s", c, early)
	case <-time.After(20 * time.Millisecond): // a bounded check for absence
	}
	if _, err := r.Read(ctx, id); err != nil {
		t.Fatal(err)
	}
	if c := <-got; c != client {
		t.Fatalf("WaitInside = %d, want %d", c, client)
	}
	return id
}

func TestUnknownVisit(t *testing.T) {
	ctx := context.Background()
	r := New(FencingOff, time.Now())
	id, _ := r.Enter(ctx, Visit{Lock: "L", Client: 0, Token: 1})
	_ = r.Exit(ctx, id)
	for name, err := range map[string]error{
		"exit twice":    r.Exit(ctx, id),
		"write after":   r.Write(ctx, id, 1),
		"never entered": r.Exit(ctx, 999),
	} {
		if !errors.Is(err, ErrUnknownVisit) {
			t.Errorf("%s: %v, want ErrUnknownVisit", name, err)
		}
	}
}

// TestConcurrentMutex drives the resource from many goroutines under a real
// mutex (no violation possible) and without one (violations certain): the
// checker must report exactly zero in the first case and catch the second.
func TestConcurrentMutex(t *testing.T) {
	run := func(useMutex bool) Summary {
		ctx := context.Background()
		r := New(FencingObserve, time.Now())
		var mu sync.Mutex
		var token atomic.Uint64
		var wg sync.WaitGroup
		for c := 0; c < 8; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 300; i++ {
					if useMutex {
						mu.Lock()
					}
					id, _ := r.Enter(ctx, Visit{Lock: "L", Client: c, Token: token.Add(1)})
					v, _ := r.Read(ctx, id)
					if i%50 == 0 {
						time.Sleep(100 * time.Microsecond) // hold long enough for others to pile in
					}
					_ = r.Write(ctx, id, v+1)
					_ = r.Exit(ctx, id)
					if useMutex {
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		return r.Summary()
	}
	safe := run(true)
	if safe.Violations != 0 || safe.LostUpdates != 0 || safe.StaleTokens != 0 || safe.Counter != 2400 {
		t.Errorf("with a mutex: %+v", safe)
	}
	unsafe := run(false)
	if unsafe.Violations == 0 {
		t.Errorf("without a mutex the checker saw no violation: %+v", unsafe)
	}
	if unsafe.Writes != 2400 || unsafe.Counter+int64(unsafe.LostUpdates) != 2400 {
		t.Errorf("without a mutex: writes %d counter %d lost %d", unsafe.Writes, unsafe.Counter, unsafe.LostUpdates)
	}
}

func TestHandoff(t *testing.T) {
	ctx := context.Background()
	r := New(FencingOff, time.Now())
	a, _ := r.Enter(ctx, Visit{Lock: "L", Client: 0, Token: 1})
	_ = r.Exit(ctx, a)
	// b started acquiring long before a left: a hand-off.
	b, _ := r.Enter(ctx, Visit{Lock: "L", Client: 1, Token: 2, Waited: time.Hour})
	_ = r.Exit(ctx, b)
	time.Sleep(2 * time.Millisecond)
	// c started acquiring after b left: uncontended, not a hand-off.
	c, _ := r.Enter(ctx, Visit{Lock: "L", Client: 2, Token: 3, Waited: time.Microsecond})
	_ = r.Exit(ctx, c)
	if got := r.TakeHandoffs(); len(got) != 1 {
		t.Fatalf("hand-offs %v, want exactly one", got)
	}
	if got := r.TakeHandoffs(); len(got) != 0 {
		t.Fatalf("TakeHandoffs did not forget: %v", got)
	}
}
