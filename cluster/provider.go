package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Provider runs the servers of a cluster's nodes: the seam where a
// provider in a package of its own (cluster/providers/docker,
// cluster/providers/netns) plugs in, registered with RegisterProvider.
// Everything provider-specific about starting a server and acting on it
// lives behind Provider and Process. Node names and the plan of nodes and
// links (PlanOf) are the same under every provider; each backend's builder
// is composed with the provider's Fabric, which says how peer links are
// wired (the addresses proxies listen on and dial); provider external has
// no peer links at all.
type Provider interface {
	// Launch starts the server described by cmd for node n and returns once
	// the server was started (not when it is ready). Output goes to
	// n.LogPath().
	Launch(ctx context.Context, n *Node, cmd Command) (Process, error)
	// Close releases what the provider holds for the cluster (the docker
	// provider's containers and network). Cluster.Close calls it once, after
	// every server ended.
	Close(ctx context.Context) error
	// Fabric places nodes on the network and wires their peers
	// (fabric.go).
	Fabric
	// RunID is the run's id as the provider labels what it made ("":
	// Spec.RunID).
	RunID() string
	// LinkAdded tells the provider of a link made after its start (docker:
	// its proxies then follow the containers' listening sockets).
	LinkAdded(l *Link)
	// SyncListening brings every link's proxies up to date with their
	// servers' listening state at once; false where the harness reads it
	// itself (local), or nothing listens behind a proxy (netns).
	SyncListening() bool
}

// Process is one running server. Every method is safe for concurrent use.
type Process interface {
	Pid() int
	Pause() error     // freeze every process of the server (SIGSTOP)
	Resume() error    // unfreeze (SIGCONT)
	Terminate() error // ask to exit (SIGTERM the group; also resumes it)
	Kill() error      // end at once (SIGKILL the group)
	// Shutdown ends the server for good and leaves no orphan behind; it
	// may take a little longer than Kill.
	Shutdown() error
	// Done is closed once the server exited and was reaped; ExitErr is
	// then its exit status.
	Done() <-chan struct{}
	ExitErr() error
}

// localProvider runs servers as child processes of the harness, on
// 127.0.0.1 (fabric.go). c is the cluster whose peer links it adds.
type localProvider struct{ c *Cluster }

func (localProvider) Close(context.Context) error { return nil }
func (localProvider) RunID() string               { return "" }
func (localProvider) LinkAdded(*Link)             {}
func (localProvider) SyncListening() bool         { return false }

func (localProvider) Launch(ctx context.Context, n *Node, c Command) (Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	fmt.Fprintf(f, "\n=== locklab %s: start %s\n", time.Now().Format(time.RFC3339Nano), c)
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir = c.Dir
	if n.LossyDisk() {
		// Never chdir into a lossy (FUSE) mount between fork and exec: the
		// child then waits on this process's FUSE server while this
		// process waits on the child's exec (a deadlock seen in the
		// atlas). Every server takes its data dir as an absolute path.
		cmd.Dir = filepath.Dir(c.Dir)
	}
	cmd.Env = append(os.Environ(), c.Env...)
	// A *os.File as Stdout/Stderr is handed to the child directly: no copy
	// goroutine, so Wait returns as soon as the server exits even when a
	// grandchild (a Redis fork) still holds the file.
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // own group: signals reach forks and threads alike
		Pdeathsig: syscall.SIGKILL, // die with the harness, even on its SIGKILL
	}
	if c.User != "" {
		cred, err := credentialOf(c.User)
		if err != nil {
			f.Close()
			return nil, err
		}
		cmd.SysProcAttr.Credential = cred
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", c.Path, err)
	}
	p := &localProcess{cmd: cmd, doneCh: make(chan struct{})}
	// PID 1 on these machines does not reap orphans: every process is
	// waited for by exactly this goroutine.
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		fmt.Fprintf(f, "=== locklab %s: exited: %v\n", time.Now().Format(time.RFC3339Nano), exitString(err))
		f.Close()
		close(p.doneCh)
	}()
	return p, nil
}

func exitString(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

type localProcess struct {
	cmd    *exec.Cmd
	doneCh chan struct{}
	mu     sync.Mutex
	err    error
}

func (p *localProcess) Pid() int { return p.cmd.Process.Pid }

// signal signals the whole process group (the group id is the server's pid,
// thanks to Setpgid). After the server was reaped its pid may be reused, but
// only as a group id if the new process also made its own group with that
// number, which nothing here does; still, skip signals once done.
func (p *localProcess) signal(sig syscall.Signal) error {
	select {
	case <-p.doneCh:
		return nil
	default:
	}
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Pause stops the group, then every other descendant: a server's child may
// lead a group of its own (each PostgreSQL backend calls setsid), and a
// stopped server forks no new one.
func (p *localProcess) Pause() error {
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	signalAll(descendants(p.Pid()), syscall.SIGSTOP)
	return nil
}

func (p *localProcess) Resume() error {
	signalAll(descendants(p.Pid()), syscall.SIGCONT)
	return p.signal(syscall.SIGCONT)
}

// Kill kills the group and resumes the other descendants, which a pause
// stopped: they then see their parent die and exit on their own.
func (p *localProcess) Kill() error {
	others := descendants(p.Pid())
	err := p.signal(syscall.SIGKILL)
	signalAll(others, syscall.SIGCONT)
	return err
}

// descendants lists the processes below pid outside its process group.
func descendants(pid int) []int {
	parent, group := map[int]int{}, map[int]int{}
	pids(func(q int) bool {
		parent[q], group[q], _ = procStat(q)
		return false
	})
	var out []int
	for q := range parent {
		a := parent[q]
		for a > 1 && a != pid {
			a = parent[a]
		}
		if a == pid && group[q] != pid {
			out = append(out, q)
		}
	}
	return out
}

func signalAll(pids []int, sig syscall.Signal) {
	for _, q := range pids {
		_ = syscall.Kill(q, sig) // gone already: nothing to do
	}
}

// Shutdown kills the server's helper processes (Redis forks for AOF
// rewrites and replica syncs) first and gives the server a moment to reap
// them before killing the group: a fork killed together with its parent is
// orphaned to PID 1, which on these machines reaps late or never.
func (p *localProcess) Shutdown() error {
	pid := p.Pid()
	_ = p.Resume() // a stopped server cannot reap
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		others := groupMembers(pid)
		if len(others) == 0 || time.Now().After(deadline) {
			break
		}
		for _, o := range others {
			_ = syscall.Kill(o, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond) // poll: the server reaps on its own schedule
	}
	return p.Kill()
}

// groupMembers lists the live or unreaped processes of process group pgid
// other than its leader.
func groupMembers(pgid int) []int {
	return pids(func(pid int) bool {
		_, g, ok := procStat(pid)
		return ok && pid != pgid && g == pgid
	})
}

// procStat is the parent and the process group of pid, from /proc.
func procStat(pid int) (ppid, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if err != nil || i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:]) // state ppid pgrp ...
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	return ppid, pgrp, err1 == nil && err2 == nil
}

// pids lists the processes in /proc that keep accepts.
func pids(keep func(pid int) bool) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && keep(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func (p *localProcess) Terminate() error {
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	// A stopped process keeps SIGTERM pending until it runs again.
	return p.Resume()
}

func (p *localProcess) Done() <-chan struct{} { return p.doneCh }

func (p *localProcess) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// credentialOf is the uid and gid of the system user name, for servers
// that refuse to run as root.
func credentialOf(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("run as %s: %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("run as %s: %w", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
