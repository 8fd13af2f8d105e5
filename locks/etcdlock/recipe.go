package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/locks"
)

// Locker is etcd-recipe for one lock name (see the package doc).
type Locker struct {
	c   *Client
	dir string // "<prefix>/<name>/"
}

// Acquire implements locks.Locker. When the lease is lost while waiting it
// returns an error wrapping locks.ErrLeaseLost.
func (l *Locker) Acquire(ctx context.Context) (locks.Lease, error) {
	k, err := l.c.grant(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcd-recipe %s: %w", l.dir, err)
	}
	ls, err := l.acquire(ctx, k)
	if err != nil {
		k.end() // the revocation removes our key, if it was put
		return nil, fmt.Errorf("etcd-recipe %s: %w", l.dir, err)
	}
	return ls, nil
}

func (l *Locker) acquire(ctx context.Context, k *keeper) (*lease, error) {
	cli := l.c.cli
	key := fmt.Sprintf("%s%x", l.dir, int64(k.id))

	// Steps 2 and 3 in one round trip: put our key if absent and read the
	// current owner (the key with the lowest create revision).
	l.c.requests.Add(1)
	locks.Tried(ctx)
	resp, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, "", clientv3.WithLease(k.id)), clientv3.OpGet(l.dir, clientv3.WithFirstCreate()...)).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("put %s: key of a fresh lease already exists", key)
	}
	rev := resp.Header.Revision
	if first := resp.Responses[1].GetResponseRange().Kvs; len(first) == 1 && first[0].CreateRevision == rev {
		return l.held(k, key, rev), nil
	}

	// Step 4: wait for our predecessor, then re-check.
	var at int64 // the revision of the deletion just seen; 0: none
	for {
		if k.isLost() {
			return nil, fmt.Errorf("lease expired while waiting: %w", locks.ErrLeaseLost)
		}
		locks.Tried(ctx)
		g, read, err := l.check(ctx, key, rev, at)
		if transient(err) && ctx.Err() == nil && !k.isLost() {
			// A read lost to an election: our key stays queued under the
			// lease, so read again once the cluster has a leader.
			if err := locks.Sleep(ctx, recheckBackoff); err != nil {
				return nil, fmt.Errorf("check %s: %w", key, err)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", key, err)
		}
		own := g.Responses[0].GetResponseRange().Kvs
		if len(own) == 0 || own[0].Lease != int64(k.id) || own[0].CreateRevision != rev {
			// Our key went away with our lease (etcd #11456: never report
			// the lock held in this case).
			return nil, fmt.Errorf("key %s gone while waiting (lease expired): %w", key, locks.ErrLeaseLost)
		}
		pred := g.Responses[1].GetResponseRange().Kvs
		if len(pred) == 0 {
			if k.isLost() {
				return nil, fmt.Errorf("lease expired while waiting: %w", locks.ErrLeaseLost)
			}
			return l.held(k, key, rev), nil
		}
		if at, err = l.waitDelete(ctx, k, string(pred[0].Key), read+1); err != nil {
			return nil, err
		}
	}
}

// check reads our key and the key just below it (by create revision) in one
// transaction, and returns the revision it read at. After a deletion seen
// at revision at (> 0) it reads at that revision, served by the member
// without a consensus round: what the directory held at a committed
// revision after our put decides ownership as well as a linearizable read
// does, since no key created later can sort below ours. A member that has
// not applied at yet answers ErrFutureRev; the client balances requests
// over the endpoints in turn, so the read is tried once per endpoint, which
// reaches the member that sent the event. When every try fails, or the
// revision is compacted, the linearizable read is made instead.
func (l *Locker) check(ctx context.Context, key string, rev, at int64) (*clientv3.TxnResponse, int64, error) {
	below := func(opts ...clientv3.OpOption) clientv3.Op {
		opts = append(opts, clientv3.WithMaxCreateRev(rev-1))
		return clientv3.OpGet(l.dir, append(opts, clientv3.WithLastCreate()...)...)
	}
	for i := 0; at > 0 && i < max(1, len(l.c.cli.Endpoints())); i++ {
		l.c.requests.Add(1)
		g, err := l.c.cli.Txn(ctx).Then(
			clientv3.OpGet(key, clientv3.WithRev(at), clientv3.WithSerializable()),
			below(clientv3.WithRev(at), clientv3.WithSerializable()),
		).Commit()
		if err == nil {
			l.c.localChecks.Add(1)
			return g, at, nil
		}
		if ctx.Err() != nil {
			return nil, 0, err
		}
		if !errors.Is(err, rpctypes.ErrFutureRev) {
			break // compacted, or no answer: read linearizably
		}
	}
	l.c.requests.Add(1)
	g, err := l.c.cli.Txn(ctx).Then(clientv3.OpGet(key), below()).Commit()
	if err != nil {
		return nil, 0, err
	}
	return g, g.Header.Revision, nil
}

// waitDelete returns when key is deleted at or after revision from (with
// the deletion's revision), when the watch ends for another reason (0: the
// caller re-checks), or with an error when ctx ends or the lease is lost.
func (l *Locker) waitDelete(ctx context.Context, k *keeper, key string, from int64) (int64, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	l.c.requests.Add(1)
	wch := l.c.cli.Watch(wctx, key, clientv3.WithRev(from))
	var poll <-chan time.Time
	if l.c.retry > 0 {
		t := time.NewTimer(l.c.retry)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case wr, ok := <-wch:
			if !ok || wr.Err() != nil || wr.Canceled {
				return 0, nil // re-check; a new watch follows
			}
			l.c.watchEvents.Add(int64(len(wr.Events)))
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					return ev.Kv.ModRevision, nil
				}
			}
		case <-k.lost:
			return 0, fmt.Errorf("lease expired while waiting: %w", locks.ErrLeaseLost)
		case <-poll:
			return 0, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (l *Locker) held(k *keeper, key string, rev int64) *lease {
	return &lease{l: l, name: Name, k: k, key: key, rev: rev}
}

// lease is one holding of etcd-recipe, or of etcd-semaphore (name).
type lease struct {
	l    *Locker
	name string
	k    *keeper
	key  string
	rev  int64
	once sync.Once
}

// Token is the key's create revision.
func (ls *lease) Token() uint64 { return uint64(ls.rev) }

// Promise is the etcd lease's: last successful keep-alive send + TTL.
func (ls *lease) Promise() locks.Promise { return ls.k.promise() }

// Lost closes when the lease is, or may be, gone (see the package doc).
func (ls *lease) Lost() <-chan struct{} { return ls.k.lost }

// Release deletes our key if it is still ours (same create revision), then
// stops the keep-alives and revokes the lease in the background. It returns
// ErrNotHeld when the key was already gone.
func (ls *lease) Release(ctx context.Context) error {
	err := fmt.Errorf("%s %s: released twice: %w", ls.name, ls.l.dir, locks.ErrNotHeld)
	ls.once.Do(func() { err = ls.release(ctx) })
	return err
}

func (ls *lease) release(ctx context.Context) error {
	defer ls.k.end()
	c := ls.l.c
	c.requests.Add(1)
	resp, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(ls.key), "=", ls.rev)).
		Then(clientv3.OpDelete(ls.key)).
		Commit()
	if err != nil {
		return fmt.Errorf("%s %s: delete %s: %w", ls.name, ls.l.dir, ls.key, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%s %s: key %s gone (lease expired): %w", ls.name, ls.l.dir, ls.key, locks.ErrNotHeld)
	}
	return nil
}

// recheckBackoff is the pause before a queued waiter reads again after an
// election cut its read short (elections take an election timeout or two).
const recheckBackoff = 50 * time.Millisecond

// transient reports whether err is an etcd answer that only says the
// cluster was between leaders: a read-only request may simply be sent
// again.
func transient(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaderChanged) || errors.Is(err, rpctypes.ErrNoLeader) ||
		errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail)
}
