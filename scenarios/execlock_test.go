package scenarios

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/locks"
)

func TestExecLock(t *testing.T) {
	sc, err := Parse("x.yaml", []byte(`
name: x
cluster: {redis: {primaries: 1}}
locks:
  - {name: exec, backend: zookeeper, command: [python3, "my client.py", -v], label: mine}
  - redis-cad
workload: {clients: 2, duration: 1s}
`))
	if err != nil {
		t.Fatal(err)
	}
	l := sc.Locks[0]
	if l.Label != "mine" || l.Options["backend"] != "zookeeper" || l.Options["command"] != `["python3","my client.py","-v"]` {
		t.Errorf("exec entry: %+v", l)
	}
	// The entry's backend decides the cluster: ZooKeeper is added.
	if sc.Cluster.Backends["zookeeper"] == nil {
		t.Errorf("exec with backend zookeeper: no zookeeper cluster section (%+v)", sc.Cluster)
	}
	if spec, _ := locks.Lookup("exec"); spec.Backend != "" {
		t.Errorf("the registry's exec spec has backend %q; the entry gives it", spec.Backend)
	}
}

func TestExecLockErrors(t *testing.T) {
	_, err := Parse("bad.yaml", []byte(`
name: bad
locks:
  - exec
  - {name: exec, backend: mysql, command: [], label: a}
  - {name: redis-cad, command: [x]}
  - {name: exec, backend: etcd, command: [a, {b: 1}], label: b}
  - {name: exec, backend: redis, command: prog, label: c}
workload: {clients: 2, duration: 1s}
`))
	if err == nil {
		t.Fatal("no error")
	}
	got := err.Error()
	backends := locks.ServerBackendList() // "redis, zookeeper, etcd, mariadb, ... or postgres": every row of the table
	for _, want := range []string{
		"bad.yaml:4: locks[0].backend: required for exec: " + backends + ": the servers the program uses",
		"bad.yaml:4: locks[0].command: required for exec: the program and its arguments",
		"bad.yaml:5: locks[1].backend: must be " + backends + " (got \"mysql\")",
		"bad.yaml:5: locks[1].command: needs at least the program",
		"bad.yaml:6: locks[2].command: unknown field",
		"bad.yaml:7: locks[3].command[1]: must be a string (got a mapping)",
		"bad.yaml:8: locks[4].command: must be a list (got \"prog\")",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	// One message per wrong field: no "required" on top of a field that is
	// present but wrong.
	if n := strings.Count(got, "locks[1].command"); n != 1 {
		t.Errorf("locks[1].command reported %d times:\n%s", n, got)
	}
}
