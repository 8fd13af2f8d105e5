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
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/locks"
)

// WorkerEnv, set to "1" in a process's environment, turns any binary that
// calls MaybeWorker first thing (bench, chaos, test binaries) into one
// workload client.
const WorkerEnv = "LOCKLAB_WORKER"

// WorkerSpec is everything a client process needs, sent as one JSON line
// on its stdin.
type WorkerSpec struct {
	Client       int               `json:"client"`
	Lock         string            `json:"lock"` // registered name
	Endpoints    locks.Endpoints   `json:"endpoints"`
	TTL          time.Duration     `json:"ttl"`
	Retry        time.Duration     `json:"retry"`
	Prefix       string            `json:"prefix"`
	Options      map[string]string `json:"options"`
	Seed         int64             `json:"seed"`
	Workload     Config            `json:"workload"` // Ops and Rate already this client's share
	ResourceAddr string            `json:"resource_addr"`
	// Start, when set, starts the process: it calls its argument (the
	// exec.Cmd's Start) where the process must be born, e.g. on a thread
	// inside the client's own network namespace (cluster.ClientStarter).
	Start func(start func() error) error `json:"-"`
}

// workerOutput is the worker's last line on stdout.
type workerOutput struct {
	Snapshot Snapshot         `json:"snapshot"`
	Counters map[string]int64 `json:"counters,omitempty"`
	Error    string           `json:"error,omitempty"`
}

// MaybeWorker runs this process as a workload client and exits when
// WorkerEnv is set; otherwise it returns at once.
//
// Protocol on stdin/stdout: the harness writes the WorkerSpec line; the
// worker connects and answers "ready"; the harness writes "start <ns>"
// where ns is the time elapsed since the run's base (so both timelines
// share one origin without comparing wall clocks), the worker answers
// "started", and the harness writes "clock <ns>", half the round trip it
// measured between the two: the worker took "start" late by somewhere
// between 0 and the round trip, so it moves its origin back by half of it
// and carries the other half as its clock uncertainty. Closing stdin stops
// the worker, which then writes its recorder snapshot as one JSON line.
func MaybeWorker() {
	if os.Getenv(WorkerEnv) != "1" {
		return
	}
	code := 0
	if err := worker(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		code = 1
	}
	os.Exit(code)
}

func worker(stdin io.Reader, stdout io.Writer) error {
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	var spec WorkerSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		return fmt.Errorf("decode spec: %w", err)
	}
	ls, ok := locks.Lookup(spec.Lock)
	if !ok {
		return fmt.Errorf("lock %q is not registered in this binary", spec.Lock)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	setupCtx, setupCancel := context.WithTimeout(ctx, 30*time.Second)
	defer setupCancel()
	lc, err := ls.New(setupCtx, locks.Config{
		Endpoints: spec.Endpoints, TTL: spec.TTL, Retry: spec.Retry, Prefix: spec.Prefix,
		Options: spec.Options, Seed: spec.Seed,
	})
	if err != nil {
		fmt.Fprintf(stdout, "error: connect: %v\n", err)
		return err
	}
	defer lc.Close()
	res, err := checker.Dial(setupCtx, spec.ResourceAddr)
	if err != nil {
		fmt.Fprintf(stdout, "error: %v\n", err)
		return err
	}
	defer res.Close()
	fmt.Fprintln(stdout, "ready")

	elapsed, err := readLine(in, "start")
	if err != nil {
		return err
	}
	base := time.Now().Add(-elapsed)
	fmt.Fprintln(stdout, "started")
	half, err := readLine(in, "clock")
	if err != nil {
		return err
	}
	base = base.Add(-half)
	cfg := spec.Workload
	cfg.Base, cfg.ClockUncertainty = base, half
	rec := NewRecorder(base)
	go func() {
		io.Copy(io.Discard, in) // returns at EOF: the harness stopped us
		cancel()
	}()
	RunClient(ctx, cfg, spec.Client, lc, res, NewSchedule(cfg), rec)
	out := workerOutput{Snapshot: rec.Snapshot()}
	if st, ok := lc.(locks.Stats); ok {
		out.Counters = st.Counters()
	}
	return json.NewEncoder(stdout).Encode(out)
}

// readLine reads the harness's next line, "<word> <ns>", and returns ns.
func readLine(in *bufio.Reader, word string) (time.Duration, error) {
	line, err := in.ReadBytes('\n')
	if err != nil {
		return 0, fmt.Errorf("wait for %s: %w", word, err)
	}
	f := strings.Fields(string(line))
	if len(f) != 2 || f[0] != word {
		return 0, fmt.Errorf("unexpected %q, want %s", line, word)
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", word, err)
	}
	return time.Duration(ns), nil
}

// Processes is a set of running client processes.
type Processes struct {
	procs []*proc
}

type proc struct {
	client int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	sp     *spawned // its done closes when Wait returned
	// closeOut closes our end of the stdout pipe (after Kill).
	closeOut func() error
}

func (p *proc) process() *spawned { return p.sp }

// StartProcesses starts one process per spec running exe (normally
// os.Executable()) in worker mode, with stderr logged to logDir/client-N.log,
// and waits until every one is connected. Children die with the harness
// (Pdeathsig) and run in their own process group so a pause stops all of
// their threads.
func StartProcesses(ctx context.Context, exe string, specs []WorkerSpec, logDir string) (*Processes, error) {
	ps := &Processes{}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("client logs: %w", err)
	}
	for _, s := range specs {
		p, err := startProc(exe, s, logDir)
		if err != nil {
			ps.Kill()
			return nil, err
		}
		ps.procs = append(ps.procs, p)
	}
	for _, p := range ps.procs {
		if err := p.waitReady(ctx); err != nil {
			ps.Kill()
			return nil, fmt.Errorf("client-%d: %w", p.client, err)
		}
	}
	return ps, nil
}

func startProc(exe string, s WorkerSpec, logDir string) (*proc, error) {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), WorkerEnv+"=1")
	sp, err := spawn(cmd, s.Client, logDir, nil, s.Start)
	if err != nil {
		return nil, fmt.Errorf("start client-%d: %w", s.Client, err)
	}
	p := &proc{client: s.Client, cmd: cmd, stdin: sp.stdin, out: bufio.NewReader(sp.stdout), sp: sp, closeOut: sp.stdout.Close}
	stdin := sp.stdin
	line, _ := json.Marshal(s)
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		return p, fmt.Errorf("client-%d spec: %w", s.Client, err)
	}
	return p, nil
}

func (p *proc) waitReady(ctx context.Context) error {
	got := make(chan string, 1)
	go func() {
		l, _ := p.out.ReadString('\n')
		got <- strings.TrimSpace(l)
	}()
	select {
	case l := <-got:
		if l != "ready" {
			return fmt.Errorf("worker did not start: %q (see its log)", l)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start lets every client run with the run's origin base, each process
// through the start handshake (see MaybeWorker) at once. It returns the
// largest clock uncertainty handed out (half a handshake's round trip).
func (ps *Processes) Start(base time.Time) (time.Duration, error) {
	errs := make([]error, len(ps.procs))
	halves := make([]time.Duration, len(ps.procs))
	var wg sync.WaitGroup
	for i, p := range ps.procs {
		wg.Go(func() {
			halves[i], errs[i] = p.start(base)
		})
	}
	wg.Wait()
	return slices.Max(append(halves, 0)), errors.Join(errs...)
}

// start is one process's handshake: "start", its "started", "clock".
func (p *proc) start(base time.Time) (time.Duration, error) {
	sent := time.Now()
	if _, err := fmt.Fprintf(p.stdin, "start %d\n", sent.Sub(base).Nanoseconds()); err != nil {
		return 0, fmt.Errorf("client-%d: %w", p.client, err)
	}
	l, err := p.out.ReadString('\n')
	if strings.TrimSpace(l) != "started" {
		return 0, fmt.Errorf("client-%d: answered %q to start, want started (see its log): %v", p.client, l, err)
	}
	half := time.Since(sent) / 2
	if _, err := fmt.Fprintf(p.stdin, "clock %d\n", half.Nanoseconds()); err != nil {
		return 0, fmt.Errorf("client-%d: %w", p.client, err)
	}
	return half, nil
}

// Pids returns the process ids by client index.
func (ps *Processes) Pids() []int { return pids(ps.procs) }

// Pause stops client's whole process (SIGSTOP to its group): its renewal
// goroutines and library keepalives freeze too, like a long GC pause.
func (ps *Processes) Pause(client int) error { return signal(ps.procs, client, syscall.SIGSTOP, true) }

// Pid is client's process id, 0 when there is no such client (for a
// fault's evidence that the process stopped).
func (ps *Processes) Pid(client int) int { return pid(ps.procs, client) }

// Resume continues a paused client (SIGCONT).
func (ps *Processes) Resume(client int) error {
	return signal(ps.procs, client, syscall.SIGCONT, false)
}

// Wait blocks until every client exited on its own (an ops budget spent)
// or ctx ends.
func (ps *Processes) Wait(ctx context.Context) error {
	for _, p := range ps.procs {
		select {
		case <-p.sp.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Stop resumes paused clients, tells every client to stop, and merges
// each one's measurements into rec. A client that does not finish within
// grace is killed and reported. Counters of the lock clients are summed.
func (ps *Processes) Stop(grace time.Duration, rec *Recorder) (map[string]int64, error) {
	for _, p := range ps.procs {
		p.sp.resumeIfPaused()
		p.stdin.Close()
	}
	type outcome struct {
		p   *proc
		out workerOutput
		err error
	}
	results := make(chan outcome, len(ps.procs))
	for _, p := range ps.procs {
		go func() {
			var o workerOutput
			line, err := p.out.ReadBytes('\n')
			if err == nil {
				err = json.Unmarshal(line, &o)
			}
			results <- outcome{p: p, out: o, err: err}
		}()
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	var counters map[string]int64
	var errs []error
	for range ps.procs {
		select {
		case o := <-results:
			if o.err != nil {
				errs = append(errs, fmt.Errorf("client-%d: no result: %w", o.p.client, o.err))
				continue
			}
			rec.Merge(o.out.Snapshot)
			for k, v := range o.out.Counters {
				if counters == nil {
					counters = map[string]int64{}
				}
				counters[k] += v
			}
		case <-timer.C:
			ps.Kill()
			errs = append(errs, fmt.Errorf("clients did not stop within %s: killed", grace))
			return counters, errors.Join(errs...)
		}
	}
	ps.Kill()
	return counters, errors.Join(errs...)
}

// Kill kills every client process group and waits for them.
func (ps *Processes) Kill() {
	for _, p := range ps.procs {
		select {
		case <-p.sp.done:
			continue
		default:
		}
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.sp.done
	}
	for _, p := range ps.procs {
		if p.closeOut != nil {
			p.closeOut()
		}
	}
}
