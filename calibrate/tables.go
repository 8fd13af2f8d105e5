package calibrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	_ "github.com/go-sql-driver/mysql" // the "mysql" driver of database/sql
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/mysqllock"
	"github.com/locklab/locklab/locks/natslock"
	"github.com/locklab/locklab/locks/pglock"
)

// calibrationKey names the lock the bare clients take: none of the
// hand-offs' locks, whose names carry each measurement's prefix.
const calibrationKey = "locklab-calibrate"

// barePostgres times, with pgx on one connection dialed as pglock dials
// it, pg-advisory's grant without its wait: pg_try_advisory_lock, an entry
// in the server's shared lock table (no WAL, not a consensus write); its
// release pg_advisory_unlock; and SELECT 1, one round trip.
func barePostgres(ctx context.Context, cfg locks.Config) (commitOps, func(), error) {
	cs, err := pglock.ConnString(cfg.Endpoints, cfg.Options["user"])
	if err != nil {
		return commitOps{}, nil, err
	}
	conn, err := pgx.Connect(ctx, cs)
	if err != nil {
		return commitOps{}, nil, fmt.Errorf("connect postgres: %w", err)
	}
	const key int64 = 0x6c6f636b6c6162 // "locklab"; pglock's keys are hashes of prefixed names
	return commitOps{
		write: trueQuery(ctx, conn.QueryRow, "SELECT pg_try_advisory_lock($1)", key),
		del:   trueQuery(ctx, conn.QueryRow, "SELECT pg_advisory_unlock($1)", key),
		read:  trueQuery(ctx, conn.QueryRow, "SELECT 1"),
	}, func() { conn.Close(context.Background()) }, nil
}

// bareMariaDB times, with go-sql-driver/mysql on one connection dialed
// with mysqllock's DSN, mariadb-get-lock's grant without its wait:
// GET_LOCK(name, 0), an entry in the server's lock table (not a
// consensus write); its release RELEASE_LOCK(name); and SELECT 1, one
// round trip. Like the lock's, the two statements with an argument are
// prepared, executed and closed by the driver: two round trips each.
func bareMariaDB(ctx context.Context, cfg locks.Config) (commitOps, func(), error) {
	dsn, err := mysqllock.DSN(cfg.Endpoints, cfg.Options["user"])
	if err != nil {
		return commitOps{}, nil, err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return commitOps{}, nil, fmt.Errorf("open mariadb: %w", err)
	}
	// A named lock belongs to its session: every request on one connection.
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return commitOps{}, nil, fmt.Errorf("connect mariadb: %w", err)
	}
	return commitOps{
		write: trueQuery(ctx, conn.QueryRowContext, "SELECT GET_LOCK(?, 0)", calibrationKey),
		del:   trueQuery(ctx, conn.QueryRowContext, "SELECT RELEASE_LOCK(?)", calibrationKey),
		read:  trueQuery(ctx, conn.QueryRowContext, "SELECT 1"),
	}, func() { conn.Close(); db.Close() }, nil
}

// natsReplicas is the replicas of the NATS calibration's buckets, the bare
// client's and the lock's: one, because a replicated bucket on NATS
// before 2.9.21 (Debian's is 2.9.10) grants the lock twice with no fault
// at all (docs/nats.md), and a calibration of a broken run would mislead.
// With one replica the stream lives on one of the servers and a write is
// no consensus write.
const natsReplicas = 1

// bareNATS times, with nats.go's jetstream package on a bucket natslock
// opened (its connection, and its bucket's configuration for the
// calibration's TTL and natsReplicas), nats-kv's grant: a KV create,
// which on a key whose last entry is a delete marker (every create after
// the first, as in the lock's steady state) is a rejected conditional
// write, a get and the conditional write, each a request to the stream;
// its release, a delete conditioned on the create's revision; and a KV get
// of the free key, one round trip.
func bareNATS(ctx context.Context, cfg locks.Config) (commitOps, func(), error) {
	cfg.Prefix = "calibrate"
	c, err := natslock.New(ctx, cfg)
	if err != nil {
		return commitOps{}, nil, fmt.Errorf("nats bucket: %w", err)
	}
	kv := c.KeyValue()
	var rev uint64
	return commitOps{
		write: func() (err error) { rev, err = kv.Create(ctx, calibrationKey, []byte("x")); return err },
		del:   func() error { return kv.Delete(ctx, calibrationKey, jetstream.LastRevision(rev)) },
		read: func() error {
			if _, err := kv.Get(ctx, calibrationKey); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				return err
			}
			return nil
		},
	}, func() { c.Close() }, nil
}

// trueQuery is an operation that sends q with args through query (a
// connection's QueryRow) and fails unless the one value answered is true
// or 1: the lock was granted, released, or the server answered SELECT 1.
func trueQuery[R interface{ Scan(...any) error }](ctx context.Context, query func(context.Context, string, ...any) R, q string, args ...any) func() error {
	return func() error {
		var got sql.NullBool
		if err := query(ctx, q, args...).Scan(&got); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		if !got.Valid || !got.Bool {
			return fmt.Errorf("%s: answered %v, want true", q, got)
		}
		return nil
	}
}
