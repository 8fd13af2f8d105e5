package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/locklab/locklab/locks"
)

// ProgramSpec is one client run by an external program speaking the
// client protocol (docs/client-protocol.md): any language, any library.
type ProgramSpec struct {
	Client  int
	Name    string   // the lock's label, for messages ("redis-py")
	Command []string // argv; Command[0] is looked up in PATH
	Env     []string // added to the harness's environment (credentials)
	Config  ProgramConfig
	// Trace, when set, sees every protocol line as it goes: fromProgram
	// for the program's stdout, else what the harness wrote to its stdin
	// (bench client-check reads the conversation through it). It is called
	// from the program's reader and from the writers, one line at a time.
	Trace func(client int, fromProgram bool, line []byte)
	// Start, when set, starts the program as WorkerSpec.Start does.
	Start func(start func() error) error
}

// ProgramConfig is the first line the harness writes to a program's stdin.
// Durations are milliseconds (floats), so no language needs Go's duration
// syntax. Credentials are not in it: they come from the environment
// (LOCKLAB_*), as for the harness itself.
type ProgramConfig struct {
	Op                string            `json:"op"`      // "config"
	Version           int               `json:"version"` // ProtocolVersion
	Client            int               `json:"client"`
	Lock              string            `json:"lock"`
	Backend           string            `json:"backend"`
	Endpoints         ProgramEndpoints  `json:"endpoints"`
	TTLMs             float64           `json:"ttl_ms"`
	RetryMs           float64           `json:"retry_ms"`
	Prefix            string            `json:"prefix"`
	Options           map[string]string `json:"options"`
	Seed              int64             `json:"seed"`
	CriticalSectionMs float64           `json:"critical_section_ms"`
	AcquireTimeoutMs  float64           `json:"acquire_timeout_ms"`
	ReleaseTimeoutMs  float64           `json:"release_timeout_ms"`
}

// ProtocolVersion is the client protocol version the harness speaks. A
// program says the version it speaks in its ready line; none means 1.
// Version 2 added renewed, session_ms and last_ok_ms_ago: the harness
// reads them from any program, so a version-1 program keeps working.
const ProtocolVersion = 2

// ProgramEndpoints are the addresses the program must dial: its own
// proxied addresses, so client-link faults act on it.
type ProgramEndpoints struct {
	Redis       []string `json:"redis,omitempty"`
	Sentinels   []string `json:"sentinels,omitempty"`
	MasterNames []string `json:"master_names,omitempty"`
	// Redirect maps an address a server reports (a Sentinel's master, a
	// ZooKeeper or etcd member list) to the program's proxied address for
	// it, as locks.Endpoints.Redirect does for Go clients.
	Redirect map[string]string `json:"redirect,omitempty"`
	// Table holds the client addresses of the table backends' servers
	// (zookeeper, etcd, postgres, mariadb, nats) by backend name; each is
	// a key of its own on the wire ("zookeeper": [...]) beside the fields
	// above.
	Table map[string][]string `json:"-"`
}

// MarshalJSON writes the fields and each table backend's addresses under
// the backend's name.
func (e ProgramEndpoints) MarshalJSON() ([]byte, error) {
	type plain ProgramEndpoints
	b, err := json.Marshal(plain(e))
	if err != nil || len(e.Table) == 0 {
		return b, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for name, addrs := range e.Table {
		if _, taken := m[name]; taken || len(addrs) == 0 {
			continue
		}
		if m[name], err = json.Marshal(addrs); err != nil {
			return nil, err
		}
	}
	return json.Marshal(m)
}

// ProgramEndpointsOf are the addresses of e a program receives.
func ProgramEndpointsOf(e locks.Endpoints) ProgramEndpoints {
	return ProgramEndpoints{Redis: e.Redis, Sentinels: e.Sentinels, MasterNames: e.MasterNames,
		Redirect: e.Redirect, Table: e.Table}
}

// program is one running client program.
type program struct {
	client  int
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan progLine // stdout lines; closed at EOF
	sp      *spawned      // its done closes when the process was reaped
	stderr  *stderrTail
	library string // what the program said it runs, from "ready"
	trace   func(client int, fromProgram bool, line []byte)
	started time.Time
	spoke   atomic.Bool  // a line came on stdout
	version int          // the protocol version from "ready" (1 when absent)
	phase   atomic.Int32 // a phase, set by its session

	drainOnce sync.Once
	mu        sync.Mutex
	killed    bool
	stopSent  time.Time  // when the harness wrote stop
	wmu       sync.Mutex // serializes writes to stdin
}

// startProgram starts s, logs its stderr to logDir/client-N.log and sends
// its configuration line.
func startProgram(s ProgramSpec, logDir string) (*program, error) {
	if len(s.Command) == 0 {
		return nil, fmt.Errorf("client-%d (%s): empty command", s.Client, s.Name)
	}
	p := &program{client: s.Client, name: s.Name, lines: make(chan progLine, 16), stderr: &stderrTail{}, trace: s.Trace}
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	cmd.Env = append(os.Environ(), s.Env...)
	sp, err := spawn(cmd, s.Client, logDir, func(log io.Writer) io.Writer { p.stderr.w = log; return p.stderr }, s.Start)
	if err != nil {
		return nil, fmt.Errorf("client-%d (%s): start %q: %w", s.Client, s.Name, s.Command[0], err)
	}
	p.cmd, p.stdin, p.sp, p.started = cmd, sp.stdin, sp, time.Now()
	go p.read(sp.stdout)
	s.Config.Op, s.Config.Version = "config", ProtocolVersion
	p.send(s.Config) // a program that died already shows in waitReady, with its stderr
	return p, nil
}

func (p *program) read(r io.ReadCloser) {
	defer r.Close()
	defer close(p.lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l := append([]byte(nil), sc.Bytes()...)
		if len(strings.TrimSpace(string(l))) == 0 {
			continue
		}
		p.spoke.Store(true)
		if p.trace != nil {
			p.trace(p.client, true, l)
		}
		p.lines <- progLine{b: l, at: time.Now()}
	}
}

// progLine is one line of a program's stdout and when the harness read
// it: the program wrote it no later (sent_us counts back from there).
type progLine struct {
	b  []byte
	at time.Time
}

// send writes v as one JSON line.
func (p *program) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.trace != nil {
		p.trace(p.client, false, b)
	}
	_, err = p.stdin.Write(append(b, '\n'))
	return err
}

// errorf is an error naming the client and ending with its stderr tail.
func (p *program) errorf(format string, args ...any) error {
	msg := fmt.Sprintf("client-%d (%s): %s", p.client, p.name, fmt.Sprintf(format, args...))
	if t := p.stderr.String(); t != "" {
		msg += "; stderr: " + t
	}
	return errors.New(msg)
}

// exitStatus describes how the process ended, once it has.
func (p *program) exitStatus() string {
	select {
	case <-p.sp.done:
	case <-time.After(2 * time.Second):
		return "still running"
	}
	if p.sp.err == nil {
		return "exit status 0"
	}
	return p.sp.err.Error()
}

// waitReady waits for the program's ready message.
func (p *program) waitReady(ctx context.Context) error {
	select {
	case pl, ok := <-p.lines:
		if !ok {
			return p.errorf("exited before ready (%s)", p.exitStatus())
		}
		l := pl.b
		m, err := decode(l)
		if err != nil {
			return p.errorf("%v", err)
		}
		if m.op != "ready" {
			return p.errorf("said %q before ready, want {\"op\":\"ready\"}", l)
		}
		p.library, _ = m.str("library")
		p.version = 1
		if _, ok := m.fields["version"]; ok {
			v, err := m.int("version")
			if err != nil {
				return p.errorf("%v", err)
			}
			if v < 1 || v > ProtocolVersion {
				return p.errorf("speaks protocol version %d; this harness speaks versions 1 to %d", v, ProtocolVersion)
			}
			p.version = int(v)
		}
		return nil
	case <-ctx.Done():
		if !p.spoke.Load() && p.alive() {
			return p.errorf("no ready message: %v: no line on stdout after %s: flush stdout after every line (Python: print(..., flush=True))",
				ctx.Err(), time.Since(p.started).Round(time.Second))
		}
		return p.errorf("no ready message: %v", ctx.Err())
	}
}

// alive reports whether the process has not ended yet.
func (p *program) alive() bool {
	select {
	case <-p.sp.done:
		return false
	default:
		return true
	}
}

// ProgramExit is how one program ended, for bench client-check.
type ProgramExit struct {
	Client int
	// StopSent is when the harness wrote stop (zero: never).
	StopSent time.Time
	// Exited is when the process ended (zero: still running).
	Exited time.Time
	// Status is "exit status 0", "signal: killed", ...
	Status string
	// Killed is true when the harness killed it.
	Killed bool
	// Stderr is the tail of its stderr on one line.
	Stderr string
}

// exit says how the program ended, waiting until deadline for it to be
// reaped: its stdout closes (and its session ends) a moment before that.
func (p *program) exit(deadline <-chan time.Time) ProgramExit {
	reaped := true
	select {
	case <-p.sp.done:
	case <-deadline:
		reaped = false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := ProgramExit{Client: p.client, StopSent: p.stopSent, Killed: p.killed, Stderr: p.stderr.String()}
	if reaped {
		e.Exited, e.Status = p.sp.exited, "exit status 0"
		if p.sp.err != nil {
			e.Status = p.sp.err.Error()
		}
	}
	return e
}

func (p *program) process() *spawned { return p.sp }

// kill kills the program's process group and waits until it was reaped.
func (p *program) kill() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	select {
	case <-p.sp.done:
	default:
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.sp.done
	}
	// Its children may outlive it in the group (a JVM's, a shell's).
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.drainOnce.Do(func() {
		go func() {
			for range p.lines { // unblock the reader until the pipe's EOF
			}
		}()
	})
}

func (p *program) wasKilled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed
}

// tail writes to w and keeps the last bytes written, for error messages.
type stderrTail struct {
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

const tailMax = 600

func (t *stderrTail) Write(b []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailMax {
		t.buf = t.buf[len(t.buf)-tailMax:]
	}
	t.mu.Unlock()
	return t.w.Write(b)
}

// String is the tail on one line.
func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "?"))
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " | ")), " ")
}
