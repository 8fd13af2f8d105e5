package locktest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locktest"
)

// fakeLock is an in-process lock: slots holders at once (1 is a mutex),
// tokens from token, every Acquire failing once failAt acquisitions passed.
type fakeLock struct {
	slots  chan struct{}
	n      atomic.Uint64
	token  func(n uint64) uint64
	failAt uint64
}

func newFakeLock(slots int, token func(n uint64) uint64) *fakeLock {
	return &fakeLock{slots: make(chan struct{}, slots), token: token}
}

// fakeClient counts its requests (locks.Stats), as the real clients do.
type fakeClient struct {
	l        *fakeLock
	requests atomic.Int64
}

func (c *fakeClient) Locker(string) locks.Locker { return c }
func (c *fakeClient) Close() error               { return nil }
func (c *fakeClient) Counters() map[string]int64 {
	return map[string]int64{"requests": c.requests.Load()}
}

func (c *fakeClient) Acquire(ctx context.Context) (locks.Lease, error) {
	c.requests.Add(1)
	select {
	case c.l.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("acquire: %w", ctx.Err())
	}
	n := c.l.n.Add(1)
	if c.l.failAt != 0 && n >= c.l.failAt {
		<-c.l.slots
		return nil, errors.New("server gone")
	}
	return &fakeLease{c: c, token: c.l.token(n)}, nil
}

type fakeLease struct {
	c     *fakeClient
	token uint64
}

func (ls *fakeLease) Token() uint64 { return ls.token }
func (ls *fakeLease) Release(context.Context) error {
	ls.c.requests.Add(1)
	<-ls.c.l.slots
	return nil
}
func (ls *fakeLease) Lost() <-chan struct{} { return nil }

// recorder is a testing.TB that keeps the failures Contend reports instead
// of failing the test.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// Fatalf records the failure and ends the goroutine, as testing.T's does;
// run a helper that may call it on a goroutine of its own (run).
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// run calls f with r on a goroutine of its own and waits for it to return
// or call Fatalf.
func (r *recorder) run(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}

func (r *recorder) failures() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errors, "; ")
}

func increasing(n uint64) uint64 { return n }
func zero(uint64) uint64         { return 0 }

func TestContend(t *testing.T) {
	tests := []struct {
		name    string
		lock    *fakeLock
		c       locktest.Contenders
		failure string // in the reported failures; "" means none
	}{
		{"mutex with tokens", newFakeLock(1, increasing),
			locktest.Contenders{Clients: 4, Rounds: 50, Fencing: true}, ""},
		{"mutex without tokens", newFakeLock(1, zero),
			locktest.Contenders{Clients: 4, Rounds: 50, Hold: time.Microsecond}, ""},
		{"for a while", newFakeLock(1, zero),
			locktest.Contenders{Clients: 4, For: 100 * time.Millisecond, Hold: time.Millisecond}, ""},
		// 8 holders at once for 2ms each, 20 times: an overlap is as good
		// as certain.
		{"no exclusion", newFakeLock(8, increasing),
			locktest.Contenders{Clients: 8, Rounds: 20, Hold: 2 * time.Millisecond, Fencing: true}, "overlaps ="},
		{"same token", newFakeLock(1, func(uint64) uint64 { return 7 }),
			locktest.Contenders{Clients: 2, Rounds: 5, Fencing: true}, "tokens not strictly increasing 9 times"},
		{"token without fencing", newFakeLock(1, increasing),
			locktest.Contenders{Clients: 2, Rounds: 5}, "10 tokens other than 0"},
		{"acquire fails", &fakeLock{slots: make(chan struct{}, 1), token: increasing, failAt: 5},
			locktest.Contenders{Clients: 1, Rounds: 10, Fencing: true}, "client 0 acquire 4: server gone"},
		{"too slow", newFakeLock(1, increasing),
			locktest.Contenders{Clients: 2, Rounds: 1000, Hold: time.Millisecond, Within: 50 * time.Millisecond, Fencing: true},
			"context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			var clients []*fakeClient
			tt.c.Connect = func(int) locks.Client {
				c := &fakeClient{l: tt.lock}
				clients = append(clients, c)
				return c
			}
			r := locktest.Contend(rec, tt.c)
			got := rec.failures()
			if tt.failure == "" && got != "" {
				t.Errorf("reported %q on a correct lock", got)
			}
			if !strings.Contains(got, tt.failure) {
				t.Errorf("reported %q, want %q", got, tt.failure)
			}
			if len(clients) != tt.c.Clients {
				t.Fatalf("connected %d clients, want %d", len(clients), tt.c.Clients)
			}
			var requests int64
			for _, c := range clients {
				requests += c.requests.Load()
			}
			if r.Counters["requests"] != requests {
				t.Errorf("counters %v, want requests %d", r.Counters, requests)
			}
			if tt.failure == "" && r.PerOp("requests") < 2 {
				t.Errorf("%.2f requests per op, want at least 2 (acquire and release)", r.PerOp("requests"))
			}
		})
	}
}
