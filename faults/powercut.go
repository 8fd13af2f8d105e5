package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
)

// powerCutAction cuts a server's power: SIGKILL, then its data dir loses
// everything written since each file's last fsync (cluster.Node.PowerCut
// on the run's lossy filesystem), then, after delay, the server starts
// again on what is left. Like restart, the node is started again even
// when the run's ctx ends during delay, and its Window runs from the cut
// until the node serves again. It bites when the process was gone and a
// new one serves; what it shows is what the cut dropped (files, bytes)
// and, on Redis, which keys there before the cut are absent or changed
// after it (with appendfsync everysec a lock key set less than a second
// before the cut usually is).
type powerCutAction struct{}

func (powerCutAction) check(t *topology, f Fault) error {
	if err := checkServer(t, f); err != nil {
		return err
	}
	if err := cluster.LossyDisksWith(t.Provider); err != nil {
		return fmt.Errorf("%w (the filesystem that loses unsynced writes is a FUSE mount of the harness)", err)
	}
	return nil
}

// NeedsLossyDisks reports whether fs has a power-cut fault: the run's
// cluster then puts every node's data dir on a lossy filesystem
// (cluster.Spec.LossyDisks).
func NeedsLossyDisks(fs []Fault) bool {
	return slices.ContainsFunc(fs, func(f Fault) bool { return f.Type == PowerCut })
}

func (powerCutAction) apply(ctx context.Context, env Env, f Fault) (effect, error) {
	eff := effect{target: f.Node}
	n, err := node(env, f.Node)
	if err != nil {
		return eff, err
	}
	pid := n.Pid()
	var before map[string]string
	var beforeErr error
	if isRedis(n) {
		before, beforeErr = redisValues(ctx, n.Addr())
	}
	t0 := time.Now()
	loss, err := n.PowerCut(ctx)
	if err != nil {
		return eff, err
	}
	sleepUntil(ctx, time.Now().Add(f.Delay)) // down for delay, or until the run ends
	down := elapsed(t0)
	err = heal(ctx, n.Start)
	dropped := fmt.Sprintf("dropped %s unsynced in %s", plural(int(loss.Bytes), "byte"), plural(len(loss.Files), "file"))
	if len(loss.Files) > 0 {
		dropped += " (" + strings.Join(loss.Files, ", ") + ")"
	}
	eff.detail = fmt.Sprintf("SIGKILL, %s, started again after %v, serving after %v", dropped, down, elapsed(t0))
	if err != nil {
		return eff, err
	}
	back := n.Pid()
	restarted := back != 0 && back != pid
	eff.seen = seen(restarted, "process %d gone, %d serving again; %s", pid, back, dropped)
	if !restarted {
		eff.seen = seen(false, "process %d still the one serving: not restarted; %s", pid, dropped)
	}
	if isRedis(n) {
		serving := time.Now()
		eff.seen = keysLost(ctx, eff.seen, n.Addr(), before, beforeErr)
		if eff.seen.bit && strings.HasSuffix(eff.seen.seen, "(lock key lost: true)") {
			eff.seen.lostAt = serving // the state is gone from when it serves again
		}
	}
	return eff, nil
}

func (powerCutAction) observe(_ context.Context, _ Env, _ Fault, eff effect) evidence {
	return eff.seen
}

// redisValues reads every key of a Redis node with its value (the lock
// keys of a run: a handful, each a client's token), as DUMP serializes it,
// so a hash (a reentrant lock's owner and count) compares like a string.
func redisValues(ctx context.Context, addr string) (map[string]string, error) {
	out := map[string]string{}
	err := probeRedis(ctx, addr, func(ctx context.Context, rc *redis.Client) error {
		keys, err := rc.Keys(ctx, "*").Result()
		if err != nil {
			return fmt.Errorf("keys at %s: %w", addr, err)
		}
		for _, k := range keys {
			v, err := rc.Dump(ctx, k).Result()
			if err == redis.Nil {
				continue // expired or deleted meanwhile
			}
			if err != nil {
				return fmt.Errorf("dump %s at %s: %w", k, addr, err)
			}
			out[k] = v
		}
		return nil
	})
	return out, err
}

// changedKeys are the keys of before that after lacks or holds with
// another value, sorted. A key another client set again since counts as
// changed: its first value was lost.
func changedKeys(before, after map[string]string) []string {
	var out []string
	for k, v := range before {
		if w, ok := after[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// keysLost adds to cut which keys there before the cut are absent, or
// hold another value, after the restart. A key another client set again
// since counts as changed: its first value was lost.
func keysLost(ctx context.Context, cut evidence, addr string, before map[string]string, beforeErr error) evidence {
	if beforeErr != nil {
		return seen(cut.bit, "%s; keys before the cut unknown: %v", cut.seen, beforeErr)
	}
	if len(before) == 0 {
		return seen(cut.bit, "%s; no key before the cut", cut.seen)
	}
	after, err := redisValues(ctx, addr)
	if err != nil {
		return seen(cut.bit, "%s; keys after the restart unknown: %v", cut.seen, err)
	}
	lost := changedKeys(before, after)
	if len(lost) == 0 {
		return seen(cut.bit, "%s; %s before the cut, all there after it (lock key lost: false)", cut.seen, plural(len(before), "key"))
	}
	return seen(cut.bit, "%s; %s before the cut, %d absent or changed after it: %s (lock key lost: true)",
		cut.seen, plural(len(before), "key"), len(lost), strings.Join(lost, ", "))
}
