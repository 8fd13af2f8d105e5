package locktest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
)

// Name returns a lock name unique to the test (and subtest): its name with
// the characters that are separators in the backends' key spaces ("/" for
// ZooKeeper and etcd, "#" of duplicate subtest names) replaced by "-".
func Name(t testing.TB) string {
	return strings.NewReplacer("/", "-", "#", "-").Replace(t.Name())
}

// Timeout returns a context that ends after d, cancelled when the test ends.
func Timeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Spec returns the lock registered as name, failing the test when there is
// none.
func Spec(t testing.TB, name string) locks.Spec {
	t.Helper()
	spec, ok := locks.Lookup(name)
	if !ok {
		t.Fatalf("lock %s not registered", name)
	}
	return spec
}

// Connect builds a client of the registered lock name with cfg, as the
// harness does, and closes it when the test ends. Set-up may take 90s: a
// CI run beside other tests saw the first nats-kv client of a fresh
// three-server cluster still waiting to create its replicated bucket
// after 30s.
func Connect(t testing.TB, name string, cfg locks.Config) locks.Client {
	t.Helper()
	spec := Spec(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := spec.New(ctx, cfg)
	if err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Acquire is AcquireWithin with 30s: a lock that should be free or soon
// released.
func Acquire(t testing.TB, l locks.Locker) locks.Lease {
	t.Helper()
	return AcquireWithin(t, l, 30*time.Second)
}

// AcquireWithin acquires l or fails the test when that takes longer than d
// or Acquire fails.
func AcquireWithin(t testing.TB, l locks.Locker, d time.Duration) locks.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	lease, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire within %s: %v", d, err)
	}
	return lease
}

// WaitFor polls cond every 10ms until it holds, failing the test when d
// passes first; what names the condition in that failure. cond runs on the
// test's goroutine, so it may fail the test itself.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
}

// Handoff checks a hand-over between two clients of one lock: first is
// held, b waits (it must not return within 200ms), first is released and b
// gets the lock (and releases it).
func Handoff(t testing.TB, first locks.Lease, b locks.Locker) {
	t.Helper()
	got := make(chan error, 1)
	ctx := Timeout(t, 30*time.Second)
	go func() {
		lease, err := b.Acquire(ctx)
		if err == nil {
			err = lease.Release(context.Background())
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("second client returned while the first holds: %v", err)
	case <-time.After(200 * time.Millisecond): // it waits, as it should
	}
	if err := first.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("second client after release: %v", err)
	}
}

// ReleaseHeld checks that l still holds its lock (Lost is open) and that
// it releases cleanly; who names the holder in failures.
func ReleaseHeld(t testing.TB, ctx context.Context, l locks.Lease, who string) {
	t.Helper()
	select {
	case <-l.Lost():
		t.Errorf("%s lost its lock", who)
	default:
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("%s Release = %v", who, err)
	}
}

// Waiter runs acquire (a waiter's Acquire) on a goroutine of its own and
// sends its outcome: the error, or, when it was told it holds the lock
// (which the tests using it forbid), an error saying so after releasing.
func Waiter(ctx context.Context, acquire func(context.Context) (locks.Lease, error)) <-chan error {
	result := make(chan error, 1)
	go func() {
		ls, err := acquire(ctx)
		if err == nil {
			err = errors.New("waiter told it holds the lock")
			ls.Release(ctx)
		}
		result <- err
	}()
	return result
}

// WaiterLost checks that a waiter's Acquire, whose outcome comes on result,
// ends with locks.ErrLeaseLost within 30s: its lease expired while it
// waited, and it must not be told that it holds the lock.
func WaiterLost(t testing.TB, result <-chan error) {
	t.Helper()
	select {
	case err := <-result:
		if !errors.Is(err, locks.ErrLeaseLost) {
			t.Errorf("waiter's Acquire = %v, want ErrLeaseLost", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("waiter's Acquire still blocked")
	}
}

// AcquireRelease is the loop of a benchmark of one uncontended client: it
// acquires and releases l b.N times, failing on any error.
func AcquireRelease(b *testing.B, l locks.Locker) {
	b.Helper()
	ctx := context.Background()
	for b.Loop() {
		ls, err := l.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := ls.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
