package workload

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// spawned is a client process started by spawn.
type spawned struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// stdout is our own pipe, not cmd.StdoutPipe: Wait closes StdoutPipe's
	// reader as soon as the process exits, which can lose the last lines
	// still unread.
	stdout *os.File
	// done is closed once the process was reaped; err is then Wait's
	// error and exited when Wait returned.
	done   chan struct{}
	err    error
	exited time.Time

	client int
	mu     sync.Mutex
	paused bool
}

// signal sends sig to the process's whole group (its threads, a JVM's or a
// shell's children) and records whether that left it paused.
func (s *spawned) signal(sig syscall.Signal, paused bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := syscall.Kill(-s.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("client-%d: %s: %w", s.client, sig, err)
	}
	s.paused = paused
	return nil
}

// isPaused reports whether the last signal paused the process.
func (s *spawned) isPaused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

// resumeIfPaused continues the process when a pause left it stopped (a
// run that ends during a pause fault).
func (s *spawned) resumeIfPaused() {
	if s.isPaused() {
		s.signal(syscall.SIGCONT, false)
	}
}

// clientProc is a client process of either kind: a worker or a program.
type clientProc interface{ process() *spawned }

// find returns client's process among cs.
func find[T clientProc](cs []T, client int) (*spawned, error) {
	for _, c := range cs {
		if s := c.process(); s.client == client {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no client-%d process", client)
}

// pids are cs's process ids by client index.
func pids[T clientProc](cs []T) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.process().cmd.Process.Pid
	}
	return out
}

// pid is client's process id, 0 when cs has no such client.
func pid[T clientProc](cs []T, client int) int {
	s, err := find(cs, client)
	if err != nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// signal sends sig to client's process group (see spawned.signal).
func signal[T clientProc](cs []T, client int, sig syscall.Signal, paused bool) error {
	s, err := find(cs, client)
	if err != nil {
		return err
	}
	return s.signal(sig, paused)
}

// spawn starts cmd as client's process in its own process group, killed
// with the harness (Pdeathsig), with its stderr in logDir/client-N.log,
// written through wrap when wrap is not nil (to keep a tail of it). start,
// when not nil, is called with cmd.Start to start it (see WorkerSpec.Start).
func spawn(cmd *exec.Cmd, client int, logDir string, wrap func(io.Writer) io.Writer, start func(func() error) error) (*spawned, error) {
	logf, err := os.Create(filepath.Join(logDir, fmt.Sprintf("client-%d.log", client)))
	if err != nil {
		return nil, fmt.Errorf("client log: %w", err)
	}
	cmd.Stderr = logf
	if wrap != nil {
		cmd.Stderr = wrap(logf)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	stdout, w, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd.Stdout = w
	if start != nil {
		err = start(cmd.Start)
	} else {
		err = cmd.Start()
	}
	w.Close()
	if err != nil {
		logf.Close()
		stdout.Close()
		return nil, err
	}
	s := &spawned{cmd: cmd, stdin: stdin, stdout: stdout, done: make(chan struct{}), client: client}
	go func() {
		s.err = cmd.Wait()
		s.exited = time.Now()
		logf.Close()
		close(s.done)
	}()
	return s, nil
}
