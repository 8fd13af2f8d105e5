// Every adapter logs in with Endpoints.Auth: they connect through
// redislock.Connect, etcdlock.Dial and zklock.Dial.

package adapters_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/adapters"
	"github.com/locklab/locklab/locks/etcdlock"
	"github.com/locklab/locklab/locks/zklock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// authNew builds a client of lock with endpoints e through the registry.
func authNew(ctx context.Context, lock string, e locks.Endpoints) (locks.Client, error) {
	spec, ok := locks.Lookup(lock)
	if !ok {
		return nil, errors.New(lock + " not registered")
	}
	cfg := locks.Config{Endpoints: e, Prefix: labPrefix, TTL: labTTL}
	if spec.Backend == locks.ZooKeeper {
		cfg.Options = map[string]string{zklock.OptSessionTimeout: labTTL.String()}
	}
	return spec.New(ctx, cfg)
}

// authHandoff checks that lock works for two clients (endpoints of client
// i: e(i)): one holds, the other waits and gets the lock once it is
// released. hold, when not nil, runs while the first client holds.
func authHandoff(t *testing.T, lock string, e func(i int) locks.Endpoints, hold func()) {
	t.Helper()
	var ls [2]locks.Locker
	for i := range ls {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := authNew(ctx, lock, e(i))
		cancel()
		if err != nil {
			t.Fatalf("%s client %d: %v", lock, i, err)
		}
		t.Cleanup(func() { c.Close() })
		ls[i] = c.Locker(locktest.Name(t))
	}
	first := locktest.Acquire(t, ls[0])
	if hold != nil {
		hold()
	}
	locktest.Handoff(t, first, ls[1])
}

// authRefused checks that lock's New fails at once with e, with an error
// containing want and no password.
func authRefused(t *testing.T, lock string, e locks.Endpoints, want string) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := authNew(ctx, lock, e)
	if err == nil {
		c.Close()
		t.Fatalf("%s connected with %v", lock, e.Auth)
	}
	t.Logf("%s with %v refused: %v", lock, e.Auth, err)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err %v, want %q", err, want)
	}
	// At once: long before the 20s context that a retrying client
	// would wait out (half of it leaves a loaded machine its slack).
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failed after %v, want at once (not with the context's end)", d)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error shows a password: %v", err)
	}
}

func TestAuthRedisAdapters(t *testing.T) {
	const password = "s3cret-redis"
	for _, rc := range redisCases {
		t.Run(rc.String(), func(t *testing.T) {
			addrs := make([]string, rc.primaries)
			for i := range addrs {
				addrs[i] = testenv.Redis(t)
				raw := redis.NewClient(&redis.Options{Addr: addrs[i], MaxRetries: -1})
				err := raw.ConfigSet(locktest.Timeout(t, 5*time.Second), "requirepass", password).Err()
				_ = raw.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			with := func(auth locks.Auth) locks.Endpoints { return locks.Endpoints{Redis: addrs, Auth: auth} }
			authHandoff(t, rc.lock, func(int) locks.Endpoints { return with(locks.Auth{RedisPassword: password}) }, nil)
			authRefused(t, rc.lock, with(locks.Auth{}), "NOAUTH")
			authRefused(t, rc.lock, with(locks.Auth{RedisPassword: "wrong"}), "WRONGPASS")
		})
	}
}

func TestAuthEtcdMutex(t *testing.T) {
	const password = "s3cret-root"
	e := &testenv.Ensemble{C: testenv.Cluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 1}}, Clients: 2})}
	{
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cli, err := etcdlock.Dial(ctx, locks.Config{Endpoints: e.Endpoints(0), Prefix: labPrefix})
		if err != nil {
			t.Fatal(err)
		}
		for i, step := range []func() error{
			func() error { _, err := cli.UserAdd(ctx, "root", password); return err },
			func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
			func() error { _, err := cli.AuthEnable(ctx); return err },
		} {
			if err := step(); err != nil {
				t.Fatalf("auth set-up step %d: %v", i, err)
			}
		}
		cli.Close()
	}
	with := func(i int, auth locks.Auth) locks.Endpoints {
		ep := e.Endpoints(i)
		ep.Auth = auth
		return ep
	}
	authHandoff(t, adapters.NameEtcdMutex, func(i int) locks.Endpoints {
		return with(i, locks.Auth{EtcdUsername: "root", EtcdPassword: password})
	}, nil)
	authRefused(t, adapters.NameEtcdMutex, with(0, locks.Auth{}), "user name is empty")
	authRefused(t, adapters.NameEtcdMutex, with(0, locks.Auth{EtcdUsername: "root", EtcdPassword: "wrong"}), "authentication failed")
}

func TestAuthZKLib(t *testing.T) {
	const digest = "alice:s3cret-alice"
	e := &testenv.Ensemble{C: testenv.Cluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 1}}, Clients: 3})}
	with := func(i int) locks.Endpoints {
		ep := e.Endpoints(i)
		ep.Auth = locks.Auth{ZooKeeperDigest: digest}
		return ep
	}
	// While the first client holds: its node belongs to alice, and nobody
	// else can delete it.
	hold := func() {
		conn, _, err := zk.Connect(e.Endpoints(2).Table["zookeeper"], 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		dir := zklock.Root(labPrefix) + "/" + locktest.Name(t)
		if err := conn.AddAuth("digest", []byte(digest)); err != nil {
			t.Fatal(err)
		}
		children, _, err := conn.Children(dir)
		if err != nil || len(children) != 1 {
			t.Fatalf("children of %s as alice: %v %v", dir, children, err)
		}
		node := dir + "/" + children[0]
		acl, _, err := conn.GetACL(node)
		if want := zk.DigestACL(zk.PermAll, "alice", "s3cret-alice"); err != nil || len(acl) != 1 || acl[0] != want[0] {
			t.Errorf("ACL of %s: %v %v, want %v", node, acl, err, want)
		}
		other, _, err := zk.Connect(e.Endpoints(2).Table["zookeeper"], 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if err := other.AddAuth("digest", []byte("bob:s3cret-bob")); err != nil {
			t.Fatal(err)
		}
		if err := other.Delete(node, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("bob deleting alice's lock node: %v, want %v", err, zk.ErrNoAuth)
		}
	}
	authHandoff(t, adapters.NameZKLib, with, hold)
}

// zkQuiet drops go-zookeeper's log lines.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}
