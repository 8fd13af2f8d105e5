package adapters

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/etcdlock"
)

// NameEtcdMutex is the etcd-mutex lock name (contract).
const NameEtcdMutex = "etcd-mutex"

func init() {
	locks.Register(locks.Spec{
		Name:       NameEtcdMutex,
		Renews:     true,
		Backend:    locks.Etcd,
		Standing:   true,
		Summary:    "etcd client/v3/concurrency Session + Mutex, unmodified",
		Fencing:    true,
		LeaseBased: true,
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			cli, err := etcdlock.Dial(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return &etcdMutexClient{
				cli:     cli,
				root:    etcdlock.Root(cfg.Prefix),
				ttl:     int(etcdlock.TTLSeconds(cfg)),
				sess:    etcdSession{cli: cli, ttl: int(etcdlock.TTLSeconds(cfg))},
				lockers: map[string]*etcdMutexLocker{},
			}, nil
		},
	})
}

// etcdMutexClient runs go.etcd.io/etcd/client/v3/concurrency unmodified, the
// way applications use it: one Session per client (a lease of the lock's TTL
// rounded up to whole seconds, kept alive by clientv3's KeepAlive), a Mutex
// per Acquire on <prefix>/<name>. When the session has ended, the next
// Acquire starts a new one.
//
// Token is the lock key's create revision, read from Mutex.IsOwner() (the
// comparison the library offers for fenced writes). Mutex.Header().Revision
// also grows from holder to holder, but it is the revision of whatever
// request observed the acquisition, not a property of the lock key, so a
// resource cannot check it against etcd.
//
// Lost is the session's Done(): it closes when clientv3's keep-alive channel
// closes, a full TTL after the last keep-alive response arrived (plus up to
// a second) — possibly after the server expired the lease; compare
// etcd-recipe, which counts from the request's send time.
//
// The library's lock key is <prefix>/<name>/<session lease>: two Mutexes on
// one session and name share it, and the second Lock returns at once while
// the first holds. Each Locker therefore admits one Acquire of its client at
// a time (later ones wait for Release). Config.Retry has no effect: the
// Mutex waits on watches only.
type etcdMutexClient struct {
	cli  *clientv3.Client
	root string
	ttl  int

	sess etcdSession

	mu      sync.Mutex
	lockers map[string]*etcdMutexLocker
}

var (
	_ locks.Client = (*etcdMutexClient)(nil)
	_ locks.Locker = (*etcdMutexLocker)(nil)
	_ locks.Lease  = (*etcdMutexLease)(nil)
)

func (c *etcdMutexClient) Locker(name string) locks.Locker {
	name = strings.Trim(name, "/")
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lockers[name]
	if !ok {
		l = &etcdMutexLocker{c: c, pfx: c.root + "/" + name, sem: make(chan struct{}, 1)}
		c.lockers[name] = l
	}
	return l
}

// session returns the client's live session (etcdSession.get).
func (c *etcdMutexClient) session(ctx context.Context) (*concurrency.Session, error) {
	return c.sess.get(ctx)
}

// Close revokes the session's lease (bounded by DialTimeout) and closes the
// connections.
func (c *etcdMutexClient) Close() error {
	if c.sess.close() {
		return nil
	}
	return c.cli.Close()
}

type etcdMutexLocker struct {
	c   *etcdMutexClient
	pfx string
	sem chan struct{} // one holding (or attempt) per client and name
}

func (l *etcdMutexLocker) Acquire(ctx context.Context) (locks.Lease, error) {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("etcd-mutex %s: %w", l.pfx, ctx.Err())
	}
	s, err := l.c.session(ctx)
	if err != nil {
		<-l.sem
		return nil, fmt.Errorf("etcd-mutex %s: %w", l.pfx, err)
	}
	m := concurrency.NewMutex(s, l.pfx)
	start := time.Now()
	if err := m.Lock(ctx); err != nil {
		<-l.sem
		if errors.Is(err, concurrency.ErrSessionExpired) {
			err = fmt.Errorf("%w: %w", err, locks.ErrLeaseLost)
		}
		return nil, fmt.Errorf("etcd-mutex %s: %w", l.pfx, err)
	}
	owner := m.IsOwner()
	rev := owner.GetCompare().GetCreateRevision()
	ttl := time.Duration(l.c.ttl) * time.Second
	return &etcdMutexLease{etcdLease: newEtcdLease(s, uint64(rev), start, ttl), l: l, m: m}, nil
}

type etcdMutexLease struct {
	etcdLease
	l *etcdMutexLocker
	m *concurrency.Mutex
}

// Release calls Mutex.Unlock (etcdLease.release).
func (ls *etcdMutexLease) Release(ctx context.Context) error {
	return ls.release("etcd-mutex "+ls.l.pfx, func() error {
		defer func() { <-ls.l.sem }()
		return ls.m.Unlock(ctx)
	})
}
