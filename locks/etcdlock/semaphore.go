package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/locks"
)

// NameSemaphore is etcd-semaphore's lock name (contract).
const NameSemaphore = "etcd-semaphore"

func init() {
	locks.Register(locks.Spec{
		Name:       NameSemaphore,
		Kind:       locks.KindSemaphore,
		Renews:     true,
		Backend:    locks.Etcd,
		Standing:   true,
		Summary:    "lease + key under a prefix, the permits lowest create revisions hold, watch deletions ahead",
		Fencing:    true,
		LeaseBased: true,
		Options:    []locks.Option{locks.PermitsOptionSpec()},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			c, err := New(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return &semaphoreClient{Client: c, permits: int64(locks.Permits(cfg.Options))}, nil
		},
	})
}

// semaphoreClient is an etcd-semaphore client: Client's connection,
// counters and Close, with semaphore Lockers.
type semaphoreClient struct {
	*Client
	permits int64
}

// Locker returns the semaphore of lock name; its keys are
// <prefix>/<name>/<lease id hex>, as etcd-recipe's.
func (c *semaphoreClient) Locker(name string) locks.Locker {
	return &semaphoreLocker{
		Locker:  Locker{c: c.Client, dir: c.root + "/" + strings.Trim(name, "/") + "/"},
		permits: c.permits,
	}
}

// semaphoreLocker is etcd-semaphore, etcd-recipe with permits holders:
//
//  1. grant a lease and keep it alive, as etcd-recipe;
//  2. put <prefix>/<name>/<lease id> on it, counting the keys under the
//     prefix in the same transaction (all of them were created before ours);
//  3. with at most permits keys created up to ours (ours included) we hold
//     a permit;
//  4. otherwise watch the prefix's deletions from the revision just read:
//     each of a key created before ours (the previous value says) brings
//     us one place closer; when enough went, re-check — our key still
//     there on our lease (etcd #11456, as etcd-recipe), and the keys up to
//     ours counted again — before reporting the permit held.
//
// Keys hold in create-revision order: a key among the permits lowest stays
// among them as keys are only added above it, so no more than permits
// keys (and holders that still have their lease) hold at once. Unlike
// etcd-recipe a waiter cannot watch the one key just ahead of it: that key
// may be another waiter's, which never goes when it is granted, while any
// holder ahead may release first. Every waiter therefore sees every
// deletion under the prefix, but reads again only when its count says it
// is admitted.
//
// The token is the key's create revision: keys are admitted in create
// order, so tokens increase in grant order. Lost and Release are
// etcd-recipe's.
type semaphoreLocker struct {
	Locker
	permits int64
}

// Acquire implements locks.Locker: it returns when the client holds one of
// the permits. When the lease is lost while waiting it returns an error
// wrapping locks.ErrLeaseLost.
func (l *semaphoreLocker) Acquire(ctx context.Context) (locks.Lease, error) {
	k, err := l.c.grant(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", NameSemaphore, l.dir, err)
	}
	ls, err := l.acquire(ctx, k)
	if err != nil {
		k.end() // the revocation removes our key, if it was put
		return nil, fmt.Errorf("%s %s: %w", NameSemaphore, l.dir, err)
	}
	return ls, nil
}

func (l *semaphoreLocker) acquire(ctx context.Context, k *keeper) (*lease, error) {
	key := fmt.Sprintf("%s%x", l.dir, int64(k.id))

	// Steps 2 and 3 in one round trip.
	l.c.requests.Add(1)
	locks.Tried(ctx)
	resp, err := l.c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, "", clientv3.WithLease(k.id)), clientv3.OpGet(l.dir, clientv3.WithPrefix(), clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("put %s: key of a fresh lease already exists", key)
	}
	rev := resp.Header.Revision
	count, at := resp.Responses[1].GetResponseRange().Count, rev

	// Step 4: count count down with the deletions ahead, then re-check.
	for count > l.permits {
		deleted, err := l.waitAhead(ctx, k, rev, at+1, count-l.permits)
		if err != nil {
			return nil, err
		}
		for {
			if k.isLost() {
				return nil, fmt.Errorf("lease expired while waiting: %w", locks.ErrLeaseLost)
			}
			locks.Tried(ctx)
			var own bool
			own, count, at, err = l.countUpTo(ctx, k, key, rev, deleted)
			if transient(err) && ctx.Err() == nil && !k.isLost() {
				if err := locks.Sleep(ctx, recheckBackoff); err != nil {
					return nil, fmt.Errorf("check %s: %w", key, err)
				}
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("check %s: %w", key, err)
			}
			if !own {
				return nil, fmt.Errorf("key %s gone while waiting (lease expired): %w", key, locks.ErrLeaseLost)
			}
			break
		}
	}
	if k.isLost() {
		return nil, fmt.Errorf("lease expired while waiting: %w", locks.ErrLeaseLost)
	}
	return &lease{l: &l.Locker, name: NameSemaphore, k: k, key: key, rev: rev}, nil
}

// waitAhead watches the prefix's deletions from revision from until need
// keys created up to rev (ours included: its deletion means our lease
// ended) are gone, and returns the revision of the last of them. It
// returns 0 (the caller re-checks with a linearizable read) when the watch
// ends for another reason or the poll fallback (Config.Retry) fires, and
// an error when ctx ends or the lease is lost.
func (l *semaphoreLocker) waitAhead(ctx context.Context, k *keeper, rev, from, need int64) (int64, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	l.c.requests.Add(1)
	wch := l.c.cli.Watch(wctx, l.dir, clientv3.WithPrefix(), clientv3.WithRev(from),
		clientv3.WithFilterPut(), clientv3.WithPrevKV())
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
				return 0, nil
			}
			l.c.watchEvents.Add(int64(len(wr.Events)))
			for _, ev := range wr.Events {
				if ev.Type != mvccpb.DELETE {
					continue
				}
				// Without the previous value (compacted) the key may have
				// been ahead: count it, the re-check corrects.
				prev := ev.PrevKv
				if prev != nil && prev.CreateRevision > rev {
					continue
				}
				if need--; need <= 0 || (prev != nil && prev.CreateRevision == rev) {
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

// countUpTo reads our key and counts the keys created up to ours, in one
// transaction, at revision at when it is not 0 (served by the member
// without a consensus round, as etcd-recipe's check; a linearizable read
// when no member can). It returns whether our key is still there on our
// lease, the count, and the revision read.
func (l *semaphoreLocker) countUpTo(ctx context.Context, k *keeper, key string, rev, at int64) (bool, int64, int64, error) {
	read := func(opts ...clientv3.OpOption) (*clientv3.TxnResponse, error) {
		l.c.requests.Add(1)
		// Keys only, not a count: the server counts before filtering by
		// create revision.
		upTo := append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithMaxCreateRev(rev), clientv3.WithKeysOnly()}, opts...)
		return l.c.cli.Txn(ctx).Then(clientv3.OpGet(key, opts...), clientv3.OpGet(l.dir, upTo...)).Commit()
	}
	var g *clientv3.TxnResponse
	var err error
	for i := 0; at > 0 && i < max(1, len(l.c.cli.Endpoints())); i++ {
		if g, err = read(clientv3.WithRev(at), clientv3.WithSerializable()); err == nil {
			l.c.localChecks.Add(1)
			break
		}
		if ctx.Err() != nil {
			return false, 0, 0, err
		}
		if !errors.Is(err, rpctypes.ErrFutureRev) {
			break // compacted, or no answer: read linearizably
		}
	}
	if g == nil {
		if g, err = read(); err != nil {
			return false, 0, 0, err
		}
		at = g.Header.Revision
	}
	own := g.Responses[0].GetResponseRange().Kvs
	mine := len(own) == 1 && own[0].Lease == int64(k.id) && own[0].CreateRevision == rev
	return mine, int64(len(g.Responses[1].GetResponseRange().Kvs)), at, nil
}

var (
	_ locks.Client = (*semaphoreClient)(nil)
	_ locks.Stats  = (*semaphoreClient)(nil)
	_ locks.Locker = (*semaphoreLocker)(nil)
)
