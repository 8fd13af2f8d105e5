package adapters

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/etcdlock"
)

// NameEtcdRW is the etcd-rw lock name (contract).
const NameEtcdRW = "etcd-rw"

func init() {
	locks.Register(locks.Spec{
		Name:       NameEtcdRW,
		Kind:       locks.KindRW,
		Renews:     true,
		Backend:    locks.Etcd,
		Standing:   true,
		Summary:    "etcd client/v3/experimental/recipes RWMutex on a concurrency Session, unmodified",
		Fencing:    true,
		LeaseBased: true,
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			cli, err := etcdlock.Dial(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return &etcdRWClient{
				cli:     cli,
				root:    etcdlock.Root(cfg.Prefix),
				ttl:     int(etcdlock.TTLSeconds(cfg)),
				lockers: map[string]*etcdRWLocker{},
			}, nil
		},
	})
}

// etcdRWClient runs go.etcd.io/etcd/client/v3/experimental/recipes'
// RWMutex unmodified: a RWMutex per Acquire on <prefix>/<name>, on a
// concurrency.Session (a lease of the lock's TTL rounded up to whole
// seconds, kept alive by clientv3) per client and lock name.
//
// What the library (v3.7.3) promises, read from its code:
//   - RLock puts <prefix>/<name>/read/<wall clock ns> on the session's
//     lease and waits until no key under <prefix>/<name>/write has a lower
//     revision, watching the deletion of the last such key each time;
//     Lock puts .../write/<ns> and waits the same way for every key below
//     it, of either kind. Writers hold in revision order, readers queued
//     between two writers together.
//   - None of its calls takes a context (they use context.TODO()): a
//     waiter cannot give up, and a call blocks while the cluster has no
//     leader. The adapter runs them on a goroutine; when ctx ends first it
//     drops the session, whose revoked lease takes the queued key away
//     (what a waiter that gives up must do), and lets the call return by
//     itself (at the latest when the client closes).
//   - After a wait it does not check that its own key is still there: a
//     waiter whose lease expired is told it holds the lock (etcd #11456,
//     fixed in concurrency.Mutex, not here). The adapter's token read
//     below catches it when the key is already gone then, and reports
//     locks.ErrLeaseLost.
//   - RUnlock and Unlock delete the key by name, unconditionally; names
//     are unique per holding, so they never delete another holder's key.
//
// Token is the key's create revision. The library keeps its key to itself,
// so after the grant the adapter reads the keys of its side whose names
// fall between the clock readings before and after the call and picks the
// one on its session's lease: one more linearizable read per Acquire. A
// writer waits for every lower key and a reader for every lower writer, so
// a writer's token is above every earlier holder's.
//
// Lost is the session's Done(), as etcd-mutex's. A Locker admits one
// Acquire of its client at a time (later ones wait for Release), so that
// a session holds at most one key per lock name. Config.Retry has no
// effect: the library waits on watches only.
type etcdRWClient struct {
	cli  *clientv3.Client
	root string
	ttl  int

	mu      sync.Mutex
	lockers map[string]*etcdRWLocker
	closed  bool
}

var (
	_ locks.Client       = (*etcdRWClient)(nil)
	_ locks.SharedLocker = (*etcdRWLocker)(nil)
	_ locks.Lease        = (*etcdRWLease)(nil)
)

func (c *etcdRWClient) Locker(name string) locks.Locker {
	name = strings.Trim(name, "/")
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lockers[name]
	if !ok {
		l = &etcdRWLocker{
			pfx:  c.root + "/" + name,
			sem:  make(chan struct{}, 1),
			sess: &etcdSession{cli: c.cli, ttl: c.ttl},
			cli:  c.cli,
			ttl:  time.Duration(c.ttl) * time.Second,
		}
		if c.closed {
			l.sess.close()
		}
		c.lockers[name] = l
	}
	return l
}

// Close revokes every Locker's session (each bounded by DialTimeout) and
// closes the connections.
func (c *etcdRWClient) Close() error {
	c.mu.Lock()
	closed := c.closed
	c.closed = true
	lockers := make([]*etcdRWLocker, 0, len(c.lockers))
	for _, l := range c.lockers {
		lockers = append(lockers, l)
	}
	c.mu.Unlock()
	if closed {
		return nil
	}
	for _, l := range lockers {
		l.sess.close()
	}
	return c.cli.Close()
}

type etcdRWLocker struct {
	pfx  string
	sem  chan struct{} // one holding (or attempt) per client and name
	sess *etcdSession
	cli  *clientv3.Client
	ttl  time.Duration
}

// Acquire takes the write side (RWMutex.Lock).
func (l *etcdRWLocker) Acquire(ctx context.Context) (locks.Lease, error) {
	return l.acquire(ctx, true)
}

// AcquireShared takes the read side (RWMutex.RLock).
func (l *etcdRWLocker) AcquireShared(ctx context.Context) (locks.Lease, error) {
	return l.acquire(ctx, false)
}

func (l *etcdRWLocker) acquire(ctx context.Context, write bool) (locks.Lease, error) {
	side := "read"
	if write {
		side = "write"
	}
	ls, err := l.lock(ctx, write, side)
	if err != nil {
		return nil, fmt.Errorf("etcd-rw %s (%s): %w", l.pfx, side, err)
	}
	return ls, nil
}

func (l *etcdRWLocker) lock(ctx context.Context, write bool, side string) (*etcdRWLease, error) {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s, err := l.sess.get(ctx)
	if err != nil {
		<-l.sem
		return nil, err
	}
	m := recipe.NewRWMutex(s, l.pfx)
	locks.Tried(ctx)
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		if write {
			done <- m.Lock()
		} else {
			done <- m.RLock()
		}
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		l.sess.drop(s) // revoking the lease takes our queued key away
		<-l.sem
		return nil, ctx.Err()
	}
	if err != nil {
		<-l.sem
		if sessionEnded(s) || errors.Is(err, rpctypes.ErrLeaseNotFound) {
			err = fmt.Errorf("%w: %w", err, locks.ErrLeaseLost)
		}
		return nil, err
	}
	token, err := l.token(ctx, s, side, start, time.Now())
	if err != nil {
		go func() {
			unlock(m, write) // deletes the key if it is there after all
			<-l.sem
		}()
		return nil, err
	}
	return &etcdRWLease{etcdLease: newEtcdLease(s, token, start, l.ttl), l: l, m: m, write: write}, nil
}

// token finds our key among those the library may have named between from
// and to (its names are <prefix>/<side>/<time.Now().UnixNano()>, all of
// the same length for centuries, so they sort as the numbers do) and
// returns its create revision; locks.ErrLeaseLost when it is not there.
func (l *etcdRWLocker) token(ctx context.Context, s *concurrency.Session, side string, from, to time.Time) (uint64, error) {
	lo := fmt.Sprintf("%s/%s/%d", l.pfx, side, from.UnixNano())
	hi := fmt.Sprintf("%s/%s/%d", l.pfx, side, to.UnixNano()+1)
	resp, err := l.cli.Get(ctx, lo, clientv3.WithRange(hi), clientv3.WithKeysOnly())
	if err != nil {
		return 0, fmt.Errorf("read the key's revision: %w", err)
	}
	for _, kv := range resp.Kvs {
		if kv.Lease == int64(s.Lease()) {
			return uint64(kv.CreateRevision), nil
		}
	}
	return 0, fmt.Errorf("granted, but the key is gone (lease expired while waiting): %w", locks.ErrLeaseLost)
}

func unlock(m *recipe.RWMutex, write bool) error {
	if write {
		return m.Unlock()
	}
	return m.RUnlock()
}

type etcdRWLease struct {
	etcdLease
	l     *etcdRWLocker
	m     *recipe.RWMutex
	write bool
}

// Release calls RWMutex.Unlock or RUnlock (etcdLease.release). The call
// takes no context: when ctx ends first Release returns ctx's error and the
// call finishes in the background.
func (ls *etcdRWLease) Release(ctx context.Context) error {
	return ls.release("etcd-rw "+ls.l.pfx, func() error {
		done := make(chan error, 1)
		go func() {
			done <- unlock(ls.m, ls.write)
			<-ls.l.sem
		}()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}
