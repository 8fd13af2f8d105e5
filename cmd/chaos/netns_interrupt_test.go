package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/locklab/locklab/cluster/providers/netns"
	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/testenv"
)

// chaosMainEnv, set to "1", makes the test binary run as the chaos command
// (TestNetnsInterrupts starts it so, with chaos's own signal handling).
const chaosMainEnv = "LOCKLAB_TEST_CHAOS_MAIN"

func init() {
	if os.Getenv(chaosMainEnv) == "1" {
		cli.Main(run)
	}
}

// TestNetnsInterrupts interrupts 20 short netns runs (clients in processes
// of their own, each in its own namespace, one of them partitioned) at
// seeded random moments between 0.2 s and 2 s, half by SIGINT, half by
// SIGKILL followed by netns.Cleanup (what `chaos cleanup` runs),
// and checks nothing of those runs is left: no namespace named after one
// of their processes, no process of theirs, no nftables table in the
// machine's namespace.
func TestNetnsInterrupts(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	if err := netns.Available(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	const yaml = "name: netns-interrupt\ncluster: {provider: netns, redis: {primaries: 1}}\nlocks: [redis-cad]\n" +
		"workload: {clients: 2, duration: 2s, ttl: 500ms, critical_section: 100ms, process_per_client: true}\n" +
		"faults:\n  - {at: 300ms, for: 500ms, type: partition, isolate: client-0}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(20261125, 2))
	start := time.Now()
	for i := range 20 {
		kill := i%2 == 1
		after := 200*time.Millisecond + time.Duration(rng.Int64N(int64(1800*time.Millisecond)))
		cmd := exec.Command(os.Args[0], "run", "-q", "--out", filepath.Join(dir, "out-"+strconv.Itoa(i)), file)
		cmd.Env = append(os.Environ(), chaosMainEnv+"=1")
		log, err := os.Create(filepath.Join(dir, fmt.Sprintf("run-%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tree := interrupt(t, cmd, i, after, kill, nil)
		log.Close()
		if kill {
			waitDead(tree, 10*time.Second)
			res, err := netns.Cleanup(netns.CleanupOptions{})
			if err != nil {
				t.Fatalf("run %d: cleanup: %v", i, err)
			}
			t.Logf("run %d: SIGKILL after %v (%d processes); cleanup removed %d namespaces, killed %d processes",
				i, after.Round(time.Millisecond), len(tree), len(res.Namespaces), len(res.Processes))
		} else {
			t.Logf("run %d: SIGINT after %v (%d processes), %v", i, after.Round(time.Millisecond), len(tree), cmd.ProcessState)
		}
		waitDead(tree, 10*time.Second)
		for pid, st := range tree {
			if stat, ok := procStart(pid); ok && stat == st {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
				t.Errorf("run %d (%v): process %d left: %s", i, signalOf(kill), pid, strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		names, err := os.ReadDir("/run/netns")
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, n := range names {
			for pid := range tree {
				if strings.HasPrefix(n.Name(), netns.Prefix+strconv.Itoa(pid)+"-") {
					t.Errorf("run %d (%v): namespace %s left", i, signalOf(kill), n.Name())
				}
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("run-%d.log", i)))
			t.Fatalf("run %d output:\n%s", i, b)
		}
	}
	conn, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	tables, err := conn.ListTables()
	if err != nil {
		t.Fatalf("nftables of the machine's namespace: %v", err)
	}
	for _, tb := range tables {
		if tb.Name == "locklab" {
			t.Errorf("nftables table %q in the machine's namespace", tb.Name)
		}
	}
	t.Logf("20 interrupted runs in %v", time.Since(start).Round(time.Second))
}

// descendants is pid and every process under it, each with its start
// time (so a reused pid is not taken for one of them).
func descendants(pid int) map[int]uint64 {
	out := map[int]uint64{}
	if st, ok := procStart(pid); ok {
		out[pid] = st
	}
	for grew := true; grew; {
		grew = false
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			p, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if _, ok := out[p]; ok {
				continue
			}
			if _, ok := out[procParent(p)]; ok {
				if st, ok := procStart(p); ok {
					out[p] = st
					grew = true
				}
			}
		}
	}
	return out
}

// procFields are the fields of /proc/PID/stat after the command name
// (state is [0]); nil for a process gone or a zombie.
func procFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" {
		return nil
	}
	return f
}

func procParent(pid int) int {
	f := procFields(pid)
	if f == nil {
		return -1
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// procStart is the start time of a live process (field 22 of stat).
func procStart(pid int) (uint64, bool) {
	f := procFields(pid)
	if f == nil {
		return 0, false
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	return st, err == nil
}

// waitDead polls until none of the processes runs, or d passed.
func waitDead(tree map[int]uint64, d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		alive := false
		for pid, st := range tree {
			if s, ok := procStart(pid); ok && s == st {
				alive = true
			}
		}
		if !alive {
			return
		}
		time.Sleep(50 * time.Millisecond) // poll: their parents reap them
	}
}

// interrupt waits after (the moment of the interrupt, not a
// synchronisation), then sends run i's harness SIGINT, or SIGKILL when kill,
// and waits up to 60 s for it to exit; it returns the harness's process
// tree as it was just before the signal. A harness that has not exited 3 s
// after a SIGKILL may be stuck in a request to a FUSE mount of its own (no
// thread of it is left to answer): unstick, when not nil, runs then (it
// aborts such connections). A harness that never exits fails the test; the
// wait never blocks past its bound.
func interrupt(t *testing.T, cmd *exec.Cmd, i int, after time.Duration, kill bool, unstick func()) map[int]uint64 {
	t.Helper()
	time.Sleep(after)
	tree := descendants(cmd.Process.Pid)
	sig := signalOf(kill)
	_ = cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if kill && unstick != nil {
		select {
		case <-done:
			return tree
		case <-time.After(3 * time.Second):
			t.Logf("run %d: harness not gone 3 s after SIGKILL: aborting its FUSE connections", i)
			unstick()
		}
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		if unstick != nil {
			unstick()
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		t.Fatalf("run %d: still running 60 s after %v", i, sig)
	}
	return tree
}

// signalOf is the signal an interrupted run gets: SIGKILL when kill, else
// SIGINT (Ctrl-C).
func signalOf(kill bool) syscall.Signal {
	if kill {
		return syscall.SIGKILL
	}
	return syscall.SIGINT
}
