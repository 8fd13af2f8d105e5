package natslock_test

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/natslock"
	"github.com/locklab/locklab/testenv"
)

// deleteKey deletes lock name's key with a connection of its own, whoever
// holds it.
func deleteKey(ctx context.Context, s *testenv.NATSServers, ttl time.Duration, name string) error {
	nc, err := natslock.Connect(locks.Endpoints{Table: map[string][]string{string(locks.NATS): s.Clients}}, 0, nil)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	kv, err := js.KeyValue(ctx, natslock.BucketName("", ttl))
	if err != nil {
		return err
	}
	return kv.Delete(ctx, natslock.Key(name))
}
