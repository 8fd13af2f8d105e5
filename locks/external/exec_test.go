package external_test

import (
	"slices"
	"strings"
	"testing"

	_ "github.com/locklab/locklab/cluster/backends/all" // the backend table
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
)

// TestExecBackends: exec accepts every server backend, the table's
// included, and its error names them all.
func TestExecBackends(t *testing.T) {
	for _, b := range []string{"redis", "zookeeper", "etcd", "postgres", "mariadb", "nats"} {
		argv, got, err := external.Command(external.Exec, map[string]string{"backend": b, "command": `["prog","-v"]`})
		if err != nil || string(got) != b || !slices.Equal(argv, []string{"prog", "-v"}) {
			t.Errorf("backend %s: %v %s %v", b, argv, got, err)
		}
	}
	_, _, err := external.Command(external.Exec, map[string]string{"backend": "mysql", "command": `["prog"]`})
	want := "must be " + locks.ServerBackendList() + ` (got "mysql")`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("mysql: %v, want %q", err, want)
	}
	spec, _ := locks.Lookup(external.Exec)
	if err := spec.CheckOptions(map[string]string{"backend": "nats", "command": `["p"]`}); err != nil {
		t.Errorf("options on nats: %v", err)
	}
}

// TestLoginEnv: the table backends' logins go to the program unless the
// harness's environment sets them.
func TestLoginEnv(t *testing.T) {
	t.Setenv("LOCKLAB_POSTGRES_USER", "")
	if got := external.LoginEnv(locks.Postgres); !slices.Equal(got, []string{"LOCKLAB_POSTGRES_USER=postgres", "LOCKLAB_POSTGRES_DATABASE=postgres"}) {
		t.Errorf("postgres: %v", got)
	}
	t.Setenv("LOCKLAB_POSTGRES_USER", "alice")
	if got := external.LoginEnv(locks.Postgres); !slices.Equal(got, []string{"LOCKLAB_POSTGRES_DATABASE=postgres"}) {
		t.Errorf("postgres, user set: %v", got)
	}
	if got := external.LoginEnv(locks.MariaDB); !slices.Equal(got, []string{"LOCKLAB_MARIADB_USER=root"}) {
		t.Errorf("mariadb: %v", got)
	}
	if got := external.LoginEnv(locks.NATS); got != nil {
		t.Errorf("nats: %v", got)
	}
}
