package mysqllock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/mysqllock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestConformance runs mariadb-get-lock on a real server: mutual exclusion
// and increasing tokens over concurrent clients, and Lost when the
// holder's connection dies (its link reset), after which another client is
// granted and the stale Release says ErrNotHeld.
func TestConformance(t *testing.T) {
	const clients = 4
	c := testenv.Cluster(t, cluster.Spec{Clients: clients, Backends: map[string]cluster.Settings{"mariadb": {}}})
	connect := func(t *testing.T, i int) locks.Client {
		return locktest.Connect(t, mysqllock.Name, locks.Config{Endpoints: c.Endpoints(i), Prefix: "locklab-test/"})
	}
	t.Run("MutualExclusion", func(t *testing.T) {
		locktest.Contend(t, locktest.Contenders{
			Connect: func(i int) locks.Client { return connect(t, i) },
			Clients: clients, Rounds: 40, Fencing: true,
		})
	})
	t.Run("LostOnKilledConnection", func(t *testing.T) {
		lock := locktest.Name(t)
		a, b := connect(t, 0), connect(t, 1)
		held := locktest.Acquire(t, a.Locker(lock))
		if p := locks.PromiseOf(held); p.Unbounded || time.Until(p.Until) <= 0 {
			t.Errorf("promise %+v: want a bound from the server's keepalive settings", p)
		}
		links, err := c.Links("client-0")
		if err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		for _, l := range links {
			if err := l.Reset(); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-held.Lost():
			t.Logf("Lost %v after the connection died", time.Since(killed).Round(time.Millisecond))
		case <-time.After(10 * time.Second):
			t.Fatal("Lost not closed within 10s of the connection's death")
		}
		next := locktest.AcquireWithin(t, b.Locker(lock), 20*time.Second)
		if next.Token() <= held.Token() {
			t.Errorf("next token %d not above %d", next.Token(), held.Token())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := held.Release(ctx); !errors.Is(err, locks.ErrNotHeld) {
			t.Errorf("stale Release = %v, want ErrNotHeld", err)
		}
		locktest.ReleaseHeld(t, ctx, next, "new holder")
	})
}
