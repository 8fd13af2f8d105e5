package netns

import (
	"errors"
	"fmt"
	"github.com/locklab/locklab/cluster"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netns"
)

// Network namespaces of provider netns: creating, entering and finding
// them. Every namespace a run creates is named Prefix + the pid of
// the harness that created it + "-" + a random id + "-" + a role (a node
// name, "br" for the bridge, "harness" for the harness itself), and is
// bound under /run/netns like `ip netns add` does, so `ip netns list`
// shows it and Cleanup finds what a killed run left.

// Prefix starts the name of every network namespace locklab creates.
const Prefix = "locklab-"

// ErrNeedsRoot means provider netns was asked for by a process that
// cannot create network namespaces.
var ErrNeedsRoot = errors.New("cluster: provider netns needs root (network namespaces, veth links and nftables rules); run as root or use provider local")

// netnsName is the name of a namespace of run id (its harness's pid and
// random part) for role.
func netnsName(id, role string) string { return Prefix + id + "-" + role }

// netnsID is a fresh run id for namespace names: this process's pid and a
// random part.
func netnsID() string {
	r := cluster.NewRunID("")
	return strconv.Itoa(os.Getpid()) + "-" + r
}

// newNamedNetns creates the named network namespace (bound under
// /run/netns) and returns a handle to it, leaving the calling thread in
// its own namespace.
func newNamedNetns(name string) (netns.NsHandle, error) {
	var h netns.NsHandle
	err := onLockedThread(func() (keep bool, err error) {
		orig, err := netns.Get()
		if err != nil {
			return false, err
		}
		defer orig.Close()
		h, err = netns.NewNamed(name) // switches this thread into it
		if err != nil {
			// NewNamed may or may not have switched: go back either way.
			return netns.Set(orig) == nil, fmt.Errorf("create netns %s: %w", name, err)
		}
		if err := netns.Set(orig); err != nil {
			return false, fmt.Errorf("leave netns %s: %w", name, err)
		}
		return true, nil
	})
	return h, err
}

// inNetns runs fn on an OS thread that was moved into ns, and moves it
// back after: a process started by fn (exec.Cmd.Start) is born in ns, and
// so is a socket fn opens. A thread that cannot be moved back is never
// reused (Go ends it with its goroutine).
func inNetns(ns netns.NsHandle, fn func() error) error {
	var ferr error
	err := onLockedThread(func() (bool, error) {
		orig, err := netns.Get()
		if err != nil {
			return false, err
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			return true, fmt.Errorf("enter netns: %w", err)
		}
		ferr = fn()
		if err := netns.Set(orig); err != nil {
			return false, fmt.Errorf("leave netns: %w", err)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return ferr
}

// onLockedThread runs fn on its own locked OS thread. When fn says the
// thread cannot be kept (keep false: its namespace may be wrong), the
// thread stays locked and so ends with the goroutine.
func onLockedThread(fn func() (keep bool, err error)) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		keep, err := fn()
		if keep {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// netnsInode is the inode of a process's network namespace
// (/proc/PID/ns/net), "self" for this process; 0 when unreadable.
func netnsInode(pid string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+pid+"/ns/net", &st); err != nil {
		return 0
	}
	return st.Ino
}

// namedNetnsInode is the inode of the namespace bound as /run/netns/name.
func namedNetnsInode(name string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat("/run/netns/"+name, &st); err != nil {
		return 0
	}
	return st.Ino
}

// netnsProcesses lists the pids of processes living in the network
// namespace with inode ino.
func netnsProcesses(ino uint64) []int {
	if ino == 0 {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && pid != os.Getpid() && netnsInode(e.Name()) == ino {
			out = append(out, pid)
		}
	}
	return out
}

// removeNetns kills every process left in the named namespace and deletes
// it. A namespace that is already gone is no error.
func removeNetns(name string) error {
	ino := namedNetnsInode(name)
	if ino == 0 {
		return nil
	}
	for _, pid := range netnsProcesses(ino) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete netns %s: %w", name, err)
	}
	return nil
}

// listNetns returns the names under /run/netns that start with prefix.
func listNetns(prefix string) ([]string, error) {
	ents, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
