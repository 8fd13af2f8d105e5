package external_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
	"github.com/locklab/locklab/testenv"
)

// Bounds of the kind tests, generous for a loaded machine: a JVM may take
// many seconds to say ready, a grant that is due comes within grantWithin,
// and a program that must wait is watched for waitFor.
const (
	readyWithin = 120 * time.Second
	grantWithin = 30 * time.Second
	waitFor     = 1500 * time.Millisecond
)

// TestLockKindPrograms drives the read-write and semaphore programs
// (kazoo-rw, curator-rw, kazoo-semaphore, curator-semaphore) through the
// client protocol by hand on a real ZooKeeper, three programs per lock on
// one key, each held inside its critical section for as long as the test
// leaves its enter unanswered: two readers are inside together, a writer
// waits for them and a reader for a writer; a semaphore of 2 permits
// admits two and makes the third wait until one leaves.
func TestLockKindPrograms(t *testing.T) {
	testenv.RequireBinaries(t, "java", "javac")
	jars := []string{}
	for _, j := range external.CuratorJars {
		jars = append(jars, "/usr/share/java/"+j+".jar")
	}
	testenv.RequireFiles(t, jars...)
	if out, err := exec.Command(external.Python(), "-c", "from kazoo.recipe.lock import ReadLock, WriteLock, Semaphore").CombinedOutput(); err != nil {
		testenv.Unavailable(t, "kazoo's ReadLock/WriteLock/Semaphore are missing (python3-kazoo, make deps): %s", strings.TrimSpace(string(out)))
	}
	c := testenv.Cluster(t, cluster.Spec{Backends: map[string]cluster.Settings{"zookeeper": {"nodes": 1}}, Clients: 3})
	for _, tc := range []struct {
		lock string
		test func(t *testing.T, a, b, c *program)
	}{
		{"kazoo-rw", testRW}, {"curator-rw", testRW},
		{"kazoo-semaphore", testSemaphore}, {"curator-semaphore", testSemaphore},
	} {
		t.Run(tc.lock, func(t *testing.T) {
			t.Parallel()
			spec, ok := locks.Lookup(tc.lock)
			if !ok {
				t.Fatalf("lock %s is not registered", tc.lock)
			}
			opts := map[string]string{}
			if spec.KindOf() == locks.KindSemaphore {
				opts[locks.PermitsOption] = "2"
			}
			var ps [3]*program
			done := make(chan error, len(ps))
			for i := range ps {
				ps[i] = startProgram(t, tc.lock, i, c.Endpoints(i).Table["zookeeper"], opts)
			}
			for _, p := range ps {
				go func() { done <- p.ready() }()
			}
			for range ps {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			tc.test(t, ps[0], ps[1], ps[2])
			for _, p := range ps {
				p.stop(t)
			}
		})
	}
}

// testRW: readers share, a writer excludes both ways, writers' tokens grow.
func testRW(t *testing.T, a, b, c *program) {
	a.goLock(t, "shared")
	ta := a.acquired(t)
	b.goLock(t, "shared")
	tb := b.acquired(t) // a is still inside: two readers together
	c.goLock(t, "")     // no mode: the exclusive side
	c.waits(t, "a writer while two readers are inside")
	a.finish(t, true)
	c.waits(t, "a writer while a reader is inside")
	b.finish(t, true)
	tc := c.acquired(t)
	if ta == 0 || tb == 0 || tc <= ta || tc <= tb {
		t.Errorf("tokens: readers %d, %d, then the writer %d: want non-zero and the writer's above the readers'", ta, tb, tc)
	}
	a.goLock(t, "shared")
	a.waits(t, "a reader while a writer is inside")
	c.finish(t, false)
	ta2 := a.acquired(t)
	if ta2 <= tc {
		t.Errorf("reader after the writer: token %d, want above the writer's %d", ta2, tc)
	}
	c.goLock(t, "exclusive")
	c.waits(t, "a writer while a reader is inside")
	a.finish(t, true)
	tc2 := c.acquired(t)
	if tc2 <= tc {
		t.Errorf("writers' tokens %d then %d: want strictly increasing", tc, tc2)
	}
	t.Logf("tokens: readers %d, %d; writer %d; reader %d; writer %d", ta, tb, tc, ta2, tc2)
	c.finish(t, false)
}

// testSemaphore: 2 permits admit two holders and the third waits.
func testSemaphore(t *testing.T, a, b, c *program) {
	a.goLock(t, "")
	a.acquired(t)
	b.goLock(t, "")
	b.acquired(t) // a is still inside: two holders together
	c.goLock(t, "")
	c.waits(t, "a third holder of 2 permits")
	a.finish(t, false)
	c.acquired(t)
	a.goLock(t, "")
	a.waits(t, "a third holder of 2 permits")
	b.finish(t, false)
	a.acquired(t)
	c.finish(t, false)
	a.finish(t, false)
}

// program is one client program the test speaks the protocol with.
type program struct {
	name   string
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan map[string]any
	exited chan struct{} // closed once the program exited
	err    error         // its exit status, once exited is closed
	log    string        // the program's stderr file
}

// startProgram starts lock's program as client i and sends its config.
func startProgram(t *testing.T, lock string, i int, zk []string, opts map[string]string) *program {
	t.Helper()
	argv, _, err := external.Command(lock, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := &program{name: fmt.Sprintf("%s client-%d", lock, i), lines: make(chan map[string]any, 16),
		exited: make(chan struct{}), log: filepath.Join(t.TempDir(), "stderr.log")}
	errf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stderr = errf
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: start %v: %v", p.name, argv, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"op": "not json", "line": sc.Text()}
			}
			p.lines <- m
		}
		close(p.lines)
		p.err = p.cmd.Wait()
		errf.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.in.Close()
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
		}
	})
	p.send(t, map[string]any{"op": "config", "version": 2, "client": i, "lock": lock, "backend": "zookeeper",
		"endpoints": map[string]any{"zookeeper": zk}, "ttl_ms": 10000, "retry_ms": 0,
		"prefix": "locklab:kinds-test:" + lock + ":", "options": opts, "seed": i + 1,
		"critical_section_ms": 0, "acquire_timeout_ms": 60000, "release_timeout_ms": 10000})
	return p
}

func (p *program) send(t *testing.T, m map[string]any) {
	t.Helper()
	b, _ := json.Marshal(m)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("%s: write %s: %v%s", p.name, b, err, p.stderr())
	}
}

// next returns the program's next line within d, ok false when none came.
func (p *program) next(t *testing.T, d time.Duration) (map[string]any, bool) {
	t.Helper()
	for {
		select {
		case m, open := <-p.lines:
			if !open {
				t.Fatalf("%s: exited early%s", p.name, p.stderr())
			}
			if m["op"] == "renewed" {
				continue
			}
			return m, true
		case <-time.After(d):
			return nil, false
		}
	}
}

// expect reads the next line, which must have op.
func (p *program) expect(t *testing.T, op string, d time.Duration) map[string]any {
	t.Helper()
	m, ok := p.next(t, d)
	if !ok {
		t.Fatalf("%s: no %q line within %v%s", p.name, op, d, p.stderr())
	}
	if m["op"] != op {
		t.Fatalf("%s: got %v, want op %q%s", p.name, m, op, p.stderr())
	}
	return m
}

// ready waits for ready, says start and takes the first next.
func (p *program) ready() (err error) {
	select {
	case m, open := <-p.lines:
		if !open || m["op"] != "ready" || m["version"] != 2.0 {
			return fmt.Errorf("%s: first line %v, want ready version 2%s", p.name, m, p.stderr())
		}
	case <-time.After(readyWithin):
		return fmt.Errorf("%s: no ready within %v%s", p.name, readyWithin, p.stderr())
	}
	b, _ := json.Marshal(map[string]any{"op": "start"})
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return err
	}
	select {
	case m, open := <-p.lines:
		if !open || m["op"] != "next" {
			return fmt.Errorf("%s: after start %v, want next%s", p.name, m, p.stderr())
		}
	case <-time.After(grantWithin):
		return fmt.Errorf("%s: no next after start%s", p.name, p.stderr())
	}
	return nil
}

// goLock answers the pending next with a go on lock-0 in mode ("": none).
func (p *program) goLock(t *testing.T, mode string) {
	t.Helper()
	m := map[string]any{"op": "go", "key": "lock-0"}
	if mode != "" {
		m["mode"] = mode
	}
	p.send(t, m)
}

// acquired waits for the grant and returns its token. The program then
// asks to enter, which stays unanswered (it is inside) until finish.
func (p *program) acquired(t *testing.T) int64 {
	t.Helper()
	m := p.expect(t, "acquired", grantWithin)
	tok, ok := m["token"].(float64)
	if !ok || tok < 0 {
		t.Fatalf("%s: acquired %v: token must be an integer >= 0", p.name, m)
	}
	if m["session_ms"] == nil {
		t.Errorf("%s: acquired %v: no session_ms", p.name, m)
	}
	return int64(tok)
}

// waits asserts that the program is not granted the lock for waitFor.
func (p *program) waits(t *testing.T, what string) {
	t.Helper()
	if m, ok := p.next(t, waitFor); ok {
		t.Fatalf("%s: %s must wait: got %v", p.name, what, m)
	}
}

// finish lets a holder through its critical section: enter, read, then a
// reader (shared) reads again and a writer writes, exit, and its release.
func (p *program) finish(t *testing.T, shared bool) {
	t.Helper()
	p.expect(t, "enter", grantWithin)
	p.send(t, map[string]any{"ok": true})
	p.expect(t, "read", grantWithin)
	p.send(t, map[string]any{"ok": true, "value": 7})
	if shared {
		p.expect(t, "read", grantWithin)
		p.send(t, map[string]any{"ok": true, "value": 7})
	} else {
		if w := p.expect(t, "write", grantWithin); w["value"] != 8.0 {
			t.Errorf("%s: wrote %v after reading 7, want 8", p.name, w["value"])
		}
		p.send(t, map[string]any{"ok": true})
	}
	p.expect(t, "exit", grantWithin)
	p.send(t, map[string]any{"ok": true})
	if r := p.expect(t, "released", grantWithin); r["outcome"] != "ok" {
		t.Errorf("%s: released %v, want outcome ok", p.name, r)
	}
	p.expect(t, "next", grantWithin)
}

// stop answers the pending next with stop: the program exits with 0.
func (p *program) stop(t *testing.T) {
	t.Helper()
	p.send(t, map[string]any{"op": "stop"})
	for {
		select {
		case m, open := <-p.lines:
			if open {
				t.Errorf("%s: after stop: %v", p.name, m)
				continue
			}
			<-p.exited
			if p.err != nil {
				t.Errorf("%s: exit after stop: %v%s", p.name, p.err, p.stderr())
			}
			return
		case <-time.After(10 * time.Second):
			t.Errorf("%s: still running 10s after stop", p.name)
			return
		}
	}
}

// stderr is the tail of the program's stderr, for failures.
func (p *program) stderr() string {
	b, _ := os.ReadFile(p.log)
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}
