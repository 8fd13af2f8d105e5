package redislock

import (
	"context"

	"github.com/locklab/locklab/locks"
)

// waitOptions are redis-cad's and redis-watchdog's options.
var waitOptions = []locks.Option{
	{
		Name:    optWaitReplicas,
		Default: "0",
		Doc: "after taking the lock, WAIT for this many replicas to acknowledge it; " +
			"fewer acks within wait_timeout give the key back and count as not obtained (0: do not wait)",
		Check: func(v string) error { _, err := parseReplicas(v); return err },
	},
	{
		Name:    optWaitTimeout,
		Default: "100ms",
		Doc:     "how long WAIT blocks for the replicas' acks (at least 1ms)",
		Check:   func(v string) error { _, err := parseWaitTimeout(v); return err },
	},
}

// optionsOf returns the scenario options variant v takes.
func optionsOf(v Variant) []locks.Option {
	if v == CAD || v == Watchdog {
		return waitOptions
	}
	if kindOf(v) == locks.KindSemaphore {
		return []locks.Option{locks.PermitsOptionSpec()}
	}
	return nil
}

func init() {
	specs := []locks.Spec{
		{
			Name:    string(SetNXExpire),
			Summary: "SETNX then EXPIRE, two commands: a crash between them holds the lock forever",
			Broken:  true,
		},
		{
			Name:    string(SetDel),
			Summary: "SET NX PX, released by plain DEL: a holder whose key expired deletes the next holder's lock",
			Broken:  true,
		},
		{
			Name:    string(CAD),
			Summary: "SET NX PX with a random owner id, released by Lua compare-and-delete; no renewal",
			Options: optionsOf(CAD),
		},
		{
			Name:    string(Watchdog),
			Renews:  true,
			Summary: "redis-cad renewed every ttl/3 by Lua compare-and-pexpire; Lost when renewal fails",
			Options: optionsOf(Watchdog),
		},
		{
			Name:    string(Reentrant),
			Renews:  true,
			Summary: "Redisson-style reentrant hash {owner: count} in Lua, pub/sub wake-up, watchdog renewal",
		},
		{
			Name:    string(RW),
			Renews:  true,
			Summary: "Redisson-style read-write lock: a hash {mode, owner: count}, a timeout key per reader, watchdog renewal",
		},
		{
			Name:    string(RWNaive),
			Renews:  true,
			Broken:  true,
			Summary: "redis-rw whose reader checks the mode, then registers in a second round trip: a writer slips in between",
		},
		{
			Name:    string(Fair),
			Renews:  true,
			Summary: "Redisson-style fair lock: a queue list and a timeouts sorted set in Redis, grants in request order, watchdog",
		},
		{
			Name:    string(Semaphore),
			Renews:  true,
			Summary: "semaphore of expiring permits: a sorted set {owner: expiry}, expired ones dropped before counting, watchdog",
		},
		{
			Name:    string(SemaphoreLeaky),
			Broken:  true,
			Summary: "semaphore counting permits in a plain counter without expiry: a dead holder's permit leaks forever",
		},
	}
	for _, s := range specs {
		v := Variant(s.Name)
		s.Backend = locks.Redis
		s.Fencing = true
		s.LeaseBased = v != SemaphoreLeaky
		s.Kind = kindOf(v)
		s.Options = optionsOf(v)
		s.MinRedis = 1
		s.RedisCluster = true
		s.New = func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return New(ctx, v, cfg)
		}
		locks.Register(s)
	}
}
