package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/checker"
)

// Programs is a set of running client programs (the client protocol).
// Unlike Go worker processes they keep no measurements of their own: the
// harness serves each program's messages, calls the resource and records
// into the run's Recorder itself, so a program killed at the end loses
// nothing.
type Programs struct {
	progs []*program

	stopCtx  context.Context // ends when the run stops handing out work
	stopRun  context.CancelFunc
	done     chan struct{} // closed when every program's loop ended
	failOnce sync.Once
	failed   chan struct{} // closed at the first protocol or program failure
	errMu    sync.Mutex
	errs     []error
}

// StartPrograms starts one program per spec (stderr logged to
// logDir/client-N.log) and waits until every one said ready: a JVM's or
// an interpreter's start is outside every measured latency. On error
// every program started is killed.
func StartPrograms(ctx context.Context, specs []ProgramSpec, logDir string) (*Programs, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("client logs: %w", err)
	}
	ps := &Programs{done: make(chan struct{}), failed: make(chan struct{})}
	ps.stopCtx, ps.stopRun = context.WithCancel(context.Background())
	for _, s := range specs {
		p, err := startProgram(s, logDir)
		if p != nil {
			ps.progs = append(ps.progs, p)
		}
		if err != nil {
			ps.Kill()
			return nil, err
		}
	}
	for _, p := range ps.progs {
		if err := p.waitReady(ctx); err != nil {
			ps.Kill()
			return nil, err
		}
	}
	return ps, nil
}

// Libraries returns what each program said it runs ("redis-py 4.3.4"), by
// client index; "" when it did not say.
func (ps *Programs) Libraries() []string {
	out := make([]string, len(ps.progs))
	for i, p := range ps.progs {
		out[i] = p.library
	}
	return out
}

// Versions returns the protocol version each program said it speaks in
// its ready line (1 when it said none), by client index.
func (ps *Programs) Versions() []int {
	out := make([]int, len(ps.progs))
	for i, p := range ps.progs {
		out[i] = p.version
	}
	return out
}

// Run lets every program start working: it serves their messages against
// res, recording into rec, until Stop. cfg is the whole run's workload
// (its Ops, Rate, Keys and Seed shared by the programs).
func (ps *Programs) Run(cfg Config, res checker.Resource, rec *Recorder) {
	cfg = cfg.withDefaults()
	sched := NewSchedule(cfg)
	var wg sync.WaitGroup
	for _, p := range ps.progs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &session{p: p, cfg: cfg, res: res, rec: rec, sched: sched, stop: ps.stopCtx}
			if err := s.serve(); err != nil {
				ps.fail(err)
			}
		}()
	}
	go func() {
		wg.Wait()
		close(ps.done)
	}()
}

func (ps *Programs) fail(err error) {
	ps.errMu.Lock()
	ps.errs = append(ps.errs, err)
	ps.errMu.Unlock()
	ps.failOnce.Do(func() { close(ps.failed) })
}

// Failed is closed when a program failed (exited early, spoke the protocol
// wrongly, hung); Err says how.
func (ps *Programs) Failed() <-chan struct{} { return ps.failed }

// Done is closed when every program finished (an ops budget spent, or
// after Stop).
func (ps *Programs) Done() <-chan struct{} { return ps.done }

// Err returns every failure so far, joined.
func (ps *Programs) Err() error {
	ps.errMu.Lock()
	defer ps.errMu.Unlock()
	return errors.Join(ps.errs...)
}

// Stop ends the run: no more work is handed out; a program inside its
// critical section or releasing gets up to grace to finish; one waiting
// in Acquire (its acquisition would no longer count) or still running
// after stop (a library's slow teardown) is killed after stopWait. Every program is gone when Stop returns. It returns Err.
func (ps *Programs) Stop(grace time.Duration) error {
	for _, p := range ps.progs {
		p.sp.resumeIfPaused()
	}
	ps.stopRun()
	const stopWait = 2 * time.Second
	select {
	case <-ps.done:
	case <-time.After(stopWait):
		for _, p := range ps.progs {
			if ph := phase(p.phase.Load()); ph == phAcquiring || ph == phIdle || ph == phStopping {
				p.kill()
			}
		}
		select {
		case <-ps.done:
		case <-time.After(grace):
			var stuck []error
			for _, p := range ps.progs {
				if ph := phase(p.phase.Load()); ph != phFinished {
					stuck = append(stuck, p.errorf("did not stop within %s (%s): killed", grace+stopWait, ph))
				}
			}
			ps.Kill()
			for _, err := range stuck {
				ps.fail(err)
			}
		}
	}
	ps.Kill()
	return ps.Err()
}

// StopWork hands out no more work: each program gets stop at its next
// next, and nothing is killed (Stop kills stragglers; bench client-check
// times a program's own exit instead).
func (ps *Programs) StopWork() { ps.stopRun() }

// Exits says how each program ended, by client index, waiting up to wait
// for those not yet reaped.
func (ps *Programs) Exits(wait time.Duration) []ProgramExit {
	deadline := time.After(wait)
	out := make([]ProgramExit, len(ps.progs))
	for i, p := range ps.progs {
		out[i] = p.exit(deadline)
	}
	return out
}

// Kill kills every program and waits for them.
func (ps *Programs) Kill() {
	ps.stopRun()
	for _, p := range ps.progs {
		p.stdin.Close()
	}
	for _, p := range ps.progs {
		select {
		case <-p.sp.done:
		case <-time.After(500 * time.Millisecond):
		}
		p.kill()
	}
}

// Pids returns the programs' process ids by client index.
func (ps *Programs) Pids() []int { return pids(ps.progs) }

// Pause stops client's whole process group (SIGSTOP): the library's
// heartbeats and session threads freeze too.
func (ps *Programs) Pause(client int) error { return signal(ps.progs, client, syscall.SIGSTOP, true) }

// Pid is client's process id, 0 when there is no such client (for a
// fault's evidence that the process stopped).
func (ps *Programs) Pid(client int) int { return pid(ps.progs, client) }

// Resume continues a paused client (SIGCONT).
func (ps *Programs) Resume(client int) error { return signal(ps.progs, client, syscall.SIGCONT, false) }
