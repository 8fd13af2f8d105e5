package redlock

import (
	"context"

	"github.com/locklab/locklab/locks"
)

func init() {
	locks.Register(locks.Spec{
		Name:    Name,
		Backend: locks.Redis,
		Summary: "Redlock: SET NX PX on N independent primaries in parallel, quorum N/2+1, " +
			"validity = ttl - elapsed - drift; no fencing token",
		Fencing:    false,
		LeaseBased: true,
		// A majority of 1 or 2 nodes is every node: no failure tolerated,
		// nothing to learn from a quorum. New still accepts them.
		MinRedis: 3,
		Quorum:   true,
		Options: []locks.Option{
			{
				Name:    optNodeTimeout,
				Default: "min(50ms, ttl/10)",
				Doc: "how long one node's SET, extension or release may take before the node counts as failed " +
					"for that step (at least 1ms, below the ttl); far below the ttl so a dead node costs " +
					"little validity",
				Check: func(v string) error { _, err := parseNodeTimeout(v); return err },
			},
			{
				Name:    optRenew,
				Default: "false",
				Doc: "extend the keys on every node every ttl/3 while held (compare-and-pexpire); the validity " +
					"moves forward with each extension that reaches a quorum. Without it the holder is entitled " +
					"to the lock for its validity only, and Lost closes then",
				Check: locks.CheckBool,
			},
			{
				Name:    optNodes,
				Default: "0",
				Doc: "lock on the first N configured primaries only (0: all of them), so one cluster can " +
					"compare Redlock on 3 and on 5 nodes",
				Check: func(v string) error { _, err := parseNodes(v); return err },
			},
		},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return New(ctx, cfg)
		},
	})
}
