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
	eff.pids = []int{n.Pid()}
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

func (pauseAction) observe(ctx context.Context, env Env, _ Fault, eff effect) evidence {
	if env.Cluster.Traits().Containers {
		return unchecked("container paused: process state not checked")
	}
	pid := eff.pids[0]
	if st := stoppedState(ctx, pid); st == "T" || st == "t" {
		return seen(true, "process %d stopped (state %s in /proc/%d/stat)", pid, st, pid)
	} else if st == "" {
		return seen(false, "process %d gone: killed, not paused", pid)
	} else {
		return seen(false, "process %d in state %s, not stopped", pid, st)
	}
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
	switch {
	case n.Alive():
		eff.seen = seen(false, "process %d still running after the kill", pid)
	case !env.Cluster.Traits().Containers && liveState(pid) != "":
		eff.seen = seen(false, "process %d still in /proc after the kill", pid)
	default:
		eff.seen = seen(true, "process %d gone", pid)
	}
	return eff, nil
}

func (killAction) observe(_ context.Context, _ Env, _ Fault, eff effect) evidence { return eff.seen }

// restartAction kills a server, waits delay and starts it again on the same
// data dir and port (cluster.Node.Kill, then Start, which waits until it
// serves). What survives is up to the node's persistence. The node is
// started again even when the run's ctx ends during delay (bounded by
// HealTimeout), so a restart never leaves a node down. Its Window runs from
// the kill until the node serves again.
type restartAction struct{}

func (restartAction) check(t *topology, f Fault) error { return checkServer(t, f) }

func (restartAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	eff := effect{target: f.Node}
	n, err := node(env, f.Node)
	if err != nil {
		return eff, err
	}
	pid := n.Pid()
	// What a restart should show: the process gone and a new one serving;
	// on a Redis node without persistence, also its keys (the lock) gone.
	var keys keyspace
	if isRedis(n) {
		keys = keysOf(ctx, n)
	}
	t0 := time.Now()
	if err := n.Kill(ctx); err != nil {
		return eff, err
	}
	sleepUntil(ctx, time.Now().Add(f.Delay)) // down for delay, or until the run ends
	down := elapsed(t0)
	err = heal(ctx, n.Start)
	eff.detail = fmt.Sprintf("killed, started again after %v, serving after %v", down, elapsed(t0))
	if err != nil {
		return eff, err
	}
	back := n.Pid()
	eff.seen = seen(back != 0 && back != pid, "process %d gone, %d serving again", pid, back)
	if back == pid {
		eff.seen = seen(false, "process %d still the one serving: not restarted", pid)
	}
	if isRedis(n) {
		serving := time.Now()
		eff.seen = keys.after(ctx, eff.seen, n.Addr())
		if eff.seen.bit && !keys.persistent && keys.err == nil && keys.keys > 0 {
			eff.seen.lostAt = serving
		}
	}
	return eff, nil
}

func (restartAction) observe(_ context.Context, _ Env, _ Fault, eff effect) evidence { return eff.seen }

// keyspace is what a Redis node held before a restart.
type keyspace struct {
	keys       int64
	persistent bool
	how        string // "appendonly yes", "no persistence"
	err        error
}

func keysOf(ctx context.Context, n *cluster.Node) keyspace {
	var k keyspace
	k.keys, k.err = keyCount(ctx, n.Addr())
	if k.err == nil {
		k.persistent, k.how, k.err = persistent(ctx, n.Addr())
	}
	if k.err == nil && n.Kind == cluster.KindReplica {
		k.persistent, k.how = true, "replica (syncs again from its primary)"
	}
	return k
}

// after adds to restarted what the node's keys show. Without persistence
// the restart bites only when keys (the lock) were there before the kill
// and the node loaded none at its start (a client may already have set a
// new key by the time it is asked: keys now are said, not judged); with
// persistence they are expected to survive, and the restart bites by the
// process being gone and back.
func (k keyspace) after(ctx context.Context, restarted evidence, addr string) evidence {
	if k.err != nil {
		return seen(false, "%s; keys before the kill unknown: %v", restarted.seen, k.err)
	}
	now, err := keyCount(ctx, addr)
	if err != nil {
		return seen(false, "%s; keys after the restart unknown: %v", restarted.seen, err)
	}
	what := fmt.Sprintf("%s: %s before the kill, %d now", k.how, plural(int(k.keys), "key"), now)
	switch {
	case k.persistent:
		absent := "false"
		if now < k.keys {
			absent = "some keys missing"
		}
		return seen(restarted.bit, "%s; %s (lock key absent after the restart: %s)", restarted.seen, what, absent)
	case k.keys == 0:
		return seen(false, "%s; %s: no lock key to lose", restarted.seen, what)
	}
	return seen(restarted.bit, "%s; %s: came back empty, lock key absent after the restart", restarted.seen, what)
}

// how describes a node operation the way the cluster's provider does it:
// on a process of the harness, or on a container.
func how(env Env, process, container string, pid int) string {
	if env.Cluster != nil && env.Cluster.Traits().Containers {
		return fmt.Sprintf(container, pid)
	}
	return fmt.Sprintf(process, pid)
}
