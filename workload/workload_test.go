package workload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/locks"
	_ "github.com/locklab/locklab/locks/redislock"
	"github.com/locklab/locklab/testenv"
	"github.com/locklab/locklab/workload"
)

func TestMain(m *testing.M) {
	workload.MaybeWorker() // this test binary is also the client process
	os.Exit(m.Run())
}

func TestRecorderSnapshotMerge(t *testing.T) {
	base := time.Now().Add(-time.Second)
	a, b := workload.NewRecorder(base), workload.NewRecorder(base)
	a.Acquired(2 * time.Millisecond)
	a.Completed(base.Add(50 * time.Millisecond))
	b.Acquired(4 * time.Millisecond)
	b.Completed(base.Add(250 * time.Millisecond))
	b.Error(workload.ErrAcquireTimeout, base.Add(260*time.Millisecond))
	b.Violation(120 * time.Millisecond)
	// A snapshot crosses a process boundary as JSON.
	data, err := json.Marshal(b.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var snap workload.Snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatal(err)
	}
	a.Merge(snap)
	sum := a.Summary()
	if sum.Ops != 2 || sum.Errors[workload.ErrAcquireTimeout] != 1 || sum.Acquire.TotalCount() != 2 {
		t.Fatalf("merged summary: ops %d errors %v acquires %d", sum.Ops, sum.Errors, sum.Acquire.TotalCount())
	}
	want := []workload.Bucket{{Completions: 1}, {Violations: 1}, {Completions: 1, Errors: 1}}
	if len(sum.Timeline) != 3 {
		t.Fatalf("timeline %+v", sum.Timeline)
	}
	for i, w := range want {
		if sum.Timeline[i] != w {
			t.Errorf("bucket %d = %+v, want %+v", i, sum.Timeline[i], w)
		}
	}
}

func redisCAD(t *testing.T, addr string) workload.ClientFactory {
	spec, ok := locks.Lookup("redis-cad")
	if !ok {
		t.Fatal("redis-cad not registered")
	}
	return func(ctx context.Context, i int) (locks.Client, error) {
		return spec.New(ctx, locks.Config{Endpoints: locks.Endpoints{Redis: []string{addr}}, TTL: 5 * time.Second,
			Prefix: "wl:" + t.Name() + ":", Seed: int64(i)})
	}
}

// TestOpsBudget: ops: N means exactly N critical sections across clients,
// each one checked by the resource.
func TestOpsBudget(t *testing.T) {
	addr := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := time.Now()
	res := checker.New(checker.FencingEnforce, base)
	rec := workload.NewRecorder(base)
	cfg := workload.Config{Clients: 4, Ops: 300, Keys: 2, Base: base}
	if err := workload.Run(ctx, cfg, redisCAD(t, addr), res, rec); err != nil {
		t.Fatal(err)
	}
	sum, truth := rec.Summary(), res.Summary()
	if sum.Ops != 300 || truth.Visits != 300 || truth.Writes != 300 || truth.Counter != 300 {
		t.Fatalf("ops %d visits %d writes %d counter %d, want 300 each", sum.Ops, truth.Visits, truth.Writes, truth.Counter)
	}
	if truth.Violations != 0 || truth.StaleTokens != 0 || len(sum.Errors) != 0 {
		t.Fatalf("violations %d stale %d errors %v", truth.Violations, truth.StaleTokens, sum.Errors)
	}
	if sum.Acquire.TotalCount() != 300 || sum.Release.TotalCount() != 300 {
		t.Fatalf("histograms: %d acquires, %d releases", sum.Acquire.TotalCount(), sum.Release.TotalCount())
	}
}

// TestOpenLoop: with a rate, operations start on schedule whatever the
// clients do, so the count follows rate x duration.
func TestOpenLoop(t *testing.T) {
	addr := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := time.Now()
	res := checker.New(checker.FencingOff, base)
	rec := workload.NewRecorder(base)
	cfg := workload.Config{Clients: 4, Duration: 2 * time.Second, Rate: 100, Keys: 4, Base: base}
	if err := workload.Run(ctx, cfg, redisCAD(t, addr), res, rec); err != nil {
		t.Fatal(err)
	}
	if ops := rec.Summary().Ops; ops < 170 || ops > 205 {
		t.Fatalf("open loop at 100/s for 2s did %d ops, want ~200", ops)
	}
}

// TestProcesses: clients in their own OS processes reach the resource over
// loopback, can be paused (state T) and resumed, and their measurements are
// merged back.
func TestProcesses(t *testing.T) {
	addr := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := checker.New(checker.FencingEnforce, time.Now())
	srv, err := checker.Serve(res, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]workload.WorkerSpec, 2)
	for i := range specs {
		specs[i] = workload.WorkerSpec{Client: i, Lock: "redis-cad", Endpoints: locks.Endpoints{Redis: []string{addr}},
			TTL: 5 * time.Second, Prefix: "proc:", Workload: workload.Config{Clients: 1, Keys: 1}, ResourceAddr: srv.Addr()}
	}
	ps, err := workload.StartProcesses(ctx, exe, specs, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Kill()
	// The run's origin 3 s ago: the workers must learn it from the start
	// handshake (their own clocks know nothing of it).
	base := time.Now().Add(-3 * time.Second)
	res.SetBase(base)
	var hist bytes.Buffer
	h := checker.NewHistory(&hist, 0)
	res.SetHistory(h)
	started := time.Since(base)
	u, err := ps.Start(base)
	if err != nil {
		t.Fatal(err)
	}
	if u <= 0 || u > time.Second {
		t.Fatalf("clock uncertainty %v, want half a loopback round trip", u)
	}
	pid := ps.Pids()[0]
	waitState := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for procState(t, pid) != want {
			if time.Now().After(deadline) {
				t.Fatalf("client-0 state %q, want %q", procState(t, pid), want)
			}
			time.Sleep(10 * time.Millisecond) // polling /proc
		}
	}
	if err := ps.Pause(0); err != nil {
		t.Fatal(err)
	}
	waitState("T")
	if err := ps.Resume(0); err != nil {
		t.Fatal(err)
	}
	waitState("S")
	for res.Summary().Visits < 50 {
		if ctx.Err() != nil {
			t.Fatal("workers made no progress")
		}
		time.Sleep(10 * time.Millisecond) // polling the resource
	}
	rec := workload.NewRecorder(base)
	if _, err := ps.Stop(10*time.Second, rec); err != nil {
		t.Fatal(err)
	}
	sum, truth := rec.Summary(), res.Summary()
	if sum.Ops == 0 || sum.Ops != int64(truth.Writes) || truth.Violations != 0 || truth.Inside != 0 {
		t.Fatalf("ops %d, resource writes %d violations %d inside %d", sum.Ops, truth.Writes, truth.Violations, truth.Inside)
	}
	checkWorkerClocks(t, h, &hist, started, u)
}

// checkWorkerClocks checks the workers' times against the harness's in
// the history: each grant was requested after the workers started and
// returned before the harness saw its visit enter, both to within the
// clock uncertainty each acquire line carries (and no more than u).
func checkWorkerClocks(t *testing.T, h *checker.History, hist *bytes.Buffer, started, u time.Duration) {
	t.Helper()
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	acquires := map[uint64]checker.Op{}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(hist.String()), "\n") {
		var op checker.Op
		if err := json.Unmarshal([]byte(line), &op); err != nil {
			t.Fatalf("history line %q: %v", line, err)
		}
		switch op.Op {
		case "acquire":
			if op.Uncertainty <= 0 || op.Uncertainty > int64(u) {
				t.Fatalf("acquire of client-%d: uncertainty %d ns, want in (0, %v]", op.Client, op.Uncertainty, u)
			}
			if op.Invoke+op.Uncertainty < int64(started) {
				t.Fatalf("client-%d requested at %v, before the workers started (%v): its clock missed the run's origin",
					op.Client, time.Duration(op.Invoke), started)
			}
			acquires[op.Visit] = op
		case "enter":
			a, ok := acquires[op.Visit]
			if !ok {
				t.Fatalf("enter of visit %d without its acquire line", op.Visit)
			}
			if a.Return-a.Uncertainty > op.Invoke {
				t.Fatalf("client-%d: grant returned at %v, after the harness saw it enter at %v (uncertainty %v)",
					op.Client, time.Duration(a.Return), time.Duration(op.Invoke), time.Duration(a.Uncertainty))
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no visit in the history")
	}
}

var procMu sync.Mutex

// procState returns the one-letter state of pid from /proc (R, S, T, Z...).
func procState(t *testing.T, pid int) string {
	procMu.Lock()
	defer procMu.Unlock()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if f[0] == "R" || f[0] == "D" {
		return "S" // running or waiting: not stopped
	}
	return f[0]
}
