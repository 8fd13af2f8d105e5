package faults

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/cluster"
)

//go:embed clockjump.lua
var clockJumpLua string

var clockJumpScript = redis.NewScript(clockJumpLua)

// emulateJump emulates a forward jump of a Redis server's wall clock by
// offset, for provider external, where the harness cannot reach the
// server's process: what such a jump does to a lock is make keys expire
// early, since Redis stores expiry as an absolute wall-clock time. One Lua
// script (clockjump.lua), run on the node itself over a direct connection,
// shortens every key's remaining TTL by offset in every database,
// deleting keys whose PTTL <= offset as their expiry would; keys without a
// TTL are untouched, and other nodes' keys too. The script scans with KEYS
// '*', which blocks the server while it runs: fine for test-sized
// datasets, not for millions of keys. Window.Method is "emulated".
//
// What the emulation does not do: TIME and INFO still report the true
// time, and keys set after it expire on time. On a primary the script's
// deletes and new TTLs replicate, which matches what replicas see after a
// real jump (the primary's early expiry reaches them as DELs). On a
// replica, which refuses writes, the script runs with replica-read-only
// set to no for its duration; its changes stay local to the replica, as a
// jump of the replica's clock would.
func emulateJump(ctx context.Context, n *cluster.Node, f Fault) (eff effect, err error) {
	eff = effect{target: f.Node, method: MethodEmulated}
	rc := redis.NewClient(&redis.Options{
		Addr: n.Addr(), MaxRetries: -1, PoolSize: 1, ContextTimeoutEnabled: true,
		DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 2 * time.Second,
	})
	defer rc.Close()

	dbs := 16
	if v, err := rc.ConfigGet(ctx, "databases").Result(); err == nil {
		if d, err := strconv.Atoi(v["databases"]); err == nil && d > 0 {
			dbs = d
		}
	}
	if n.Kind == cluster.KindReplica {
		restore, werr := writable(ctx, rc)
		if werr != nil {
			return eff, fmt.Errorf("clock-jump %s: %w", n.Name, werr)
		}
		defer func() {
			if rerr := restore(); rerr != nil {
				err = errors.Join(err, fmt.Errorf("restore replica-read-only: %w", rerr))
			}
		}()
	}
	var r []int64
	jumped := time.Now()
	r, err = clockJumpScript.Run(ctx, rc, nil, f.Offset.Milliseconds(), dbs).Int64Slice()
	if err != nil {
		return eff, fmt.Errorf("clock-jump %s: %w", n.Name, err)
	}
	if len(r) != 5 {
		return eff, fmt.Errorf("clock-jump %s: script returned %v", n.Name, r)
	}
	eff.detail = fmt.Sprintf("wall clock +%v emulated: %s expired, %s shortened, %s without TTL untouched (%d databases)",
		f.Offset, plural(int(r[0]), "key"), plural(int(r[1]), "TTL"), plural(int(r[2]), "key"), dbs)
	eff.seen = seen(r[0]+r[1] > 0, "%s expired early, %s shortened by %v", plural(int(r[0]), "key"), plural(int(r[1]), "TTL"), f.Offset)
	switch {
	case r[0]+r[1] == 0:
		eff.seen = seen(false, "no key with a TTL on %s: nothing expired early", n.Name)
	case r[0] > 0:
		eff.seen.lostAt = jumped // a key gone at once
	default:
		eff.seen.lostAt = jumped.Add(time.Duration(r[4]) * time.Millisecond) // the first shortened key's new expiry
	}
	return eff, nil
}

// writable lets a replica accept the script's writes and returns what
// restores its setting.
func writable(ctx context.Context, rc *redis.Client) (func() error, error) {
	v, err := rc.ConfigGet(ctx, "replica-read-only").Result()
	if err != nil {
		return nil, err
	}
	old := v["replica-read-only"]
	if old != "yes" {
		return func() error { return nil }, nil
	}
	if err := rc.ConfigSet(ctx, "replica-read-only", "no").Err(); err != nil {
		return nil, err
	}
	return func() error {
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), HealTimeout)
		defer cancel()
		return rc.ConfigSet(hctx, "replica-read-only", old).Err()
	}, nil
}
