package natslock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	natsserver "github.com/locklab/locklab/cluster/backends/nats"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/natslock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

// TestExternalLogin: NATS servers whose clients must log in (a user and
// password, or a token, in their authorization block), reached as
// provider external with the LOCKLAB_NATS_* variables. nats-kv acquires
// with the right login and fails to connect, with an error showing no
// secret, with a wrong one or none.
func TestExternalLogin(t *testing.T) {
	const user, password, token = "app", "s3cret-nats-pass", "s3cret-nats-token"
	users := testenv.NATSWith(t, 1, func(n *natsserver.Node) { n.User, n.Password = user, password })
	tokens := testenv.NATSWith(t, 1, func(n *natsserver.Node) { n.Token = token })
	connect := func(t *testing.T, s *testenv.NATSServers, env map[string]string) (locks.Client, error) {
		ext := testenv.External(t, "nats", s.Clients, env)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		spec, _ := locks.Lookup(natslock.Name)
		cl, err := spec.New(ctx, locks.Config{Endpoints: ext.Endpoints(0), TTL: locktest.SteadyTTL, Prefix: "locklab-test/"})
		if err == nil {
			t.Cleanup(func() { _ = cl.Close() })
		}
		return cl, err
	}
	for _, tc := range []struct {
		name    string
		servers *testenv.NATSServers
		env     map[string]string
		refused bool
	}{
		{"RightPassword", users, map[string]string{"LOCKLAB_NATS_USER": user, "LOCKLAB_NATS_PASSWORD": password}, false},
		{"WrongPassword", users, map[string]string{"LOCKLAB_NATS_USER": user, "LOCKLAB_NATS_PASSWORD": "wrong-s3cret"}, true},
		{"NoLogin", users, nil, true},
		{"RightToken", tokens, map[string]string{"LOCKLAB_NATS_TOKEN": token}, false},
		{"WrongToken", tokens, map[string]string{"LOCKLAB_NATS_TOKEN": "wrong-s3cret"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := connect(t, tc.servers, tc.env)
			if tc.refused {
				if err == nil || !strings.Contains(strings.ToLower(err.Error()), "nats: authorization violation") {
					t.Fatalf("connect: %v, want an authorization violation", err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error %q shows a secret", err)
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			held := locktest.Acquire(t, cl.Locker(locktest.Name(t)))
			if held.Token() == 0 {
				t.Error("token 0: want the key's revision")
			}
			locktest.ReleaseHeld(t, locktest.Timeout(t, 10*time.Second), held, tc.name)
		})
	}
}
