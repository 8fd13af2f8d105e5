package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/testenv"
)

// TestPowerCutInterrupts interrupts 20 short runs with power-cut faults
// (Redis with appendfsync everysec, its data dir on the lossy FUSE
// filesystem, cut three times) at seeded random moments between 0.2 s
// and 2.5 s, half by SIGINT, half by SIGKILL followed by
// cluster.LossyMountCleanup (what `chaos cleanup` runs), and checks
// nothing of those runs is left: no lossyfs mount under the runs'
// directory, no process of theirs.
func TestPowerCutInterrupts(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Unavailable(t, "/dev/fuse: %v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	const yaml = "name: power-cut-interrupt\ncluster: {redis: {primaries: 1, persistence: everysec}}\nlocks: [redis-cad]\n" +
		"workload: {clients: 2, duration: 2s, ttl: 2s, critical_section: 100ms}\n" +
		"faults:\n  - {at: 300ms, type: power-cut, node: redis-0}\n" +
		"  - {at: 900ms, type: power-cut, node: redis-0, delay: 200ms}\n" +
		"  - {at: 1500ms, type: power-cut, node: redis-0}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	const runs = 20
	rng := rand.New(rand.NewPCG(20261126, 32))
	start := time.Now()
	for i := range runs {
		kill := i%2 == 1
		after := 200*time.Millisecond + time.Duration(rng.Int64N(int64(2300*time.Millisecond)))
		out := filepath.Join(dir, "out-"+strconv.Itoa(i))
		cmd := exec.Command(os.Args[0], "run", "-q", "--out", out, file)
		cmd.Env = append(os.Environ(), chaosMainEnv+"=1")
		log, err := os.Create(filepath.Join(dir, fmt.Sprintf("run-%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tree := interrupt(t, cmd, i, after, kill, func() {
			if _, _, err := cluster.LossyMountCleanup(dir, true, false); err != nil {
				t.Logf("run %d: cleanup: %v", i, err)
			}
		})
		log.Close()
		if kill {
			// A harness killed while a server it forks changes into the
			// mount can hang in that request (the child still holds the
			// FUSE connection before its exec): cleanup aborts it first.
			// interrupt returned once the harness was reaped; a mount
			// still served a moment longer (a loaded machine tears a
			// dying harness down slowly) is tried again, up to 5 s.
			waitDead(tree, 10*time.Second)
			var detached []string
			for try := 0; try < 5; try++ {
				d, _, err := cluster.LossyMountCleanup(dir, false, false)
				if err != nil {
					t.Fatalf("run %d: cleanup: %v", i, err)
				}
				detached = append(detached, d...)
				if left, _, _ := cluster.LossyMountCleanup(dir, true, true); len(left) == 0 {
					break
				}
				time.Sleep(time.Second)
			}
			t.Logf("run %d: SIGKILL after %v (%d processes); cleanup detached %d mounts",
				i, after.Round(time.Millisecond), len(tree), len(detached))
			waitDead(tree, 10*time.Second)
		} else {
			waitDead(tree, 10*time.Second)
			t.Logf("run %d: SIGINT after %v (%d processes), %v", i, after.Round(time.Millisecond), len(tree), cmd.ProcessState)
		}
		for pid, st := range tree {
			if stat, ok := procStart(pid); ok && stat == st {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
				t.Errorf("run %d (%v): process %d left: %s", i, signalOf(kill), pid, strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		left, _, err := cluster.LossyMountCleanup(dir, true, true) // dry run: list every one
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range left {
			t.Errorf("run %d (%v): lossyfs mount left at %s", i, signalOf(kill), m)
		}
		if t.Failed() {
			cluster.LossyMountCleanup(dir, true, false)
			b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("run-%d.log", i)))
			t.Fatalf("run %d output:\n%s", i, b)
		}
	}
	t.Logf("%d interrupted runs in %v", runs, time.Since(start).Round(time.Second))
}
