// Package external registers locks whose clients are programs in other
// languages speaking locklab's client protocol (docs/client-protocol.md):
// the reference library clients shipped in clients/ (redis-py, kazoo,
// kazoo-rw, kazoo-semaphore, etcd3-py, tooz-*, curator, curator-rw,
// curator-semaphore) and exec, any program a scenario names.
//
// Their locks.Spec constructors cannot run in-process: the runner asks
// Command for the program and runs it through workload.StartPrograms.
//
// Of locklab it imports only clients and locks; like every lock package it
// never imports cluster, checker, scenarios, faults, runner or workload
// (docs/architecture.md).
package external

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/locklab/locklab/locks"
)

// Exec is the lock name of a scenario-supplied program.
const Exec = "exec"

// program is one reference client.
type program struct {
	spec    locks.Spec
	lang    string // "python" or "java"
	file    string // script name under clients/python, or Java class
	args    []string
	library string // library and Debian package, for docs and errors
}

var programs = map[string]program{}

// ErrProgram is what a program lock's in-process constructor returns.
var ErrProgram = errors.New("runs as a client program (client protocol), not in-process")

func register(p program) {
	name := p.spec.Name
	p.spec.New = func(context.Context, locks.Config) (locks.Client, error) {
		return nil, fmt.Errorf("lock %s: %w", name, ErrProgram)
	}
	programs[name] = p
	locks.Register(p.spec)
}

// IsProgram reports whether name is a lock run as a client program.
func IsProgram(name string) bool {
	_, ok := programs[name]
	return ok
}

// Command returns the argv of lock name's program and the backend it runs
// against. For exec both come from the entry's options (backend, command:
// a JSON list, as the scenario parser stores it). Reference clients are
// written to a cache directory on first use (Java compiled there).
func Command(name string, options map[string]string) ([]string, locks.Backend, error) {
	p, ok := programs[name]
	if !ok {
		return nil, "", fmt.Errorf("lock %s is not a client program", name)
	}
	if name == Exec {
		argv, err := ParseCommand(options["command"])
		if err != nil {
			return nil, "", fmt.Errorf("lock exec: command: %w", err)
		}
		b := locks.Backend(options["backend"])
		if err := checkBackend(string(b)); err != nil {
			return nil, "", fmt.Errorf("lock exec: backend: %w", err)
		}
		return argv, b, nil
	}
	argv, err := materialize(p)
	if err != nil {
		return nil, "", fmt.Errorf("lock %s (%s): %w", name, p.library, err)
	}
	return argv, p.spec.Backend, nil
}

// ParseCommand decodes an exec command option: a JSON list of strings,
// the first one the program.
func ParseCommand(s string) ([]string, error) {
	var argv []string
	if err := json.Unmarshal([]byte(s), &argv); err != nil {
		return nil, fmt.Errorf("want a list of strings (got %q)", s)
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("needs at least the program")
	}
	return argv, nil
}

// checkBackend accepts a server backend: redis, zookeeper, etcd or a row
// of the cluster's backend table (locks.ServerBackends).
func checkBackend(s string) error {
	if locks.IsServerBackend(locks.Backend(s)) {
		return nil
	}
	return fmt.Errorf("must be %s (got %q)", locks.ServerBackendList(), s)
}

// Env returns the LOCKLAB_* credential variables of a, for a program's
// environment (the names cluster.ExternalCredentialsFromEnv reads): Redis's,
// etcd's and ZooKeeper's, then each table backend's (a.Table, by backend
// name), as its row names them.
func Env(a locks.Auth) []string {
	var out []string
	add := func(k, v string) {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	add("LOCKLAB_REDIS_USERNAME", a.RedisUsername)
	add("LOCKLAB_REDIS_PASSWORD", a.RedisPassword)
	if a.RedisTLS {
		add("LOCKLAB_REDIS_TLS", "1")
	}
	add("LOCKLAB_REDIS_CACERT", a.RedisCACert)
	add("LOCKLAB_ETCD_USERNAME", a.EtcdUsername)
	add("LOCKLAB_ETCD_PASSWORD", a.EtcdPassword)
	add("LOCKLAB_ETCD_CACERT", a.EtcdCACert)
	add("LOCKLAB_ETCD_CERT", a.EtcdCert)
	add("LOCKLAB_ETCD_KEY", a.EtcdKey)
	add("LOCKLAB_ZK_DIGEST", a.ZooKeeperDigest)
	for _, b := range slices.Sorted(maps.Keys(a.Table)) {
		for _, v := range a.Table[b] {
			add(v.Env, v.Value)
		}
	}
	return out
}

// Logins are the login variables of the table backends' servers as the
// local provider starts them, with their values there: PostgreSQL trusts
// user postgres on database postgres, MariaDB's root has no password, NATS
// needs no login. The Go locks log in the same way (pglock, mysqllock)
// when Endpoints.Auth names no other login. The other variables a row
// declares (passwords, tokens, TLS) reach a program through Env.
var Logins = map[locks.Backend][][2]string{
	locks.Postgres: {{"LOCKLAB_POSTGRES_USER", "postgres"}, {"LOCKLAB_POSTGRES_DATABASE", "postgres"}},
	locks.MariaDB:  {{"LOCKLAB_MARIADB_USER", "root"}},
}

// LoginEnv returns b's login variables (Logins) for a program's
// environment; one set in the harness's own environment is left to it
// (servers of provider external).
func LoginEnv(b locks.Backend) []string {
	var out []string
	for _, kv := range Logins[b] {
		if os.Getenv(kv[0]) == "" {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return out
}

// toozDriver is tooz's driver name (URL scheme) for a backend.
var toozDriver = map[locks.Backend]string{locks.Redis: "redis", locks.ZooKeeper: "zookeeper", locks.Etcd: "etcd3"}

func init() {
	register(program{spec: locks.Spec{Name: Exec, Summary: "any program speaking the client protocol: {name: exec, backend: <any server backend>, command: [...]}; fencing as the program reports",
		Options: []locks.Option{
			{Name: "backend", Doc: "redis | zookeeper | etcd, or a backend of the table (postgres | mariadb | nats): the cluster the program needs", Check: checkBackend},
			{Name: "command", Doc: "the program and its arguments (a list)", Check: func(s string) error { _, err := ParseCommand(s); return err }},
			{Name: "standing", Default: "false", Check: locks.CheckBool,
				Doc: "true when the program's acquire waits in the server (a blocking lock call, a watch the server fires when the holder's state goes): its waiters then count as contenders for as long as they wait, as the built-in ZooKeeper, etcd and database locks' do; leave false for a program that polls"},
		}}})
	// Every Python library here is lease-based; spec names the rest.
	py := func(file, lib string, s locks.Spec) {
		args := []string(nil)
		if file == "tooz_lock.py" {
			args = []string{toozDriver[s.Backend]}
		}
		s.LeaseBased = true
		// Every Python lock here but redis-py and tooz-redis waits on a
		// ZooKeeper or etcd watch that the server fires when the holder's
		// node or key goes (kazoo's recipes, python-etcd3's watch_once,
		// which tooz's etcd3 driver uses too).
		s.Standing = s.Backend == locks.ZooKeeper || s.Backend == locks.Etcd
		register(program{lang: "python", file: file, args: args, library: lib, spec: s})
	}
	py("redis_py.py", "redis-py 4.3 (python3-redis)", locks.Spec{Name: "redis-py", Backend: locks.Redis,
		Summary: "redis-py Lock (python3-redis 4.3): SET NX PX, Lua compare-and-delete release; token 0 (none)",
		Options: []locks.Option{{Name: "extend", Default: "0", Doc: "Lock.extend by this many ms after acquiring"}}})
	py("kazoo_lock.py", "kazoo 2.8 (python3-kazoo)", locks.Spec{Name: "kazoo", Backend: locks.ZooKeeper, Fencing: true, Renews: true,
		Summary: "kazoo Lock (python3-kazoo 2.8): ephemeral sequential node; token: the node's sequence number + 1"})
	py("etcd3_lock.py", "python-etcd3 0.12 (python3-etcd3)", locks.Spec{Name: "etcd3-py", Backend: locks.Etcd, Fencing: true,
		Summary: "python-etcd3 Lock (python3-etcd3 0.12): txn create==0 + lease; token: the key's create revision (one get after acquire)"})
	for _, b := range []locks.Backend{locks.Redis, locks.ZooKeeper, locks.Etcd} {
		py("tooz_lock.py", "tooz 3.1 (python3-tooz)", locks.Spec{Name: "tooz-" + string(b), Backend: b, Renews: true,
			Summary: "OpenStack tooz get_lock on its " + toozDriver[b] + " driver (python3-tooz 3.1); token 0 (none)"})
	}
	py("kazoo_rw.py", "kazoo 2.8 (python3-kazoo)", locks.Spec{Name: "kazoo-rw", Backend: locks.ZooKeeper, Kind: locks.KindRW, Fencing: true, Renews: true,
		Summary: "kazoo ReadLock/WriteLock (python3-kazoo 2.8): read and write sequential nodes on one counter; token: the node's sequence number + 1 (writers' increase; a reader's lies between the writers before and after it)"})
	py("kazoo_semaphore.py", "kazoo 2.8 (python3-kazoo)", locks.Spec{Name: "kazoo-semaphore", Backend: locks.ZooKeeper, Kind: locks.KindSemaphore, Renews: true,
		Options: []locks.Option{locks.PermitsOptionSpec()},
		Summary: "kazoo Semaphore (python3-kazoo 2.8): ephemeral lease nodes counted under a kazoo Lock, max_leases = permits; token 0 (none)"})
	// The Curator client picks its recipe by its first argument.
	curator := func(recipe string, s locks.Spec) {
		s.Backend, s.LeaseBased, s.Renews, s.Standing = locks.ZooKeeper, true, true, true
		register(program{lang: "java", file: "CuratorClient", args: []string{recipe}, library: "Apache Curator 5.4 (libcurator-recipes-java)", spec: s})
	}
	curator("mutex", locks.Spec{Name: "curator", Fencing: true,
		Summary: "Apache Curator InterProcessMutex (Java, libcurator-recipes-java 5.4): token: the lock node's sequence number + 1"})
	curator("rw", locks.Spec{Name: "curator-rw", Kind: locks.KindRW, Fencing: true,
		Summary: "Apache Curator InterProcessReadWriteLock (Java, libcurator-recipes-java 5.4): token: the lock node's sequence number + 1 (writers' increase; a reader's lies between the writers before and after it)"})
	curator("semaphore", locks.Spec{Name: "curator-semaphore", Kind: locks.KindSemaphore,
		Options: []locks.Option{locks.PermitsOptionSpec()},
		Summary: "Apache Curator InterProcessSemaphoreV2 (Java, libcurator-recipes-java 5.4): ephemeral sequential lease nodes, permits leases; token 0 (none)"})
}
