package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

var (
	allVariants = []redislock.Variant{
		redislock.SetNXExpire, redislock.SetDel, redislock.CAD, redislock.Watchdog, redislock.Reentrant,
	}
	// safeVariants check ownership on release.
	safeVariants = []redislock.Variant{redislock.CAD, redislock.Watchdog, redislock.Reentrant}
)

// server is one redis-server for a test, with a raw client to inspect it.
type server struct {
	addr string
	raw  *redis.Client
}

func newServer(t *testing.T) server {
	t.Helper()
	addr := testenv.Redis(t)
	raw := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = raw.Close() })
	return server{addr: addr, raw: raw}
}

// client connects a redislock client; cfg.Endpoints is filled in.
func (s server) client(t *testing.T, v redislock.Variant, cfg locks.Config) *redislock.Client {
	t.Helper()
	cfg.Endpoints = locks.Endpoints{Redis: []string{s.addr}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := redislock.New(ctx, v, cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", v, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// key is the Redis key of lock name with the default prefix.
func key(name string) string { return redislock.DefaultPrefix + name }

func TestRegistered(t *testing.T) {
	tests := []struct {
		name    string
		broken  bool
		options []string
	}{
		{"redis-setnx-expire", true, nil},
		{"redis-set-del", true, nil},
		{"redis-cad", false, []string{"wait_replicas", "wait_timeout"}},
		{"redis-watchdog", false, []string{"wait_replicas", "wait_timeout"}},
		{"redis-reentrant", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := locks.Lookup(tt.name)
			if !ok {
				t.Fatal("not registered")
			}
			if s.Backend != locks.Redis || !s.Fencing || !s.LeaseBased || s.Broken != tt.broken || s.Summary == "" {
				t.Errorf("spec %+v", s)
			}
			var names []string
			for _, o := range s.Options {
				names = append(names, o.Name)
				if o.Check != nil {
					if err := o.Check(o.Default); err != nil {
						t.Errorf("default %s=%q fails its check: %v", o.Name, o.Default, err)
					}
				}
			}
			if fmt.Sprint(names) != fmt.Sprint(tt.options) {
				t.Errorf("options %v, want %v", names, tt.options)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	srv := newServer(t)
	tests := []struct {
		v    redislock.Variant
		opts map[string]string
		ttl  time.Duration
	}{
		{redislock.Reentrant, map[string]string{"wait_replicas": "1"}, 0}, // not its option
		{redislock.CAD, map[string]string{"wait_replicas": "-1"}, 0},
		{redislock.CAD, map[string]string{"wait_timeout": "0s"}, 0},
		{redislock.Watchdog, map[string]string{"wait_timeout": "soon"}, 0},
		{redislock.CAD, nil, time.Microsecond},
		{"redis-nope", nil, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v/%v", tt.v, tt.opts, tt.ttl), func(t *testing.T) {
			c, err := redislock.New(locktest.Timeout(t, 5*time.Second), tt.v, locks.Config{
				Endpoints: locks.Endpoints{Redis: []string{srv.addr}},
				TTL:       tt.ttl,
				Options:   tt.opts,
			})
			if err == nil {
				_ = c.Close()
				t.Fatal("New accepted it")
			}
		})
	}
}

func TestAcquireRelease(t *testing.T) {
	srv := newServer(t)
	for _, v := range allVariants {
		t.Run(string(v), func(t *testing.T) {
			c := srv.client(t, v, locks.Config{TTL: 10 * time.Second})
			l := c.Locker(t.Name())
			var last uint64
			for i := range 3 {
				lease := locktest.AcquireWithin(t, l, 5*time.Second)
				if lease.Token() <= last {
					t.Errorf("round %d: token %d after %d", i, lease.Token(), last)
				}
				last = lease.Token()
				if n := srv.raw.Exists(context.Background(), key(t.Name())).Val(); n != 1 {
					t.Fatalf("key missing while held")
				}
				if pttl := srv.raw.PTTL(context.Background(), key(t.Name())).Val(); pttl <= 0 {
					t.Errorf("held key has PTTL %v", pttl)
				}
				if err := lease.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
					t.Fatalf("Release: %v", err)
				}
				if n := srv.raw.Exists(context.Background(), key(t.Name())).Val(); n != 0 {
					t.Fatalf("key still there after Release")
				}
				if err := lease.Release(locktest.Timeout(t, 5*time.Second)); !errors.Is(err, locks.ErrNotHeld) {
					t.Fatalf("second Release: %v, want ErrNotHeld", err)
				}
				select {
				case <-lease.Lost():
					t.Fatal("Lost closed by Release")
				default:
				}
			}
			if c.Counters()["requests"] == 0 {
				t.Error("no requests counted")
			}
		})
	}
}

func TestSecondAcquirerBlocksUntilRelease(t *testing.T) {
	srv := newServer(t)
	for _, v := range allVariants {
		t.Run(string(v), func(t *testing.T) {
			cfg := locks.Config{TTL: 10 * time.Second}
			a := srv.client(t, v, cfg).Locker(t.Name())
			b := srv.client(t, v, cfg).Locker(t.Name())
			first := locktest.AcquireWithin(t, a, 5*time.Second)

			// While A holds it, B's Acquire ends with its ctx.
			_, err := b.Acquire(locktest.Timeout(t, 100*time.Millisecond))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("blocked Acquire: %v, want DeadlineExceeded", err)
			}

			type result struct {
				lease locks.Lease
				err   error
				at    time.Time
			}
			got := make(chan result, 1)
			go func() {
				lease, err := b.Acquire(locktest.Timeout(t, 10*time.Second))
				got <- result{lease, err, time.Now()}
			}()
			select {
			case r := <-got:
				t.Fatalf("second acquirer got the lock while held: %v", r.err)
			case <-time.After(50 * time.Millisecond): // observation window
			}
			released := time.Now()
			if err := first.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.err != nil {
				t.Fatalf("Acquire after release: %v", r.err)
			}
			if r.lease.Token() <= first.Token() {
				t.Errorf("token %d after %d", r.lease.Token(), first.Token())
			}
			t.Logf("hand-off %v", r.at.Sub(released))
			if err := r.lease.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMutualExclusion runs 8 clients through one lock with no faults: every
// variant, broken ones included, must keep them apart and hand out
// increasing tokens in the order holders enter.
func TestMutualExclusion(t *testing.T) {
	srv := newServer(t)
	for _, v := range allVariants {
		t.Run(string(v), func(t *testing.T) {
			locktest.Contend(t, locktest.Contenders{
				Connect: func(i int) locks.Client {
					return srv.client(t, v, locks.Config{TTL: 10 * time.Second, Seed: int64(i)})
				},
				Clients: 8, Rounds: 15, Hold: time.Millisecond, Within: 30 * time.Second, Fencing: true,
			})
		})
	}
}

func TestReleaseAfterExpiryIsNotHeld(t *testing.T) {
	srv := newServer(t)
	for _, v := range safeVariants {
		t.Run(string(v), func(t *testing.T) {
			ctx := context.Background()
			ttl := 100 * time.Millisecond
			a := srv.client(t, v, locks.Config{TTL: ttl}).Locker(t.Name())
			lease := locktest.AcquireWithin(t, a, 5*time.Second)
			if v != redislock.CAD {
				// The watchdog keeps the key alive: expire it behind its back.
				srv.raw.PExpire(ctx, key(t.Name()), time.Millisecond)
			}
			locktest.WaitFor(t, 5*time.Second, "key expires", func() bool {
				return srv.raw.Exists(ctx, key(t.Name())).Val() == 0
			})
			b := srv.client(t, v, locks.Config{TTL: 10 * time.Second}).Locker(t.Name())
			next := locktest.AcquireWithin(t, b, 5*time.Second)
			if err := lease.Release(locktest.Timeout(t, 5*time.Second)); !errors.Is(err, locks.ErrNotHeld) {
				t.Fatalf("Release after expiry: %v, want ErrNotHeld", err)
			}
			if srv.raw.Exists(ctx, key(t.Name())).Val() != 1 {
				t.Fatal("late Release deleted the next holder's key")
			}
			if err := next.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// crashBeforeExpire is a connection whose PExpire first runs crash: a
// client dying between redis-setnx-expire's SETNX and its EXPIRE.
type crashBeforeExpire struct {
	*redis.Client
	crash func()
}

func (c crashBeforeExpire) PExpire(ctx context.Context, key string, d time.Duration) *redis.BoolCmd {
	c.crash()
	return c.Client.PExpire(ctx, key, d)
}

// TestSetNXExpireStuckForever: a holder dies between SETNX and EXPIRE; its
// key has no TTL and nobody ever gets the lock again.
func TestSetNXExpireStuckForever(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	name := t.Name()
	conn := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1})
	t.Cleanup(func() { _ = conn.Close() })
	// The crash: the connection closes between SETNX (and INCR) and EXPIRE.
	dying, err := redislock.NewClient(crashBeforeExpire{Client: conn, crash: func() { _ = conn.Close() }},
		redislock.SetNXExpire, redislock.WithTTL(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dying.Locker(name).Acquire(locktest.Timeout(t, 5*time.Second)); err == nil {
		t.Fatal("Acquire succeeded although the client died before EXPIRE")
	}
	if ttl := srv.raw.PTTL(ctx, key(name)).Val(); ttl != -1 {
		t.Fatalf("PTTL %v, want -1 (no TTL)", ttl)
	}
	// Far longer than the TTL, other clients still cannot get it.
	for i := range 3 {
		l := srv.client(t, redislock.SetNXExpire, locks.Config{TTL: 100 * time.Millisecond, Seed: int64(i)}).Locker(name)
		if _, err := l.Acquire(locktest.Timeout(t, 200*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("client %d: Acquire: %v, want DeadlineExceeded", i, err)
		}
	}
	if ttl := srv.raw.PTTL(ctx, key(name)).Val(); ttl != -1 {
		t.Fatalf("PTTL %v, want -1 (no TTL)", ttl)
	}
}

// TestSetDelDeletesAnotherHoldersLock: A's key expires while A still
// believes it holds the lock, B takes it, A's release deletes B's key, and C
// gets the lock while B believes it holds it.
func TestSetDelDeletesAnotherHoldersLock(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	name := t.Name()
	a := srv.client(t, redislock.SetDel, locks.Config{TTL: 100 * time.Millisecond}).Locker(name)
	b := srv.client(t, redislock.SetDel, locks.Config{TTL: 10 * time.Second}).Locker(name)
	c := srv.client(t, redislock.SetDel, locks.Config{TTL: 10 * time.Second}).Locker(name)

	leaseA := locktest.AcquireWithin(t, a, 5*time.Second)
	locktest.WaitFor(t, 5*time.Second, "A's key expires", func() bool {
		return srv.raw.Exists(ctx, key(name)).Val() == 0
	})
	leaseB := locktest.AcquireWithin(t, b, 5*time.Second)
	if err := leaseA.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
		t.Fatalf("A's late Release: %v (the bug is that it succeeds)", err)
	}
	if srv.raw.Exists(ctx, key(name)).Val() != 0 {
		t.Fatal("B's key survived A's release")
	}
	leaseC := locktest.AcquireWithin(t, c, time.Second) // while B still holds it
	select {
	case <-leaseB.Lost():
		t.Fatal("B learned of its loss; set-del has no way to")
	default:
	}
	if leaseC.Token() <= leaseB.Token() {
		t.Errorf("C's token %d not above B's %d (fencing would not catch B)", leaseC.Token(), leaseB.Token())
	}
}

func TestRenewalKeepsKeyAndReportsLoss(t *testing.T) {
	srv := newServer(t)
	for _, v := range []redislock.Variant{redislock.Watchdog, redislock.Reentrant} {
		t.Run(string(v), func(t *testing.T) {
			ctx := context.Background()
			// A TTL long enough that a loaded machine (renewal every ttl/3)
			// does not lose the key unless renewal is broken.
			const ttl = 1500 * time.Millisecond
			c := srv.client(t, v, locks.Config{TTL: ttl})
			lease := locktest.AcquireWithin(t, c.Locker(t.Name()), 5*time.Second)

			// Held for 2 TTLs: the key never goes away.
			for end := time.Now().Add(2 * ttl); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				if srv.raw.Exists(ctx, key(t.Name())).Val() != 1 {
					t.Fatal("renewed key disappeared")
				}
				select {
				case <-lease.Lost():
					t.Fatal("Lost closed while renewal works")
				default:
				}
			}

			// Deleted behind its back: the next renewal notices.
			srv.raw.Del(ctx, key(t.Name()))
			deleted := time.Now()
			select {
			case <-lease.Lost():
				t.Logf("lost %v after the delete", time.Since(deleted))
			case <-time.After(2 * ttl / 3):
				// The next renewal, or the one after it, must notice.
				t.Fatal("Lost not closed within two renewal periods (2 ttl/3) of the delete")
			}
			if err := lease.Release(locktest.Timeout(t, 5*time.Second)); !errors.Is(err, locks.ErrNotHeld) {
				t.Fatalf("Release of a lost lease: %v, want ErrNotHeld", err)
			}
		})
	}
}

func TestRenewalGivesUpAfterTTLWithoutAnswer(t *testing.T) {
	srv := newServer(t)
	for _, v := range []redislock.Variant{redislock.Watchdog, redislock.Reentrant} {
		t.Run(string(v), func(t *testing.T) {
			ctx := context.Background()
			const ttl = time.Second
			c := srv.client(t, v, locks.Config{TTL: ttl})
			lease := locktest.AcquireWithin(t, c.Locker(t.Name()), 5*time.Second)
			// The server stops answering writes and scripts (CLIENT PAUSE WRITE; it also stops key
			// expiry): renewals time out, and after at most a TTL since the
			// last success the holder must assume its key is gone. One
			// connection pauses and unpauses: a new one would wait for its
			// handshake.
			admin := srv.raw.Conn()
			defer admin.Close()
			paused := time.Now()
			if err := admin.Do(ctx, "CLIENT", "PAUSE", "4000", "WRITE").Err(); err != nil {
				t.Fatal(err)
			}
			// The last success was at most one renewal period (ttl/3) before
			// the pause; one more period is the holder's slack to notice.
			select {
			case <-lease.Lost():
				t.Logf("lost %v after the pause", time.Since(paused))
			case <-time.After(ttl + 2*ttl/3):
				t.Fatal("Lost not closed within ttl + two renewal periods of the pause")
			}
			if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
				t.Fatal(err)
			}
			// The key expires about now: either answer is right.
			if err := lease.Release(locktest.Timeout(t, 5*time.Second)); err != nil && !errors.Is(err, locks.ErrNotHeld) {
				t.Fatal(err)
			}
		})
	}
}

func TestRenewalStopsOnRelease(t *testing.T) {
	srv := newServer(t)
	for _, v := range []redislock.Variant{redislock.Watchdog, redislock.Reentrant} {
		t.Run(string(v), func(t *testing.T) {
			const ttl = 150 * time.Millisecond
			c := srv.client(t, v, locks.Config{TTL: ttl})
			lease := locktest.AcquireWithin(t, c.Locker(t.Name()), 5*time.Second)
			if err := lease.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
			before := c.Counters()["requests"]
			// Observation window of two renewal periods.
			time.Sleep(2 * ttl / 3)
			if after := c.Counters()["requests"]; after != before {
				t.Fatalf("%d requests after Release", after-before)
			}
		})
	}
}

func TestReentrant(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	name := t.Name()
	c := srv.client(t, redislock.Reentrant, locks.Config{TTL: 10 * time.Second})
	other := srv.client(t, redislock.Reentrant, locks.Config{TTL: 10 * time.Second}).Locker(name)
	l := c.Locker(name)

	outer := locktest.AcquireWithin(t, l, 5*time.Second)
	inner := locktest.AcquireWithin(t, l, 5*time.Second) // re-entered, not blocked
	if inner.Token() != outer.Token() {
		t.Errorf("re-entered token %d, outer %d", inner.Token(), outer.Token())
	}
	counts := srv.raw.HGetAll(ctx, key(name)).Val()
	if len(counts) != 2 || counts["fence"] != fmt.Sprint(outer.Token()) {
		t.Fatalf("hash %v, want one owner with count 2 and the fence", counts)
	}
	for owner, n := range counts {
		if owner != "fence" && n != "2" {
			t.Fatalf("owner %s count %s, want 2", owner, n)
		}
	}
	if err := inner.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(locktest.Timeout(t, 100*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("other client after one of two releases: %v, want DeadlineExceeded", err)
	}
	select {
	case <-outer.Lost():
		t.Fatal("outer lease lost after the inner release")
	default:
	}
	if err := inner.Release(locktest.Timeout(t, 5*time.Second)); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("inner released twice: %v, want ErrNotHeld", err)
	}
	if err := outer.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if srv.raw.Exists(ctx, key(name)).Val() != 0 {
		t.Fatal("key left after the last release")
	}
	next := locktest.AcquireWithin(t, other, time.Second)
	if next.Token() <= outer.Token() {
		t.Errorf("token %d after %d", next.Token(), outer.Token())
	}
}

// TestReentrantWaiterWakesOnPublish: with Retry and the TTL far beyond the
// test's bound, only the release message can wake the waiter in time.
func TestReentrantWaiterWakesOnPublish(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	name := t.Name()
	cfg := locks.Config{TTL: 30 * time.Second, Retry: 20 * time.Second}
	holder := locktest.AcquireWithin(t, srv.client(t, redislock.Reentrant, cfg).Locker(name), 5*time.Second)
	wc := srv.client(t, redislock.Reentrant, cfg)

	got := make(chan error, 1)
	go func() {
		lease, err := wc.Locker(name).Acquire(locktest.Timeout(t, 10*time.Second))
		if err == nil {
			err = lease.Release(context.Background())
		}
		got <- err
	}()
	locktest.WaitFor(t, 5*time.Second, "waiter subscribed", func() bool {
		return srv.raw.PubSubNumSub(ctx, key(name)+":channel").Val()[key(name)+":channel"] == 1
	})
	released := time.Now()
	if err := holder.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("woken %v after the release", time.Since(released))
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken within 5s (Retry is 20s)")
	}
	if n := wc.Counters()["notifications"]; n < 1 {
		t.Errorf("notifications %d, want >= 1", n)
	}
}

func TestWaitReplicas(t *testing.T) {
	srv := newServer(t) // no replicas: WAIT never gets an ack
	ctx := context.Background()
	for _, v := range []redislock.Variant{redislock.CAD, redislock.Watchdog} {
		t.Run(string(v), func(t *testing.T) {
			l := srv.client(t, v, locks.Config{
				TTL:     10 * time.Second,
				Options: map[string]string{"wait_replicas": "1", "wait_timeout": "10ms"},
			}).Locker(t.Name())
			_, err := l.Acquire(locktest.Timeout(t, 300*time.Millisecond))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Acquire: %v, want DeadlineExceeded", err)
			}
			if srv.raw.Exists(ctx, key(t.Name())).Val() != 0 {
				t.Fatal("unacknowledged key left behind")
			}
			l0 := srv.client(t, v, locks.Config{
				TTL:     10 * time.Second,
				Options: map[string]string{"wait_replicas": "0"},
			}).Locker(t.Name())
			if err := locktest.AcquireWithin(t, l0, 5*time.Second).Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
