package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/zklock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

const (
	aliceDigest = "alice:s3cret-alice"
	bobDigest   = "bob:s3cret-bob"
)

// connectAs builds client i through the registry with the digest identity
// (none when digest is "").
func connectAs(t *testing.T, e *testenv.Ensemble, i int, name, digest string) *zklock.Client {
	t.Helper()
	spec, ok := locks.Lookup(name)
	if !ok {
		t.Fatalf("lock %s not registered", name)
	}
	ep := e.Endpoints(i)
	ep.Auth = locks.Auth{ZooKeeperDigest: digest}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := spec.New(ctx, locks.Config{
		Endpoints: ep,
		Prefix:    testPrefix,
		Options:   map[string]string{zklock.OptSessionTimeout: sessionTimeout.String()},
	})
	if err != nil {
		t.Fatalf("connect client %d: %v", i, err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*zklock.Client)
}

// With a digest, the recipes' nodes belong to that identity: the same
// identity hands the lock over, another one (or none) can neither delete
// the holder's node, read the queue, nor queue behind it; the identity
// survives a reconnection.
func TestAuthDigest(t *testing.T) {
	e := &testenv.Ensemble{C: testenv.Cluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 1}}, Clients: 3})}
	for _, name := range []string{zklock.NameRecipe, zklock.NameHerd} {
		t.Run(name, func(t *testing.T) {
			lock := locktest.Name(t)
			dir := zklock.Root(testPrefix) + "/" + lock
			a0 := connectAs(t, e, 0, name, aliceDigest).Locker(lock)
			a1 := connectAs(t, e, 1, name, aliceDigest).Locker(lock)
			held := locktest.Acquire(t, a0)

			// The holder's node and the lock's directory carry alice's ACL only.
			owner := admin(t, e, 2)
			if err := owner.AddAuth("digest", []byte(aliceDigest)); err != nil {
				t.Fatal(err)
			}
			children, _, err := owner.Children(dir)
			if err != nil || len(children) != 1 {
				t.Fatalf("children of %s as alice: %v %v", dir, children, err)
			}
			node := dir + "/" + children[0]
			for _, p := range []string{dir, node} {
				acl, _, err := owner.GetACL(p)
				want := zk.DigestACL(zk.PermAll, "alice", "s3cret-alice")
				if err != nil || len(acl) != 1 || acl[0] != want[0] {
					t.Errorf("ACL of %s: %v %v, want %v", p, acl, err, want)
				}
			}
			for _, digest := range []string{"", bobDigest} {
				other := admin(t, e, 2)
				if digest != "" {
					if err := other.AddAuth("digest", []byte(digest)); err != nil {
						t.Fatal(err)
					}
				}
				if err := other.Delete(node, -1); !errors.Is(err, zk.ErrNoAuth) {
					t.Errorf("identity %q deleting the holder's node: %v, want %v", digest, err, zk.ErrNoAuth)
				}
				if _, _, err := other.Children(dir); !errors.Is(err, zk.ErrNoAuth) {
					t.Errorf("identity %q listing the queue: %v, want %v", digest, err, zk.ErrNoAuth)
				}
			}
			bob := connectAs(t, e, 2, name, bobDigest).Locker(lock)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			if ls, err := bob.Acquire(ctx); !errors.Is(err, zk.ErrNoAuth) {
				if err == nil {
					ls.Release(ctx)
				}
				t.Errorf("bob acquiring alice's lock: %v, want %v", err, zk.ErrNoAuth)
			} else if d := time.Since(start); d > 5*time.Second { // half the 10s context: not waited out
				t.Errorf("bob refused after %v, want at once", d)
			}

			// Same identity, another client: a normal hand-off.
			locktest.Handoff(t, held, a1)
		})
	}

	// The library sends the digest again on reconnection: after its links
	// were cut long enough to lose the connection, the client still creates
	// nodes under alice's directory.
	t.Run("reconnect", func(t *testing.T) {
		c := connectAs(t, e, 0, zklock.NameRecipe, aliceDigest)
		lock := locktest.Name(t)
		locktest.Acquire(t, c.Locker(lock)).Release(context.Background())
		epoch := c.Session().Epoch()
		testenv.CutClient(t, e.C, 0)
		locktest.WaitFor(t, 3*sessionTimeout, "connection loss", func() bool { return c.Session().Epoch() != epoch })
		testenv.HealClient(t, e.C, 0)
		select {
		case <-c.Session().Up():
		case <-time.After(30 * time.Second):
			t.Fatal("no reconnection within 30s")
		}
		ls := locktest.Acquire(t, c.Locker(lock))
		if err := ls.Release(context.Background()); err != nil {
			t.Fatalf("release after reconnection: %v", err)
		}
	})
}
