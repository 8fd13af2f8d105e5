package workload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/workload"
)

// The protocol's parser is tested with fake clients: tiny shell scripts
// that speak (or break) the client protocol. They need no lock server:
// what is under test is how the harness reads them.

// prelude answers config and start like every client.
const prelude = `read cfg
echo '{"op":"ready","library":"sh-fake"}'
read start
`

// goodLoop is a client that "acquires" at once, with token n, n+1, ...
const goodLoop = `n=1
while :; do
  echo '{"op":"next"}'; read w
  case "$w" in *stop*) exit 0;; esac
  echo '{"op":"acquired","token":'$n',"us":12.5,"validity_ms":1000}'
  echo '{"op":"enter"}'; read r
  echo '{"op":"read"}'; read r
  v=$(echo "$r" | sed 's/.*"value":\([0-9-]*\).*/\1/')
  echo '{"op":"write","value":'$((v+1))'}'; read r
  echo '{"op":"exit"}'; read r
  echo '{"op":"released","outcome":"ok","us":3}'
  n=$((n+1))
done
`

// startFake starts n copies of script (a /bin/sh body) as client programs.
func startFake(t *testing.T, n int, script string) (*workload.Programs, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "client.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	specs := make([]workload.ProgramSpec, n)
	for i := range specs {
		specs[i] = workload.ProgramSpec{Client: i, Name: "fake", Command: []string{"/bin/sh", path},
			Config: workload.ProgramConfig{Client: i, Lock: "fake", Backend: "redis", TTLMs: 1000}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return workload.StartPrograms(ctx, specs, filepath.Join(dir, "logs"))
}

// runFake runs script as one client for at most d and returns the
// resource, the recorder and the error the run stopped with.
func runFake(t *testing.T, script string, d time.Duration) (*checker.Shared, *workload.Recorder, error) {
	t.Helper()
	ps, err := startFake(t, 1, prelude+script)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer ps.Kill()
	base := time.Now()
	res := checker.New(checker.FencingEnforce, base)
	rec := workload.NewRecorder(base)
	ps.Run(workload.Config{Clients: 1, Keys: 1}, res, rec)
	select {
	case <-ps.Failed():
	case <-time.After(d):
	}
	err = ps.Stop(5 * time.Second)
	assertGone(t, ps)
	return res, rec, err
}

// assertGone fails when a program's process is still alive.
func assertGone(t *testing.T, ps *workload.Programs) {
	t.Helper()
	for _, pid := range ps.Pids() {
		if syscall.Kill(pid, 0) == nil {
			// A zombie not yet reaped still answers kill 0; check its state.
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if f := strings.Fields(string(b)); len(f) > 2 && f[2] != "Z" {
				t.Errorf("program pid %d still running", pid)
			}
		}
	}
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

func TestProgramGoodClient(t *testing.T) {
	res, rec, err := runFake(t, goodLoop, 500*time.Millisecond)
	if err != nil {
		t.Fatalf("good client: %v", err)
	}
	ops, errs := rec.Counts()
	sum := res.Summary()
	if ops < 10 || errs != 0 || int64(sum.Visits) != ops || sum.Violations != 0 || sum.LostUpdates != 0 {
		t.Fatalf("ops %d errors %d visits %d violations %d lost %d", ops, errs, sum.Visits, sum.Violations, sum.LostUpdates)
	}
	if s := rec.Summary(); s.Acquire.TotalCount() != ops && s.Acquire.TotalCount() != ops+1 {
		t.Errorf("acquire latencies %d for %d ops", s.Acquire.TotalCount(), ops)
	}
}

func TestProgramUnknownMessage(t *testing.T) {
	_, _, err := runFake(t, `echo '{"op":"hello"}'; sleep 30`, 10*time.Second)
	wantErr(t, err, "client-0 (fake)", `unknown op "hello"`)
}

func TestProgramNotJSON(t *testing.T) {
	_, _, err := runFake(t, `echo 'acquired 5'; sleep 30`, 10*time.Second)
	wantErr(t, err, "client-0 (fake)", `said "acquired 5": not a JSON object`)
}

func TestProgramMissingField(t *testing.T) {
	_, _, err := runFake(t, `echo '{"op":"next"}'; read w
echo '{"op":"acquired","us":3}'; sleep 30`, 10*time.Second)
	wantErr(t, err, "client-0 (fake)", "acquired message", "missing field token")
}

func TestProgramWrongTokenType(t *testing.T) {
	_, _, err := runFake(t, `echo '{"op":"next"}'; read w
echo '{"op":"acquired","token":"abc"}'; sleep 30`, 10*time.Second)
	wantErr(t, err, "client-0 (fake)", `field token must be an integer >= 0 (got "abc")`)
	_, _, err = runFake(t, `echo '{"op":"next"}'; read w
echo '{"op":"acquired","token":-1}'; sleep 30`, 10*time.Second)
	wantErr(t, err, "field token must be an integer >= 0 (got -1)")
}

func TestProgramOutOfOrder(t *testing.T) {
	_, _, err := runFake(t, `echo '{"op":"enter"}'; sleep 30`, 10*time.Second)
	wantErr(t, err, "enter message", "not allowed while idle")
}

func TestProgramExitsInsideCriticalSection(t *testing.T) {
	res, _, err := runFake(t, `echo '{"op":"next"}'; read w
echo '{"op":"acquired","token":7}'
echo '{"op":"enter"}'; read r
echo 'dying with the lock' >&2
exit 3`, 10*time.Second)
	wantErr(t, err, "client-0 (fake)", "exited inside the critical section of lock-0", "exit status 3", "stderr: dying with the lock")
	if in := res.Inside(); len(in) != 0 {
		t.Errorf("the dead client is still inside the resource: %v", in)
	}
}

func TestProgramExitsEarly(t *testing.T) {
	_, _, err := runFake(t, `echo '{"op":"next"}'; read w; exit 0`, 10*time.Second)
	wantErr(t, err, "client-0 (fake)", "exited early while acquiring", "exit status 0")
}

func TestProgramStartFailures(t *testing.T) {
	_, err := startFake(t, 2, `echo 'Traceback: no module named kazoo' >&2; exit 1`)
	wantErr(t, err, "client-0 (fake)", "exited before ready (exit status 1)", "stderr: Traceback: no module named kazoo")

	_, err = startFake(t, 1, `read cfg; echo 'hello'; sleep 30`)
	wantErr(t, err, "client-0 (fake)", `said "hello": not a JSON object`)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = workload.StartPrograms(ctx, []workload.ProgramSpec{{Name: "hang", Command: []string{"/bin/sleep", "30"}}}, t.TempDir())
	wantErr(t, err, "client-0 (hang)", "no ready message", "deadline exceeded")

	_, err = workload.StartPrograms(ctx, []workload.ProgramSpec{{Name: "missing", Command: []string{"/no/such/program"}}}, t.TempDir())
	wantErr(t, err, "client-0 (missing)", "/no/such/program", "no such file")
}

// TestProgramStopKillsWaiters: a program stuck in its acquire at the end
// of the run is killed, without an error: its acquisition no longer counts.
func TestProgramStopKillsWaiters(t *testing.T) {
	start := time.Now()
	_, rec, err := runFake(t, `echo '{"op":"next"}'; read w; sleep 60`, 300*time.Millisecond)
	if err != nil {
		t.Fatalf("stuck acquirer at the end: %v", err)
	}
	if ops, errs := rec.Counts(); ops != 0 || errs != 0 {
		t.Errorf("ops %d errors %d", ops, errs)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stop took %v", d)
	}
}

// TestProgramReleaseLines: a program's released message becomes the
// history's release line of its visit, as a built-in lock's release does:
// one per visit, after its exit, timed by the program's us.
func TestProgramReleaseLines(t *testing.T) {
	ps, err := startFake(t, 1, prelude+goodLoop)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer ps.Kill()
	base := time.Now()
	res := checker.New(checker.FencingEnforce, base)
	var buf bytes.Buffer
	h := checker.NewHistory(&buf, 0)
	res.SetHistory(h)
	rec := workload.NewRecorder(base)
	ps.Run(workload.Config{Clients: 1, Keys: 1, Base: base}, res, rec) // the resource's origin, as a run shares it
	time.Sleep(300 * time.Millisecond)
	if err := ps.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	exits, releases := map[uint64]int64{}, 0
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var op checker.Op
		if err := json.Unmarshal([]byte(line), &op); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch op.Op {
		case checker.OpExit:
			exits[op.Visit] = op.Return
		case checker.OpRelease:
			releases++
			ex, ok := exits[op.Visit]
			if !ok || op.Outcome != "ok" || op.Invoke < ex || op.Return-op.Invoke != int64(3*time.Microsecond) {
				t.Errorf("release %+v: want outcome ok, after its visit's exit (%d, seen %v), 3 µs long", op, ex, ok)
			}
		}
	}
	if len(exits) < 5 || releases < len(exits)-1 {
		t.Errorf("%d exits, %d release lines: want one release per visit", len(exits), releases)
	}
}
