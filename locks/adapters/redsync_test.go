// Tests of both Redis adapters (redsync, bsm-redislock), table-driven.

package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/locks"
	_ "github.com/locklab/locklab/locks/adapters"
	"github.com/locklab/locklab/locks/redislock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// redisCase is one adapter against n fresh redis-servers.
type redisCase struct {
	lock      string
	primaries int
}

var redisCases = []redisCase{
	{"redsync", 1},
	{"redsync", 3},
	{"bsm-redislock", 1},
}

func (rc redisCase) String() string { return fmt.Sprintf("%s-%d", rc.lock, rc.primaries) }

// servers starts rc.primaries servers and returns their addresses and a raw
// client to the first.
func (rc redisCase) servers(t *testing.T) ([]string, *redis.Client) {
	t.Helper()
	addrs := make([]string, rc.primaries)
	for i := range addrs {
		addrs[i] = testenv.Redis(t)
	}
	raw := redis.NewClient(&redis.Options{Addr: addrs[0], MaxRetries: -1})
	t.Cleanup(func() { _ = raw.Close() })
	return addrs, raw
}

// redisNewClient connects a client of lock to addrs through the registry;
// cfg.Endpoints is filled in.
func redisNewClient(t *testing.T, lock string, addrs []string, cfg locks.Config) locks.Client {
	t.Helper()
	cfg.Endpoints = locks.Endpoints{Redis: addrs}
	return locktest.Connect(t, lock, cfg)
}

func TestRedisAdaptersRegistered(t *testing.T) {
	for _, name := range []string{"redsync", "bsm-redislock"} {
		s, ok := locks.Lookup(name)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		if s.Backend != locks.Redis || s.Fencing || !s.LeaseBased || s.Broken || s.Summary == "" {
			t.Errorf("%s: spec %+v", name, s)
		}
		if err := s.CheckOptions(map[string]string{"renew": "maybe"}); err == nil {
			t.Errorf("%s accepts renew=maybe", name)
		}
	}
}

// TestRedisAdaptersMutualExclusion: 8 clients, 80 critical sections of
// 1ms, no overlap; the libraries give no fencing token (Token is 0).
func TestRedisAdaptersMutualExclusion(t *testing.T) {
	for _, rc := range redisCases {
		t.Run(rc.String(), func(t *testing.T) {
			addrs, _ := rc.servers(t)
			locktest.Contend(t, locktest.Contenders{
				Connect: func(i int) locks.Client {
					return redisNewClient(t, rc.lock, addrs, locks.Config{
						TTL: 10 * time.Second, Retry: 20 * time.Millisecond, Seed: int64(i),
					})
				},
				Clients: 8, Rounds: 10, Hold: time.Millisecond, Within: 60 * time.Second,
			})
		})
	}
}

func TestRedisAdaptersBlockedAcquireEndsWithCtx(t *testing.T) {
	for _, rc := range redisCases {
		t.Run(rc.String(), func(t *testing.T) {
			addrs, _ := rc.servers(t)
			cfg := locks.Config{TTL: 10 * time.Second, Retry: 20 * time.Millisecond}
			held, err := redisNewClient(t, rc.lock, addrs, cfg).Locker(t.Name()).Acquire(locktest.Timeout(t, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			other := redisNewClient(t, rc.lock, addrs, cfg).Locker(t.Name())
			if _, err := other.Acquire(locktest.Timeout(t, 150*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Acquire while held: %v, want DeadlineExceeded", err)
			}
			if err := held.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
			next, err := other.Acquire(locktest.Timeout(t, 5*time.Second))
			if err != nil {
				t.Fatalf("Acquire after release: %v", err)
			}
			if err := next.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRedisAdaptersReleaseAfterExpiryIsNotHeld(t *testing.T) {
	for _, rc := range redisCases {
		t.Run(rc.String(), func(t *testing.T) {
			addrs, _ := rc.servers(t)
			key := redislock.DefaultPrefix + t.Name()
			lease, err := redisNewClient(t, rc.lock, addrs, locks.Config{TTL: 100 * time.Millisecond}).
				Locker(t.Name()).Acquire(locktest.Timeout(t, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			locktest.WaitFor(t, 5*time.Second, "key expired", func() bool { return !redisExistsAnywhere(t, addrs, key) })
			if err := lease.Release(locktest.Timeout(t, 5*time.Second)); !errors.Is(err, locks.ErrNotHeld) {
				t.Fatalf("Release after expiry: %v, want ErrNotHeld", err)
			}
		})
	}
}

func TestRedisAdaptersRenewOption(t *testing.T) {
	for _, rc := range redisCases {
		t.Run(rc.String(), func(t *testing.T) {
			addrs, raw := rc.servers(t)
			ctx := context.Background()
			key := redislock.DefaultPrefix + t.Name()
			// Long enough that a loaded machine (extension every ttl/3) does
			// not lose the key unless extension is broken.
			const ttl = 1500 * time.Millisecond
			lease, err := redisNewClient(t, rc.lock, addrs, locks.Config{
				TTL: ttl, Options: map[string]string{"renew": "true"},
			}).Locker(t.Name()).Acquire(locktest.Timeout(t, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			for end := time.Now().Add(2 * ttl); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				if raw.Exists(ctx, key).Val() != 1 {
					t.Fatal("renewed key disappeared")
				}
			}
			select {
			case <-lease.Lost():
				t.Fatal("Lost closed while renewal works")
			default:
			}
			for _, a := range addrs { // gone everywhere: the next extension fails
				c := redis.NewClient(&redis.Options{Addr: a})
				if err := c.Del(ctx, key).Err(); err != nil {
					t.Fatal(err)
				}
				_ = c.Close()
			}
			select {
			case <-lease.Lost():
			case <-time.After(2 * ttl / 3):
				// The next extension, or the one after it, must notice.
				t.Fatal("Lost not closed within two extension periods (2 ttl/3) of the delete")
			}
			if err := lease.Release(locktest.Timeout(t, 5*time.Second)); !errors.Is(err, locks.ErrNotHeld) {
				t.Fatalf("Release of a lost lock: %v, want ErrNotHeld", err)
			}
		})
	}
}

// redisExistsAnywhere reports whether key exists on any of the servers.
func redisExistsAnywhere(t *testing.T, addrs []string, key string) bool {
	t.Helper()
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		n, err := c.Exists(context.Background(), key).Result()
		_ = c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			return true
		}
	}
	return false
}
