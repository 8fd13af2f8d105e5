package checker

import (
	"context"
	"testing"
	"time"
)

// leakCases are hand-written semaphore histories (testdata/kinds) with
// the permits_leaked their timelines give (docs/history-format.md);
// recheck's tests judge the same files.
var leakCases = []struct {
	file   string
	leaked time.Duration
}{
	// A dead holder whose promise ran out at 1300 ms (renewed once) while
	// the others timed out, and waited to the end at 3000 ms.
	{"semaphore-dead-holder.jsonl", 1700 * time.Millisecond},
	// A release returned at 52 ms, the waiter entered at 54 ms: a
	// hand-off, although a refused client saw a free permit for 2 ms.
	{"semaphore-handoff.jsonl", 0},
	// An exit with no release line frees the permit at the exit.
	{"semaphore-exit-unreleased.jsonl", 50 * time.Millisecond},
	// Nobody refused: nothing leaked.
	{"semaphore-3-of-3.jsonl", 0},
	{"semaphore-expired-holder.jsonl", 0},
}

func TestPermitsLeakedHistories(t *testing.T) {
	for _, c := range leakCases {
		t.Run(c.file, func(t *testing.T) {
			if got := replayKind(t, c.file).PermitsLeaked; got != c.leaked {
				t.Errorf("permits leaked %v, want %v", got, c.leaked)
			}
		})
	}
}

// TestPermitsLeakedLive drives a live semaphore of one permit as the
// workload does: a holder dies inside with a promise to 1 s, another
// client waits from 0.5 s to 3 s. The permit leaked from 1 s to 3 s; a
// mutex measures nothing.
func TestPermitsLeakedLive(t *testing.T) {
	for _, kind := range []string{KindSemaphore, KindMutex} {
		t.Run(kind, func(t *testing.T) {
			var now time.Duration
			s := New(FencingOff, time.Time{})
			s.clock = func() time.Duration { return now }
			s.SetKind(kind, 1)
			ctx := context.Background()
			now = 10 * time.Millisecond
			if _, err := s.Enter(ctx, Visit{Lock: "l", Client: 0, Token: 1, Acquired: now, ValidUntil: time.Second}); err != nil {
				t.Fatal(err)
			}
			now = 3 * time.Second
			err := s.Record(ctx, Op{Op: OpAttempt, Client: 1, Lock: "l", Invoke: int64(500 * time.Millisecond),
				Return: int64(now), Outcome: AttemptTimedOut})
			if err != nil {
				t.Fatal(err)
			}
			want := 2 * time.Second
			if kind != KindSemaphore {
				want = 0
			}
			if got := s.Summary().PermitsLeaked; got != want {
				t.Errorf("permits leaked %v, want %v", got, want)
			}
		})
	}
}

// TestLeakedTime: the sweep counts only instants with a wait in progress,
// a permit free and one owed (an occupancy that its release did not end),
// each once however many clients waited.
func TestLeakedTime(t *testing.T) {
	ms := time.Millisecond
	died := func(from, to time.Duration) tenure { return tenure{span{from, to}, false} }
	freed := func(from, to time.Duration) tenure { return tenure{span{from, to}, true} }
	tests := []struct {
		name     string
		occupied []tenure
		waits    []span
		permits  int
		want     time.Duration
	}{
		{"no waits", []tenure{died(0, 10*ms)}, nil, 1, 0},
		{"waits while full", []tenure{died(0, 100*ms)}, []span{{10 * ms, 90 * ms}}, 1, 0},
		{"overlapping waits count once", []tenure{died(0, 50*ms)}, []span{{10 * ms, 90 * ms}, {20 * ms, 80 * ms}}, 1, 40 * ms},
		{"one of two permits owed", []tenure{died(0, forever), died(0, 30*ms)}, []span{{10 * ms, 60 * ms}}, 2, 30 * ms},
		{"promise ran out before the entry", []tenure{died(50*ms, 40*ms)}, []span{{0, 100 * ms}}, 1, 0},
		{"a release is a hand-off", []tenure{freed(0, 50*ms), died(60*ms, 90*ms)}, []span{{10 * ms, 100 * ms}}, 1, 10 * ms},
		{"an entry settles what was owed", []tenure{died(0, 50*ms), freed(70*ms, 80*ms)}, []span{{10 * ms, 100 * ms}}, 1, 20 * ms},
		// 2 permits: A dies at 10 ms; B releases at 30 ms and C takes B's
		// permit at 40 ms; D takes A's at 80 ms. Owed from 10 to 80 ms.
		{"a given-back permit is taken first",
			[]tenure{died(0, 10*ms), freed(0, 30*ms), died(40*ms, forever), died(80*ms, forever)},
			[]span{{5 * ms, 100 * ms}}, 2, 70 * ms},
	}
	for _, tt := range tests {
		if got := leakedTime(tt.occupied, tt.waits, tt.permits); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
