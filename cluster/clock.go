package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/locklab/locklab/clockshim"
)

// Per-process clocks (package clockshim): with providers local and netns,
// every Redis server, Sentinel and ZooKeeper member (every node of a kind
// clock faults act on) runs with the clock shim preloaded and a clock file
// of its own, holding the real clock until a clock fault sets it
// (Node.SetClock). The file outlives restarts of its node, as a machine's
// wrong clock outlives a restart of the server on it; Close removes it with
// the data dirs. etcd is a Go program, which reads the clock from the vDSO
// without calling glibc: a preload cannot reach it (its row's NoClock). A
// provider whose servers run without the shim says why in its traits
// (Traits.NoClock: the docker provider's images do not carry it).

// clockable reports whether the clock of a node of kind can be set: its
// row lists the clock faults among its Faults (Redis's, ZooKeeper's).
func clockable(kind string) bool {
	return slices.Contains(KindsActedOnBy("clock-jump"), kind)
}

// clockEnv is what n's command adds to its environment to run with its
// own clock: nothing for kinds and providers without one, or when the
// library cannot be found or built (Node.SetClock then says why). It
// creates n's clock file on the first launch.
func (n *Node) clockEnv() []string {
	if !clockable(n.Kind) || !n.c.Traits().Clock {
		return nil
	}
	lib, err := clockshim.Library()
	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		if n.clockErr == nil {
			n.c.log.Warn("clock shim unavailable: clock faults will fail", "node", n.Name, "err", err)
		}
		n.clockErr = err
		return nil
	}
	if n.clock == nil {
		dir := filepath.Join(n.c.dataDir, "clock")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			n.clockErr = fmt.Errorf("clock file: %w", err)
			return nil
		}
		f, err := clockshim.Create(filepath.Join(dir, n.Name))
		if err != nil {
			n.clockErr = err
			return nil
		}
		n.clock, n.clockErr = f, nil
	}
	return clockshim.Env(lib, n.clock.Path())
}

// SetClock gives the node's server the wall clock s from now on (the real
// one: clockshim.State{}). It fails with ErrUnsupported for a node whose
// process runs without the clock shim: etcd, provider docker or external,
// or the library missing (the error says which).
func (n *Node) SetClock(s clockshim.State) error {
	f, err := n.clockFile()
	if err != nil {
		return err
	}
	f.Set(s)
	n.c.log.Info("node clock set", "node", n.Name, "clock", s.String())
	return nil
}

// Clock is the wall clock the node's server runs on, as its clock file
// holds it; ok is false for a node without one.
func (n *Node) Clock() (s clockshim.State, ok bool) {
	f, err := n.clockFile()
	if err != nil {
		return s, false
	}
	return f.Read(), true
}

func (n *Node) clockFile() (*clockshim.File, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.clock != nil:
		return n.clock, nil
	case !clockable(n.Kind):
		why := "a " + n.Kind + " server's clock is out of the clock shim's reach"
		if b, ok := BackendOfKind(n.Kind); ok && b.NoClock != "" {
			why = b.NoClock
		}
		return nil, fmt.Errorf("clock of %s: %s: %w", n.Name, why, ErrUnsupported)
	case !n.c.Traits().Clock:
		return nil, fmt.Errorf("clock of %s: provider %s runs servers without the clock shim (%s): %w",
			n.Name, n.c.spec.Provider, n.c.Traits().NoClock, ErrUnsupported)
	case n.clockErr != nil:
		return nil, fmt.Errorf("clock of %s: %v: %w", n.Name, n.clockErr, ErrUnsupported)
	}
	return nil, fmt.Errorf("clock of %s: not started with the clock shim: %w", n.Name, ErrUnsupported)
}

// closeClock unmaps the node's clock file, setting the real clock first.
func (n *Node) closeClock() error {
	n.mu.Lock()
	f := n.clock
	n.clock = nil
	n.mu.Unlock()
	if f == nil {
		return nil
	}
	return f.Close()
}
