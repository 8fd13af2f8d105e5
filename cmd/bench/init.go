package main

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/locklab/locklab/clients"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
)

const initUsage = `Usage:
  bench init [--exec] [--backend B] [--name NAME] [DIR]

Writes DIR/NAME.yaml, a starter scenario for your own lock: an exec lock
entry (your program, speaking docs/client-protocol.md), a paused-holder
fault and the safety it must keep, commented where you edit it. With
--exec it also writes DIR/NAME_client.py, a client that runs as written
(a plain lock on the backend) for you to change, and locklab_client.py
beside it (the protocol side, shared with locklab's own Python clients).
Existing files are never overwritten.

B is redis (the default), zookeeper, etcd, postgres, mariadb, nats or
memcached; --exec has a starter client for each but nats (Debian has no
Python NATS client): for nats, write the scenario and point its command
at your program.
`

// initFlags are the flags of bench init.
type initFlags struct {
	exec    bool
	backend string
	name    string
}

var initName = regexp.MustCompile(`^[a-z][a-z0-9-_]*$`)

func initCmd(args []string, stdout, stderr io.Writer) error {
	fs := cli.FlagSet("bench init", stderr, "%s", initUsage)
	var f initFlags
	fs.BoolVar(&f.exec, "exec", false, "also write a starter client program (Python) that runs as written")
	fs.StringVar(&f.backend, "backend", "redis", "the servers your lock uses: "+locks.ServerBackendList())
	fs.StringVar(&f.name, "name", "mylock", "the scenario's and the lock's name (lower case, digits, - and _)")
	pos, err := cli.ParseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return cli.Usagef("bench init: one folder at most (got %s)", strings.Join(pos, " "))
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	if clusterLine(f.backend) == "" {
		return cli.Usagef("bench init: --backend must be %s (got %q)", locks.ServerBackendList(), f.backend)
	}
	if f.exec && !hasStarter(f.backend) {
		return cli.Usagef("bench init: --exec: no starter client for %s (Debian packages no Python client for it): "+
			"run bench init --backend %s without --exec and name your own program in the scenario's command", f.backend, f.backend)
	}
	if !initName.MatchString(f.name) {
		return cli.Usagef("bench init: --name %q: use lower case letters, digits, - and _, starting with a letter", f.name)
	}
	files, err := starterFiles(f, dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench init: %w", err)
	}
	for _, sf := range files {
		if old, err := os.ReadFile(sf.path); err == nil {
			if sf.shared && string(old) == string(sf.data) {
				continue // the same protocol module, written by an earlier init
			}
			return cli.Usagef("bench init: %s exists: not overwritten (choose another --name or folder)", sf.path)
		} else if !errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("bench init: %w", err)
		}
	}
	for _, sf := range files {
		if err := os.WriteFile(sf.path, sf.data, sf.mode); err != nil {
			return fmt.Errorf("bench init: %w", err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", sf.path)
	}
	scenario := files[0].path
	bench, chaos := commandPath("bench"), commandPath("chaos")
	fmt.Fprintln(stdout, "\nnext:")
	if f.exec {
		fmt.Fprintf(stdout, "  %s client-check --backend %s -- %s %s   # checks the client against a real %s (about 10 s)\n",
			bench, f.backend, external.Python(), files[1].path, f.backend)
	} else {
		fmt.Fprintf(stdout, "  edit the command: line of %s to run your program, then\n", scenario)
		fmt.Fprintf(stdout, "  %s client-check --backend %s -- YOUR-PROGRAM ARGS   # checks it against a real %s\n", bench, f.backend, f.backend)
	}
	fmt.Fprintf(stdout, "  %s run %s   # your lock under a paused holder (about 20 s)\n", chaos, scenario)
	if f.exec {
		fmt.Fprintf(stdout, "  %s atlas --exec '%s=%s %s' --backend %s --locks %s --runs 1   # every fault family that applies\n",
			chaos, f.name, external.Python(), files[1].path, f.backend, f.name)
	}
	return nil
}

// commandPath is how to run locklab's command name from the current
// directory, so the next steps run as printed: the binary beside the
// running one (bin/chaos after make, relative when under the current
// directory), else bin/NAME here, else NAME on PATH, else go run ./cmd/NAME
// (a checkout without a build).
func commandPath(name string) string {
	wd, _ := os.Getwd()
	rel := func(p string) string {
		if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
			if !strings.Contains(r, string(filepath.Separator)) {
				return "./" + r
			}
			return r
		}
		return p
	}
	// go run's binary lives in a temporary build folder, gone afterwards.
	if exe, err := os.Executable(); err == nil && !strings.HasPrefix(exe, os.TempDir()) {
		if p := filepath.Join(filepath.Dir(exe), name); isExecutable(p) {
			return rel(p)
		}
	}
	if p := filepath.Join("bin", name); isExecutable(p) {
		return p
	}
	if _, err := exec.LookPath(name); err == nil {
		return name
	}
	if st, err := os.Stat(filepath.Join("cmd", name)); err == nil && st.IsDir() {
		return "go run ./cmd/" + name
	}
	return name
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// starterFile is one file bench init writes.
type starterFile struct {
	path   string
	data   []byte
	mode   os.FileMode
	shared bool // locklab_client.py: the same content may already be there
}

// clusterLines are the scenario's cluster section per built-in backend.
var clusterLines = map[string]string{
	"redis":     "redis: {primaries: 1}",
	"zookeeper": "zookeeper: {nodes: 3}",
	"etcd":      "etcd: {nodes: 3}",
}

// clusterLine is the scenario's cluster section for backend: a built-in
// one's, or a table backend's section with its defaults ("postgres: {}");
// "" for no backend.
func clusterLine(backend string) string {
	if l, ok := clusterLines[backend]; ok {
		return l
	}
	if _, ok := cluster.LookupBackend(backend); ok {
		return backend + ": {}"
	}
	return ""
}

// hasStarter reports whether clients/python holds a starter client for
// backend (starter_<backend>.py).
func hasStarter(backend string) bool {
	_, err := clients.Files.Open("python/starter_" + backend + ".py")
	return err == nil
}

func starterFiles(f initFlags, dir string) ([]starterFile, error) {
	client := filepath.Join(dir, f.name+"_client.py")
	command := "[./" + f.name + "-client]"
	if f.exec {
		command = fmt.Sprintf("[%s, %s]", external.Python(), client)
	}
	out := []starterFile{{path: filepath.Join(dir, f.name+".yaml"), data: []byte(scenarioText(f, command)), mode: 0o644}}
	if !f.exec {
		return out, nil
	}
	body, err := clients.Files.ReadFile("python/starter_" + f.backend + ".py")
	if err != nil {
		return nil, fmt.Errorf("bench init: starter client: %w", err)
	}
	module, err := clients.Files.ReadFile("python/locklab_client.py")
	if err != nil {
		return nil, fmt.Errorf("bench init: protocol module: %w", err)
	}
	body = []byte(strings.ReplaceAll(string(body), "THIS_FILE", client))
	return append(out,
		starterFile{path: client, data: body, mode: 0o755},
		starterFile{path: filepath.Join(dir, "locklab_client.py"), data: module, mode: 0o644, shared: true}), nil
}

// scenarioText is the starter scenario: the paused-holder test every lock
// should face first, with the claims a fenced lock keeps. A backend of
// session locks gets its own (sessionScenarioText).
func scenarioText(f initFlags, command string) string {
	// A comment inside the flow mapping would hide its end: it goes above.
	edit := ""
	if !f.exec {
		edit = "\n  # EDIT: command: your program and its arguments"
	}
	if tb, ok := cluster.LookupBackend(f.backend); ok && tb.Sessions {
		return sessionScenarioText(f, command, edit)
	}
	return fmt.Sprintf(`# %[1]s: your lock, its holder paused past its lease.
# Lines marked EDIT are yours to change; docs/scenario-file.md lists every field.
# Run it: chaos run %[1]s.yaml   (exit 0: every expect met; 1: one failed;
# 3: inconclusive, e.g. the fault found no holder)
name: %[1]s
description: >
  %[1]s (an exec lock on %[2]s) under a paused holder: the holder's whole
  process is stopped (SIGSTOP) for 5s, past its 2s lease, then resumes and
  writes what it read before the pause. A lock with fencing tokens keeps
  the data safe: the resource rejects the stale write.
seed: 1
cluster:
  %[3]s   # EDIT: the servers your program needs
locks:
  # exec runs your program once per client; it speaks the client protocol
  # (docs/client-protocol.md). label names it in tables and in expect.%[5]s
  - {name: exec, backend: %[2]s, command: %[4]s, label: %[1]s}
workload:
  clients: 3
  duration: 10s
  ttl: 2s                 # EDIT: handed to your program as ttl_ms (lease or session timeout)
  critical_section: 300ms # how long a holder stays inside
faults:
  # EDIT: the fault to inject. pause-client stops the holder's process
  # group: a GC or VM pause. Others: latency, partition, pause, kill,
  # restart, clock-jump (docs/faults.md).
  - {at: 2s, for: 5s, type: pause-client, client: holder}
resource:
  fencing: enforce        # a write with a token older than one already seen is rejected
expect:
  # EDIT: what your lock must keep. lock_faults 0: the lock never granted a
  # second holder within the first one's promise (validity_ms/session_ms);
  # stale_accepted and lost_updates 0: fencing kept the data safe. A lock
  # without tokens loses updates here: expect lost_updates: ">0" for it.
  default: {lock_faults: 0, stale_accepted: 0, lost_updates: 0}
`, f.name, f.backend, clusterLine(f.backend), command, edit)
}

// sessionScenarioText is the starter scenario on a backend of session
// locks (cluster.TableBackend.Sessions): a paused holder keeps its session,
// since its kernel still answers the server's keepalives, so the test a
// session lock must pass first is that it keeps protecting a paused holder
// (the fault's evidence reads held), and the waiters, blocked in the
// server, count as contenders (standing: true).
func sessionScenarioText(f initFlags, command, edit string) string {
	return fmt.Sprintf(`# %[1]s: your session lock, its holder paused.
# Lines marked EDIT are yours to change; docs/scenario-file.md lists every field.
# Run it: chaos run %[1]s.yaml   (exit 0: every expect met; 1: one failed;
# 3: inconclusive, e.g. the fault found no holder)
name: %[1]s
description: >
  %[1]s (an exec lock on %[2]s) under a paused holder: the holder's whole
  process is stopped (SIGSTOP) for 3s, then resumes and writes what it
  read before the pause. A %[2]s lock lives as long as its client's
  session, and the server keeps a paused client's session (its kernel
  still answers the server's TCP keepalives), so the lock must keep
  protecting the holder: no second holder, the waiters blocked until it
  resumes (safe, and unavailable for the pause). A session ends when the
  server notices its client is gone: a killed client, or a partition of
  the holder longer than the server's keepalive time (docs/backends.md).
seed: 1
cluster:
  %[3]s   # EDIT: the servers your program needs
locks:
  # exec runs your program once per client; it speaks the client protocol
  # (docs/client-protocol.md). label names it in tables and in expect.
  # standing: true says its acquire waits in the server (a blocking lock
  # call), so a waiter counts as a contender for as long as it waits; set
  # false if your program polls instead.%[5]s
  - {name: exec, backend: %[2]s, command: %[4]s, label: %[1]s, standing: true}
workload:
  clients: 4              # the holder and 3 waiters: a safe claim needs 3 (min_visits)
  duration: 10s
  ttl: 2s                 # handed to your program as ttl_ms; a session lock has none of its own
  critical_section: 300ms # how long a holder stays inside
faults:
  # EDIT: the fault to inject. pause-client stops the holder's process
  # group (a GC or VM pause), here shorter than the session the server
  # promises (session_ms). Others: latency, partition, pause, kill,
  # restart (docs/faults.md).
  - {at: 2s, for: 3s, type: pause-client, client: holder}
resource:
  fencing: enforce        # a write with a token older than one already seen is rejected
expect:
  # EDIT: what your lock must keep. lock_faults 0: the lock never granted a
  # second holder within the first one's promise (session_ms);
  # stale_accepted and lost_updates 0: the paused holder's write is the
  # only one while it holds.
  default: {lock_faults: 0, stale_accepted: 0, lost_updates: 0}
`, f.name, f.backend, clusterLine(f.backend), command, edit)
}
