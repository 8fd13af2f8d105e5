package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A release that fails on a node within the node timeout is handed to that
// node's janitor, which sends it again in the background with a deadline
// of one TTL.
//
// Why: a node that did not answer in time may still have executed the SET
// (only its reply was late, or the request was held by the network and
// arrives later), and its key then blocks everyone until it expires. A
// retry within the node timeout rarely helps: go-redis discards a
// connection whose command timed out, so the retry needs a new connection
// and its handshake, on the same slow link. The janitor gives it time.
//
// One goroutine per node sends the queued releases one after the other, so
// a partitioned node costs one blocked connection, not one per failed
// attempt. Each release is sent once (compare-and-delete is idempotent, but
// a node that refuses connections has no key to delete until it restarts,
// and then only with persistence); releases whose deadline passed while
// queued are dropped, as their keys have expired. The queue keeps the
// newest maxPending releases. Close drops what is left.
type janitor struct {
	rdb *redis.Client

	mu      sync.Mutex
	pending []job
	wake    chan struct{} // buffered 1: something was queued
}

// job is one release to send: compare-and-delete of value at key.
type job struct {
	key, value string
	deadline   time.Time
}

const maxPending = 1024

func newJanitor(rdb *redis.Client) *janitor {
	return &janitor{rdb: rdb, wake: make(chan struct{}, 1)}
}

// add queues a release of value at key, to be sent within ttl from now.
func (j *janitor) add(key, value string, ttl time.Duration) {
	j.mu.Lock()
	if len(j.pending) == maxPending {
		j.pending = j.pending[1:]
	}
	j.pending = append(j.pending, job{key: key, value: value, deadline: time.Now().Add(ttl)})
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest job whose deadline has not passed.
func (j *janitor) next() (job, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := time.Now()
	for len(j.pending) > 0 {
		jb := j.pending[0]
		j.pending = j.pending[1:]
		if now.Before(jb.deadline) {
			return jb, true
		}
	}
	return job{}, false
}

// run sends queued releases until ctx ends.
func (j *janitor) run(ctx context.Context, sent func(ok bool, err error)) {
	for {
		jb, ok := j.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-j.wake:
				continue
			}
		}
		jctx, cancel := context.WithDeadline(ctx, jb.deadline)
		n, err := j.rdb.Eval(jctx, releaseSrc, []string{jb.key}, jb.value).Int64()
		cancel()
		if ctx.Err() != nil {
			return
		}
		sent(n == 1, err)
	}
}
