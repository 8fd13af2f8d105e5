package workload_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/workload"
)

// overlapScript is two fake clients on one lock that grants everyone:
// client 0 acquires, enters and stays inside for 1.5s (after writing
// its renew line, if any); client 1 acquires 0.4s after its go, past a
// 100ms promise of client 0 (its own promise, 5s, still running), and
// enters while client 0 is inside. The
// incident is the lock's fault exactly when client 0's promise (as
// acquired0 and renew0 report it) still ran at client 1's grant.
func overlapScript(acquired0, renew0 string) string {
	return overlapScriptAfter("0", acquired0, renew0)
}

// overlapScriptAfter is overlapScript with client 0 taking delay seconds
// between its go and its acquired line (a program retrying inside acquire).
func overlapScriptAfter(delay, acquired0, renew0 string) string {
	return `read cfg
case "$cfg" in *'"version":2'*) ;; *) echo "config without version 2: $cfg" >&2; exit 9;; esac
echo '{"op":"ready","library":"sh-fake","version":2}'
read start
echo '{"op":"next"}'; read w
case "$cfg" in
*'"client":0,'*)
  sleep ` + delay + `
  echo '` + acquired0 + `'
  echo '{"op":"enter"}'; read r
  ` + renew0 + `
  sleep 1.5
  echo '{"op":"exit"}'; read r;;
*)
  sleep 0.4
  echo '{"op":"acquired","token":0,"validity_ms":5000}'
  echo '{"op":"enter"}'; read r
  echo '{"op":"exit"}'; read r;;
esac
echo '{"op":"released","outcome":"ok"}'
echo '{"op":"next"}'; read w
exit 0
`
}

// runOverlap runs script as two clients until both asked for their second
// operation, and returns the resource's summary.
func runOverlap(t *testing.T, script string) (checker.Summary, *workload.Programs) {
	t.Helper()
	ps, err := startFake(t, 2, script)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer ps.Kill()
	base := time.Now()
	res := checker.New(checker.FencingObserve, base)
	rec := workload.NewRecorder(base)
	ps.Run(workload.Config{Clients: 2, Keys: 1, Ops: 2, Base: base}, res, rec)
	select {
	case <-ps.Done():
	case <-ps.Failed():
	case <-time.After(20 * time.Second):
		t.Fatal("the fake clients did not finish in 20s")
	}
	if err := ps.Stop(5 * time.Second); err != nil {
		t.Fatalf("run: %v", err)
	}
	return res.Summary(), ps
}

// TestProgramPromises: what a program reports in acquired and renewed
// decides whether an overlap is the lock's fault or the client's, and
// what the result says of the promise.
func TestProgramPromises(t *testing.T) {
	for _, c := range []struct {
		name, acquired, renew string
		lockFault             bool
		promise               string
		delay                 string // client 0's acquire call, seconds
	}{
		{"validity ran out", `{"op":"acquired","token":0,"validity_ms":100}`, ``, false, "measured", ""},
		{"validity renewed", `{"op":"acquired","token":0,"validity_ms":100}`, `echo '{"op":"renewed","validity_ms":5000}'`, true, "measured", ""},
		{"short session", `{"op":"acquired","token":0,"session_ms":100}`, ``, false, "estimated", ""},
		{"long session", `{"op":"acquired","token":0,"session_ms":5000}`, ``, true, "estimated", ""},
		{"session not heard from", `{"op":"acquired","token":0,"session_ms":5000,"last_ok_ms_ago":4950}`, ``, false, "estimated", ""},
		{"nothing reported", `{"op":"acquired","token":0}`, `echo '{"op":"renewed","validity_ms":5000}'`, false, "unreported", ""},
		// Client 0 retries inside acquire for 0.3 s and is promised 350 ms:
		// counted from go its promise ends at about 0.34 s, before client
		// 1's grant at 0.4 s (the client's fault); counted from the
		// winning request, sent 1 ms before its acquired line, at about
		// 0.64 s (the lock's fault). A sent_us reaching back before go is
		// clamped to go.
		{"retried without sent_us", `{"op":"acquired","token":0,"validity_ms":350}`, ``, false, "measured", "0.3"},
		{"retried with sent_us", `{"op":"acquired","token":0,"validity_ms":350,"sent_us":1000}`, ``, true, "measured", "0.3"},
		{"sent_us before go", `{"op":"acquired","token":0,"validity_ms":350,"sent_us":9000000}`, ``, false, "measured", "0.3"},
		{"session with sent_us", `{"op":"acquired","token":0,"session_ms":350,"sent_us":1000}`, ``, true, "estimated", "0.3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			delay := c.delay
			if delay == "" {
				delay = "0"
			}
			sum, ps := runOverlap(t, overlapScriptAfter(delay, c.acquired, c.renew))
			if sum.Incidents != 1 {
				t.Fatalf("incidents %d, want 1 (the fake clients overlap once)", sum.Incidents)
			}
			if got := sum.LockFaults == 1; got != c.lockFault {
				t.Errorf("lock faults %d, client faults %d; want a lock fault: %v", sum.LockFaults, sum.ClientFaults, c.lockFault)
			}
			if sum.Promise != c.promise {
				t.Errorf("promise %q, want %q", sum.Promise, c.promise)
			}
			if v := ps.Versions(); v[0] != 2 || v[1] != 2 {
				t.Errorf("versions %v, want [2 2]", v)
			}
		})
	}
}

// TestProgramVersion: a program without a version speaks version 1; one
// claiming a version the harness does not know is refused.
func TestProgramVersion(t *testing.T) {
	ps, err := startFake(t, 1, prelude+goodLoop)
	if err != nil {
		t.Fatal(err)
	}
	if v := ps.Versions(); v[0] != 1 {
		t.Errorf("version %d without a version field, want 1", v[0])
	}
	ps.Kill()
	_, err = startFake(t, 1, `read cfg; echo '{"op":"ready","version":7}'; sleep 30`)
	wantErr(t, err, "client-0 (fake)", "speaks protocol version 7; this harness speaks versions 1 to 2")
	_, err = startFake(t, 1, `read cfg; echo '{"op":"ready","version":"2"}'; sleep 30`)
	wantErr(t, err, `field version must be an integer (got "2")`)
}

// TestProgramBackgroundLines: lost and renewed written by a library's
// thread between operations are not errors.
func TestProgramBackgroundLines(t *testing.T) {
	script := strings.Replace(goodLoop, `  echo '{"op":"next"}'; read w`,
		`  echo '{"op":"lost"}'; echo '{"op":"renewed","validity_ms":50}'
  echo '{"op":"next"}'; read w`, 1)
	_, rec, err := runFake(t, script, 2*time.Second)
	if err != nil {
		t.Fatalf("background lines between operations: %v", err)
	}
	// At least two operations: one after the first background lines (a
	// loaded machine runs the shell loop slowly: a CI run saw 2 in 500 ms).
	if ops, errs := rec.Counts(); ops < 2 || errs != 0 {
		t.Errorf("ops %d errors %d, want at least 2 operations and no error", ops, errs)
	}
	_, _, err = runFake(t, `echo '{"op":"renewed"}'; sleep 30`, 10*time.Second)
	wantErr(t, err, "renewed message", "missing field validity_ms")
}

// TestProgramConfigLine: the config line as a program receives it.
func TestProgramConfigLine(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "config.json")
	ps, err := startFake(t, 1, `read cfg; echo "$cfg" > `+out+`; echo '{"op":"ready"}'; sleep 30`)
	if err != nil {
		t.Fatal(err)
	}
	ps.Kill()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"op":"config","version":2,"client":0,`) {
		t.Errorf("config line %s", b)
	}
}

// TestProgramLostLine: a program's lost line, written while it holds the
// lock, goes into the history at the moment it arrived, naming the visit
// (the time until a client noticed is read from it); one written between
// holdings is not a lost lease and leaves no line.
func TestProgramLostLine(t *testing.T) {
	ps, err := startFake(t, 2, overlapScript(`{"op":"acquired","token":0,"validity_ms":5000}`, `echo '{"op":"lost"}'`))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer ps.Kill()
	base := time.Now()
	res := checker.New(checker.FencingObserve, base)
	var hist strings.Builder
	h := checker.NewHistory(&hist, 0)
	res.SetHistory(h)
	ps.Run(workload.Config{Clients: 2, Keys: 1, Ops: 2, Base: base}, res, workload.NewRecorder(base))
	select {
	case <-ps.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the fake clients did not finish in 20s")
	}
	if err := ps.Stop(5 * time.Second); err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	var lost, exit0 []checker.Op
	for _, line := range strings.Split(strings.TrimSpace(hist.String()), "\n") {
		var op checker.Op
		if err := json.Unmarshal([]byte(line), &op); err != nil {
			t.Fatalf("history line %q: %v", line, err)
		}
		switch {
		case op.Op == checker.OpLost:
			lost = append(lost, op)
		case op.Op == checker.OpExit && op.Client == 0:
			exit0 = append(exit0, op)
		}
	}
	if len(lost) != 1 || lost[0].Client != 0 || lost[0].Visit == 0 || len(exit0) != 1 {
		t.Fatalf("lost lines %+v, client 0's exits %+v: want one lost line of client 0's visit", lost, exit0)
	}
	// client 0 stays inside 1.5 s after its lost line: the line is timed
	// when it arrived, not when the holder left.
	if gap := time.Duration(exit0[0].Return - lost[0].Return); gap < time.Second {
		t.Errorf("lost line %v before client 0's exit, want about 1.5s", gap)
	}
}
