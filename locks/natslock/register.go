package natslock

import (
	"context"

	"github.com/locklab/locklab/locks"
)

func init() {
	locks.Register(locks.Spec{
		Name:       Name,
		Backend:    locks.NATS,
		Summary:    "JetStream KV create-if-absent in a bucket whose max age is the lease, revision-conditioned renewal every ttl/3 and delete, revision as token",
		Fencing:    true,
		LeaseBased: true,
		Renews:     true,
		Options: []locks.Option{{
			Name:    optReplicas,
			Default: "one per endpoint, at most 5",
			Doc:     "replicas of the lock bucket's stream, from 1 to 5 (used when this client creates the bucket)",
			Check:   func(v string) error { _, err := parseReplicas(v); return err },
		}},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return New(ctx, cfg)
		},
	})
}
