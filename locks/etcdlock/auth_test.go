package etcdlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/etcdlock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

const (
	rootPassword = "s3cret-root"
	appPassword  = "s3cret-app"
	appPrefix    = "locklab-app" // the only keys user app may touch
)

// newAuthEnv starts one etcd member with auth enabled: user root
// (rootPassword, role root) and user app (appPassword) allowed to read and
// write under appPrefix+"/" only.
func newAuthEnv(t *testing.T, clients int) *testenv.Ensemble {
	t.Helper()
	e := &testenv.Ensemble{C: testenv.Cluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"etcd": {"nodes": 1}}, Clients: clients})}
	cli := admin(t, e, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", rootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "locker"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "locker", appPrefix+"/", clientv3.GetPrefixRangeEnd(appPrefix+"/"),
				clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, "app", appPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "app", "locker"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("auth set-up step %d: %v", i, err)
		}
	}
	return e
}

// authHandoff checks that lock works for two clients built through the
// registry with auth: one holds, the other waits and gets the lock once it
// is released.
func authHandoff(t *testing.T, e *testenv.Ensemble, lock, prefix string, auth locks.Auth) {
	t.Helper()
	spec, ok := locks.Lookup(lock)
	if !ok {
		t.Fatalf("%s not registered", lock)
	}
	var ls [2]locks.Locker
	for i := range ls {
		ep := e.Endpoints(i)
		ep.Auth = auth
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := spec.New(ctx, locks.Config{Endpoints: ep, Prefix: prefix, TTL: ttl})
		cancel()
		if err != nil {
			t.Fatalf("%s client %d: %v", lock, i, err)
		}
		t.Cleanup(func() { c.Close() })
		ls[i] = c.Locker("auth")
	}
	locktest.Handoff(t, locktest.Acquire(t, ls[0]), ls[1])
}

// etcd-recipe logs in with Endpoints.Auth: as root, and as a user allowed
// only the locks' prefix; without the right credentials New fails at once.
func TestAuth(t *testing.T) {
	e := newAuthEnv(t, 2)
	t.Run("root", func(t *testing.T) {
		authHandoff(t, e, etcdlock.Name, testPrefix, locks.Auth{EtcdUsername: "root", EtcdPassword: rootPassword})
	})
	t.Run("prefix-user", func(t *testing.T) {
		authHandoff(t, e, etcdlock.Name, appPrefix, locks.Auth{EtcdUsername: "app", EtcdPassword: appPassword})
	})
	for _, tc := range []struct {
		name   string
		prefix string
		auth   locks.Auth
		want   string
	}{
		{"none", testPrefix, locks.Auth{}, "user name is empty"},
		{"wrong-password", testPrefix, locks.Auth{EtcdUsername: "root", EtcdPassword: "wrong"}, "authentication failed"},
		{"outside-prefix", testPrefix, locks.Auth{EtcdUsername: "app", EtcdPassword: appPassword}, "permission denied"},
	} {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			ep := e.Endpoints(0)
			ep.Auth = tc.auth
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := etcdlock.New(ctx, locks.Config{Endpoints: ep, Prefix: tc.prefix})
			if err == nil {
				c.Close()
				t.Fatal("connected without the right credentials")
			}
			t.Logf("refused: %v", err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
			// At once: long before the 20s context a retrying client would
			// wait out (half of it leaves a loaded machine its slack).
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("failed after %v, want at once (not with the context's end)", d)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error shows a password: %v", err)
			}
		})
	}
}
