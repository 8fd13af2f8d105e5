package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locklab/locklab/cluster"
)

// Faults on server processes: pause, kill, restart (cluster.Node).

func node(env Env, name string) (*cluster.Node, error) {
	n, ok := env.Cluster.Node(name)
	if !ok {
		return nil, fmt.Errorf("no node %q", name)
	}
	return n, nil
}

// pauseAction freezes a server (SIGSTOP to its process group; it keeps its
// sockets, so peers and clients see silence, not errors) and lets it run
// again (SIGCONT) when healed. A node killed or restarted meanwhile needs
// no resume.
type pauseAction struct{}

func (pauseAction) check(t *topology, f Fault) error {
	return checkServer(t, f)
}

func (pauseAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	eff := effect{target: f.Node}
	n, err := node(env, f.Node)
	if err != nil {
		return eff, err
	}
	st := env.state()
	if err := st.acquire(pauseKey{n}, func() error { return n.Pause(ctx) }); err != nil {
		return eff, err
	}
	eff.detail = how(env, "SIGSTOP process group %d", "docker pause (container init pid %d)", n.Pid())
	eff.heal = func(ctx context.Context) error {
		return st.release(pauseKey{n}, func() error {
			if err := n.Resume(ctx); err != nil && !errors.Is(err, cluster.ErrNotRunning) {
				return err
			}
			return nil
		})
	}
	return eff, nil
}

// killAction ends a server at once (SIGKILL to its process group). The node
// stays down for the rest of the run; its Window lasts to the end.
type killAction struct{}

func (killAction) check(t *topology, f Fault) error {
	return checkServer(t, f)
}

func (killAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	eff := effect{target: f.Node, lasting: true}
	n, err := node(env, f.Node)
	if err != nil {
		return eff, err
	}
	pid := n.Pid()
	if err := n.Kill(ctx); err != nil {
		return eff, err
	}
	eff.detail = how(env, "SIGKILL process group %d", "docker kill (container init pid %d)", pid)
	return eff, nil
}

// restartAction kills a server, waits delay and starts it again on the same
// data dir and port (cluster.Node.Kill, then Start, which waits until it
// serves). What survives is up to the node's persistence. The node is
// started again even when the run's ctx ends during delay (bounded by
// HealTimeout), so a restart never leaves a node down. Its Window runs from
// the kill until the node serves again.
type restartAction struct{}

func (restartAction) check(t *topology, f Fault) error {
	if f.Delay < 0 {
		return fmt.Errorf("delay must be >= 0 (got %v)", f.Delay)
	}
	return checkServer(t, f)
}

func (restartAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	eff := effect{target: f.Node}
	n, err := node(env, f.Node)
	if err != nil {
		return eff, err
	}
	t0 := time.Now()
	if err := n.Kill(ctx); err != nil {
		return eff, err
	}
	if f.Delay > 0 {
		timer := time.NewTimer(f.Delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
		}
	}
	down := elapsed(t0)
	err = heal(ctx, n.Start)
	eff.detail = fmt.Sprintf("killed, started again after %v, serving after %v", down, elapsed(t0))
	return eff, err
}

// how describes a node operation the way the cluster's provider does it.
func how(env Env, local, docker string, pid int) string {
	if env.Cluster != nil && env.Cluster.Info().Provider == cluster.ProviderDocker {
		return fmt.Sprintf(docker, pid)
	}
	return fmt.Sprintf(local, pid)
}
