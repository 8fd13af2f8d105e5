package workload

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	s := &spawned{cmd: cmd, stdin: stdin, stdout: stdout, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		s.exited = time.Now()
		logf.Close()
		close(s.done)
	}()
	return s, nil
}
