package redlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redlock"
	"github.com/locklab/locklab/locktest"
)

// Redlock logs in to every primary with Endpoints.Auth (through
// redislock.Connect), and refuses to start when the primaries refuse it.
func TestAuthPassword(t *testing.T) {
	const password = "s3cret-redlock"
	e := newEnv(t, 3, 2, "")
	for _, raw := range e.raw {
		// The raw connection stays logged in; new ones need the password.
		if err := raw.ConfigSet(locktest.Timeout(t, 5*time.Second), "requirepass", password).Err(); err != nil {
			t.Fatal(err)
		}
	}
	endpoints := func(i int, auth locks.Auth) locks.Endpoints {
		ep := e.cl.Endpoints(i)
		return locks.Endpoints{Redis: ep.Redis, Redirect: ep.Redirect, Auth: auth}
	}

	t.Run("refused", func(t *testing.T) {
		for _, auth := range []locks.Auth{{}, {RedisPassword: "wrong"}} {
			start := time.Now()
			c, err := redlock.New(locktest.Timeout(t, 10*time.Second), locks.Config{Endpoints: endpoints(0, auth)})
			if err == nil {
				c.Close()
				t.Fatalf("%v: connected without the password", auth)
			}
			t.Logf("%v: %v", auth, err)
			if !strings.Contains(err.Error(), "redis-0") || !strings.Contains(err.Error(), "redis-2") {
				t.Errorf("%v: want every node named: %v", auth, err)
			}
			// At once: long before the 10s context a retrying client would
			// wait out (half of it leaves a loaded machine its slack).
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%v: failed after %v, want at once", auth, d)
			}
		}
	})

	t.Run("handoff", func(t *testing.T) {
		auth := locks.Auth{RedisPassword: password}
		var ls [2]locks.Locker
		for i := range ls {
			c, err := redlock.New(locktest.Timeout(t, 10*time.Second), locks.Config{Endpoints: endpoints(i, auth), TTL: 5 * time.Second})
			if err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
			t.Cleanup(func() { _ = c.Close() })
			ls[i] = c.Locker("auth")
		}
		first := acquire(t, ls[0], 5*time.Second)
		if got := e.holders(t, key("auth")); len(got) != 3 {
			t.Errorf("held on %v, want every node", got)
		}
		waitCtx := locktest.Timeout(t, 10*time.Second)
		got := make(chan error, 1)
		go func() {
			lease, err := ls[1].Acquire(waitCtx)
			if err == nil {
				err = lease.Release(context.Background())
			}
			got <- err
		}()
		if err := first.Release(locktest.Timeout(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("second client: %v", err)
		}
	})
}
