package memlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/memlock"
	"github.com/locklab/locklab/locktest"
)

func client(t *memlock.Table, ttl time.Duration) locks.Client {
	return memlock.NewClient(t, locks.Config{TTL: ttl, Prefix: "test:"})
}

func TestMutualExclusionAndTokens(t *testing.T) {
	tab := memlock.NewTable()
	r := locktest.Contend(t, locktest.Contenders{
		Connect: func(int) locks.Client { return client(tab, 10*time.Second) },
		Clients: 8, Rounds: 500, Fencing: true, Within: time.Minute,
	})
	if r.Ops != 8*500 {
		t.Errorf("ops = %d, want %d", r.Ops, 8*500)
	}
}

func TestRegistered(t *testing.T) {
	spec := locktest.Spec(t, memlock.Name)
	if spec.Backend != locks.Memory || !spec.Fencing || !spec.LeaseBased || !spec.InProcess {
		t.Errorf("spec = %+v", spec)
	}
	c := locktest.Connect(t, memlock.Name, locks.Config{TTL: time.Second, Prefix: "registered:"})
	ls := locktest.Acquire(t, c.Locker(locktest.Name(t)))
	if err := ls.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestTokensIncreasePerName(t *testing.T) {
	tab := memlock.NewTable()
	c := client(tab, 0)
	var last = map[string]uint64{}
	for i := 0; i < 10; i++ {
		for _, name := range []string{"a", "b"} {
			ls := locktest.Acquire(t, c.Locker(name))
			if ls.Token() <= last[name] {
				t.Fatalf("%s: token %d after %d", name, ls.Token(), last[name])
			}
			last[name] = ls.Token()
			if err := ls.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if last["a"] != 10 || last["b"] != 10 {
		t.Errorf("tokens = %v, want 10 per name (one counter per name)", last)
	}
}

func TestExpiryClosesLostAndFreesTheLock(t *testing.T) {
	tab := memlock.NewTable()
	const ttl = 100 * time.Millisecond
	name := locktest.Name(t)
	first := locktest.Acquire(t, client(tab, ttl).Locker(name))
	select {
	case <-first.Lost():
		t.Fatal("Lost closed at acquisition")
	default:
	}
	// A second client blocks until the first lease expires, then gets a
	// higher token.
	start := time.Now()
	second := locktest.AcquireWithin(t, client(tab, 10*time.Second).Locker(name), 10*time.Second)
	if waited := time.Since(start); waited < ttl/2 {
		t.Errorf("second acquired after %s, before the first lease's ttl %s", waited, ttl)
	}
	select {
	case <-first.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed after the lease expired")
	}
	if second.Token() <= first.Token() {
		t.Errorf("token %d after %d", second.Token(), first.Token())
	}
	if err := first.Release(context.Background()); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("Release after expiry = %v, want ErrNotHeld", err)
	}
	// The late Release must not have freed the second holder's lock.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := client(tab, 0).Locker(name).Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire while held = %v, want DeadlineExceeded", err)
	}
	if err := second.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := second.Release(context.Background()); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("second Release = %v, want ErrNotHeld", err)
	}
	select {
	case <-second.Lost():
		t.Error("Release closed Lost")
	default:
	}
}

func TestCanceledAcquire(t *testing.T) {
	tab := memlock.NewTable()
	name := locktest.Name(t)
	holder := locktest.Acquire(t, client(tab, 0).Locker(name))
	locktest.CanceledAcquire(t, holder, client(tab, 0).Locker(name), client(tab, 0).Locker(name), 5*time.Second)
}

func TestPrefixSeparatesNames(t *testing.T) {
	tab := memlock.NewTable()
	a := memlock.NewClient(tab, locks.Config{Prefix: "a:"})
	b := memlock.NewClient(tab, locks.Config{Prefix: "b:"})
	la := locktest.Acquire(t, a.Locker("x"))
	lb := locktest.AcquireWithin(t, b.Locker("x"), time.Second)
	for _, ls := range []locks.Lease{la, lb} {
		if err := ls.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	locktest.AcquireRelease(b, client(memlock.NewTable(), 10*time.Second).Locker("bench"))
}

// TestEndedContextNotGranted: an Acquire whose context has ended fails
// even when the lock is free. A waiter woken by the release after its
// context ended (a loaded machine) comes back to this check instead of
// taking the lock.
func TestEndedContextNotGranted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lease, err := client(memlock.NewTable(), 0).Locker(locktest.Name(t)).Acquire(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with an ended context = %v, %v; want context.Canceled", lease, err)
	}
}
