package adapters

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/zklock"
)

// NameZKLib is the zk-lib lock name (contract).
const NameZKLib = "zk-lib"

func init() {
	locks.Register(locks.Spec{
		Name:       NameZKLib,
		Renews:     true,
		Backend:    locks.ZooKeeper,
		Summary:    "go-zookeeper zk.Lock, unmodified",
		Fencing:    false,
		LeaseBased: true,
		Options:    []locks.Option{zklock.SessionTimeoutOption},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			s, err := zklock.Dial(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return &zkLibClient{s: s, root: zklock.Root(cfg.Prefix)}, nil
		},
	})
}

// zkLibClient runs github.com/go-zookeeper/zk's Lock unmodified: one
// session per client (zklock.Session, with the same session_timeout rule
// as zk-recipe), a new zk.Lock per Acquire on /<prefix>/<name>. The library
// implements the same recipe as zk-recipe (protected ephemeral sequential
// nodes, watch the predecessor) but:
//
//   - Lock and Unlock take no context: Acquire runs Lock in a goroutine and,
//     when ctx ends first, returns ctx.Err() and unlocks in the background
//     once Lock eventually returns;
//   - it exposes neither the node's sequence nor its czxid, so Token is 0
//     (not fencing);
//   - it reports nothing about the session: Lost comes from this adapter,
//     closed on the session's next disconnection or expiry after Lock
//     returned (the library's last check is invisible, so a disconnection
//     and reconnection within the instant between it and Lock's return would
//     go unnoticed).
type zkLibClient struct {
	s    *zklock.Session
	root string
	once sync.Once
}

func (c *zkLibClient) Locker(name string) locks.Locker {
	return &zkLibLocker{s: c.s, path: c.root + "/" + strings.Trim(name, "/")}
}

// Session returns the client's session.
func (c *zkLibClient) Session() *zklock.Session { return c.s }

// Counters implements locks.Stats; requests are the library's own and not
// counted, only watch notifications and session losses.
func (c *zkLibClient) Counters() map[string]int64 {
	all := c.s.Counters()
	delete(all, "requests")
	return all
}

func (c *zkLibClient) Close() error {
	c.once.Do(c.s.Close)
	return nil
}

type zkLibLocker struct {
	s    *zklock.Session
	path string
}

var (
	_ locks.Client = (*zkLibClient)(nil)
	_ locks.Stats  = (*zkLibClient)(nil)
	_ locks.Locker = (*zkLibLocker)(nil)
	_ locks.Lease  = (*zkLibLease)(nil)
)

func (l *zkLibLocker) Acquire(ctx context.Context) (locks.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("zk-lib %s: %w", l.path, err)
	}
	lk := zk.NewLock(l.s.Conn(), l.path, l.s.ACL())
	done := make(chan error, 1)
	go func() { done <- lk.Lock() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("zk-lib %s: %w", l.path, err)
		}
		epoch := l.s.Epoch()
		lost, untrack := l.s.Track(epoch)
		return &zkLibLease{lk: lk, path: l.path, lost: lost, untrack: untrack, s: l.s, epoch: epoch}, nil
	case <-ctx.Done():
		l.s.Background(func() {
			if <-done == nil {
				lk.Unlock()
			}
		})
		return nil, fmt.Errorf("zk-lib %s: %w", l.path, ctx.Err())
	}
}

type zkLibLease struct {
	s       *zklock.Session
	epoch   uint64
	lk      *zk.Lock
	path    string
	lost    <-chan struct{}
	untrack func()
	once    sync.Once
}

func (ls *zkLibLease) Token() uint64 { return 0 }

// Promise is the session's (zklock.Session.Promise) for the epoch the lock
// was seen held in: zk.Lock's own requests are invisible to the adapter, so
// it counts from the session's heartbeat and other requests. Estimated.
func (ls *zkLibLease) Promise() locks.Promise {
	p := ls.s.Promise(ls.epoch)
	p.Estimated = true
	return p
}

func (ls *zkLibLease) Lost() <-chan struct{} { return ls.lost }

// Release unlocks; ErrNotHeld when the node was gone (session expired) or
// on a second Release.
func (ls *zkLibLease) Release(ctx context.Context) error {
	err := fmt.Errorf("zk-lib %s: released twice: %w", ls.path, locks.ErrNotHeld)
	ls.once.Do(func() {
		ls.untrack()
		done := make(chan error, 1)
		go func() { done <- ls.lk.Unlock() }()
		select {
		case err = <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
		switch {
		case err == nil:
		case errors.Is(err, zk.ErrNoNode):
			err = fmt.Errorf("zk-lib %s: node gone (session expired): %w", ls.path, locks.ErrNotHeld)
		default:
			err = fmt.Errorf("zk-lib %s: unlock: %w", ls.path, err)
		}
	})
	return err
}
