package cli

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/atlas"
	"github.com/locklab/locklab/locks"
)

func TestExecLocks(t *testing.T) {
	for _, c := range []struct {
		f    ExecFlags
		want string // error; "" for none
		n    int
	}{
		{ExecFlags{}, "", 0},
		{ExecFlags{Exec: []string{"mine=python3 c.py"}, Backend: "redis"}, "", 1},
		{ExecFlags{Exec: []string{"a=x", "b=y"}, Backend: "etcd"}, "", 2},
		{ExecFlags{Exec: []string{"mine=python3 c.py"}}, "--exec needs --backend", 0},
		{ExecFlags{Backend: "redis"}, "give --exec NAME='CMD ARGS' too", 0},
		{ExecFlags{Exec: []string{"python3 c.py"}, Backend: "redis"}, "want NAME=CMD ARGS", 0},
		{ExecFlags{Exec: []string{"mine=python3 c.py"}, Backend: "postgres"}, "", 1},
		{ExecFlags{Exec: []string{"mine=python3 c.py"}, Backend: "nats"}, "", 1},
		{ExecFlags{Exec: []string{"mine=x"}, Backend: "mysql"}, "--backend must be " + locks.ServerBackendList(), 0},
	} {
		got, err := c.f.locks()
		if c.want == "" && (err != nil || len(got) != c.n) {
			t.Errorf("%+v: %v, %d programs; want %d", c.f, err, len(got), c.n)
		}
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want an error containing %q", c.f, err, c.want)
		}
	}
}

// TestValidateExec: --exec puts the program in place of a built-in
// scenario's locks (one lock, labelled with its name, the scenario's
// faults kept), and refuses --locks beside it.
func TestValidateExec(t *testing.T) {
	var out, errs strings.Builder
	err := Validate([]string{"pause-holder", "--exec", "mine=python3 c.py", "--backend", "redis"}, &out, &errs, "chaos")
	if err != nil || !strings.Contains(out.String(), "ok pause-holder (1 locks, 1 faults)") {
		t.Errorf("validate --exec: %v\nstdout: %s\nstderr: %s", err, out.String(), errs.String())
	}
	sc, err := LoadScenarios([]string{"pause-holder"})
	if err != nil {
		t.Fatal(err)
	}
	replaceLocks(sc[0], []atlas.ExecLock{{Name: "mine", Backend: "redis", Command: []string{"python3", "c.py"}}})
	if l := sc[0].Locks; len(l) != 1 || l[0].Label != "mine" || l[0].Options["command"] != `["python3","c.py"]` || l[0].TTL != sc[0].Workload.TTL {
		t.Errorf("replaced locks: %+v", l)
	}
	// redis-failover has no default expectation: the programs get lock_faults: 0.
	sc, err = LoadScenarios([]string{"redis-failover"})
	if err != nil {
		t.Fatal(err)
	}
	replaceLocks(sc[0], []atlas.ExecLock{{Name: "mine", Backend: "redis", Command: []string{"x"}}})
	if e, ok := sc[0].ExpectFor(sc[0].Locks[0]); !ok || e.LockFaults != "0" {
		t.Errorf("redis-failover --exec: expectations %+v, %v; want lock_faults: 0", e, ok)
	}
	err = Validate([]string{"pause-holder", "--exec", "mine=python3 c.py", "--backend", "redis", "--locks", "redis-cad"}, &out, &errs, "chaos")
	if Code(err, &errs) != ExitBadInput || !strings.Contains(err.Error(), "--locks and --exec") {
		t.Errorf("--locks with --exec: %v", err)
	}
}
