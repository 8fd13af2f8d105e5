package mysqllock_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/mysqllock"
	"github.com/locklab/locklab/locktest"
	"github.com/locklab/locklab/testenv"
)

const (
	appUser     = "locklab_app"
	appPassword = "s3cret-mariadb-app"
)

// TestExternalLogin: a MariaDB user with a password and rights on the
// database locklab only, reached as provider external with the
// LOCKLAB_MARIADB_* variables. mariadb-get-lock acquires with the right
// password and fails to connect, with a clear error showing no password,
// with a wrong one or none.
func TestExternalLogin(t *testing.T) {
	c := testenv.Cluster(t, cluster.Spec{Clients: 1, Backends: map[string]cluster.Settings{"mariadb": {}}})
	server, _ := c.Node("mariadb-0")
	ctx := locktest.Timeout(t, 60*time.Second)
	dsn, err := mysqllock.DSN(c.Endpoints(0), "") // root, no password
	if err != nil {
		t.Fatal(err)
	}
	root, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, q := range []string{
		"CREATE USER " + appUser + "@'%' IDENTIFIED BY '" + appPassword + "'",
		"GRANT ALL ON locklab.* TO " + appUser + "@'%'",
	} {
		if _, err := root.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", strings.Replace(q, appPassword, "***", 1), err)
		}
	}
	connect := func(t *testing.T, env map[string]string) (*mysqllock.Client, error) {
		ext := testenv.External(t, "mariadb", []string{server.Addr()}, env)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cl, err := mysqllock.New(ctx, locks.Config{Endpoints: ext.Endpoints(0), Prefix: "locklab-test/"})
		if err == nil {
			t.Cleanup(func() { _ = cl.Close() })
		}
		return cl, err
	}
	t.Run("RightPassword", func(t *testing.T) {
		cl, err := connect(t, map[string]string{"LOCKLAB_MARIADB_USER": appUser, "LOCKLAB_MARIADB_PASSWORD": appPassword})
		if err != nil {
			t.Fatalf("connect with the right password: %v", err)
		}
		held := locktest.Acquire(t, cl.Locker(locktest.Name(t)))
		if held.Token() == 0 {
			t.Error("token 0: want one from the fencing table")
		}
		locktest.ReleaseHeld(t, ctx, held, "app")
		// The session was the user's: root sees its connection's user.
		var n int
		if err := root.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE user = ?", appUser).Scan(&n); err != nil || n == 0 {
			t.Errorf("no connection of %s in the processlist (%d, %v)", appUser, n, err)
		}
	})
	for _, tc := range []struct {
		name, password, want string
	}{
		{"WrongPassword", "wrong-s3cret", "Access denied for user '" + appUser + "'@'localhost' (using password: YES)"},
		{"NoPassword", "", "Access denied for user '" + appUser + "'@'localhost' (using password: NO)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := connect(t, map[string]string{"LOCKLAB_MARIADB_USER": appUser, "LOCKLAB_MARIADB_PASSWORD": tc.password})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("connect: %v, want an error saying %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "mysqllock: connect to ") || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q: want mysqllock's connect error, without the password", err)
			}
			t.Logf("refused: %v", err)
		})
	}
}
