package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/vishvananda/netlink"
)

// The harness of a netns run lives in a namespace of the run. Every
// socket the harness opens — its readiness probes, its fault probes, the
// proxies of latency faults, the shared resource that worker processes
// reach over loopback, and the connections of in-process clients — must
// be in a namespace that reaches the servers' 198.18.0.0/15 addresses,
// and nothing may be added to the machine's own namespace. A Go process
// cannot move all its threads into another namespace, so the harness
// starts itself again inside a fresh namespace (Run) from an OS
// thread that entered it: the child and everything it starts are born
// there. Each cluster then joins that namespace to its bridge with one
// veth link.

// NetnsHarnessEnv is set, to the name of its namespace, in a harness that
// Run started.
const NetnsHarnessEnv = "LOCKLAB_NETNS_HARNESS"

// InHarness reports whether this process is a harness that
// Run started inside a namespace of the run (and still lives
// there).
func InHarness() bool {
	name := os.Getenv(NetnsHarnessEnv)
	return name != "" && namedNetnsInode(name) != 0 && namedNetnsInode(name) == netnsInode("self")
}

// Available reports why provider netns cannot run here, or nil: it
// needs root and a kernel that creates network namespaces with nftables.
func Available() error {
	if os.Geteuid() != 0 {
		return ErrNeedsRoot
	}
	name := netnsName(netnsID(), "probe")
	h, err := newNamedNetns(name)
	if err != nil {
		return fmt.Errorf("cluster: provider netns: %w", err)
	}
	h.Close()
	defer removeNetns(name)
	if err := nftProbe(name); err != nil {
		return fmt.Errorf("cluster: provider netns: nftables: %w (the kernel needs nf_tables)", err)
	}
	return nil
}

// Run runs argv (usually this program again, os.Args) inside a new
// network namespace of the run, with NetnsHarnessEnv set, its standard
// files those of this process, and returns its exit code once it ended.
// The namespace has only loopback until a cluster joins it to its
// bridge. The child runs in its own process group: when ctx ends (a first
// Ctrl-C) it gets one SIGINT, so it stops its servers and keeps partial
// results as a run in the machine's namespace would; it dies with this
// process (SIGKILL). Afterwards every process left in the namespace is
// killed and the namespace removed.
func Run(ctx context.Context, argv []string, env []string) (int, error) {
	return RunWith(ctx, argv, env, nil)
}

// RunWith is Run with the child's stdout and stderr going to
// out (nil: this process's).
func RunWith(ctx context.Context, argv []string, env []string, out *os.File) (int, error) {
	if os.Geteuid() != 0 {
		return 0, ErrNeedsRoot
	}
	name := netnsName(netnsID(), "harness")
	ns, err := newNamedNetns(name)
	if err != nil {
		return 0, fmt.Errorf("cluster: provider netns: %w", err)
	}
	defer removeNetns(name)
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return 0, fmt.Errorf("cluster: netns %s: %w", name, err)
	}
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	h.Close()
	if err != nil {
		return 0, fmt.Errorf("cluster: netns %s: loopback up: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), env...), NetnsHarnessEnv+"="+name)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if out != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, out, out
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := inNetns(ns, cmd.Start); err != nil {
		return 0, fmt.Errorf("cluster: start harness in netns %s: %w", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Signal(os.Interrupt)
		werr = <-done
	}
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return 0, nil
	case errors.As(werr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, fmt.Errorf("cluster: harness in netns %s: %w", name, werr)
}
