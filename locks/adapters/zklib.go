package adapters

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/zklock"
)

// NameZKLib is the zk-lib lock name (contract).
const NameZKLib = "zk-lib"

// OptCleanup is zk-lib's option that turns the adapter's clean-up after a
// lost connection on (the default) or off.
const OptCleanup = "cleanup"

// CleanupOption documents and checks zk-lib's cleanup option.
var CleanupOption = locks.Option{
	Name:    OptCleanup,
	Default: "true",
	Doc: "clean up after a lost connection as Curator's guaranteed delete does: an Unlock cut short " +
		"is tried again once the session is back, the node of a failed Lock is removed, and a Lock " +
		"whose Acquire gave up is kept for the next Acquire of the lock (its place in the queue " +
		"kept across tries) or, when none comes within 1s, removed; false runs the library as it " +
		"is (Unlock once, a failed Lock's node left in the queue for as long as the session lives)",
	Check: locks.CheckBool,
}

func init() {
	locks.Register(locks.Spec{
		Name:       NameZKLib,
		Renews:     true,
		Backend:    locks.ZooKeeper,
		Standing:   true,
		Summary:    "go-zookeeper zk.Lock, unmodified",
		Fencing:    false,
		LeaseBased: true,
		Options:    []locks.Option{zklock.SessionTimeoutOption, CleanupOption},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			cleanup := true
			if v, ok := cfg.Options[OptCleanup]; ok {
				var err error
				if cleanup, err = strconv.ParseBool(v); err != nil {
					return nil, fmt.Errorf("%s: %s: %w", NameZKLib, OptCleanup, err)
				}
			}
			s, err := zklock.Dial(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return &zkLibClient{s: s, root: zklock.Root(cfg.Prefix), cleanup: cleanup}, nil
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
//     go unnoticed);
//   - it never cleans up after a lost connection: Unlock returns the
//     connection error and leaves the node, and Lock returns the error of a
//     request cut short (Children, GetW) and forgets the node it created.
//     When the session survives the loss (the connection moved to another
//     member in time), that node stays first in the queue for as long as
//     the session lives, and every later Lock, the client's own included,
//     waits behind it forever: under zk-minority-partition three runs in
//     five made no critical section from the partition's start to the end
//     of the run. The adapter therefore cleans up as Curator's guaranteed
//     delete does (zklock.Session.Guarantee): Release calls Unlock again once
//     the session is back (Unlock keeps the node's path when it fails), and
//     an Acquire whose Lock failed removes its node, one that gave up on its
//     Lock leaves it to the client's next Acquire of the lock (park) and,
//     when none comes, removes it as soon as it exists (as Curator on a
//     timeout), found by the data it was created with (LockWithData with a
//     random marker: the node's name is the library's secret). Option cleanup: false
//     turns this off and shows the library's failure: Release calls Unlock
//     once, a failed Lock leaves its node, and an abandoned Lock that
//     succeeds later is unlocked once (known-zk-lib-stale-node).
type zkLibClient struct {
	s       *zklock.Session
	root    string
	cleanup bool
	once    sync.Once

	mu     sync.Mutex
	parked map[string]*lockCall // by lock path: a Lock its Acquire stopped waiting for
}

func (c *zkLibClient) Locker(name string) locks.Locker {
	return &zkLibLocker{c: c, s: c.s, path: c.root + "/" + strings.Trim(name, "/"), cleanup: c.cleanup}
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
	c       *zkLibClient
	s       *zklock.Session
	path    string
	cleanup bool
}

// lockCall is one call of the library's Lock, running in a goroutine of
// its own since Lock takes no context.
type lockCall struct {
	lk     *zk.Lock
	marker []byte          // the node's data (cleanup on), nil otherwise
	done   chan lockResult // Lock's return, sent once
}

// lockResult is what Lock returned, and the session's epoch at that
// moment: ownership is established in that epoch (zklock.Session.Track).
type lockResult struct {
	err   error
	epoch uint64
}

// adoptWithin is how long a Lock whose Acquire gave up on it waits for
// the next Acquire of the same lock to take it over (park) before its
// node is removed (evict).
const adoptWithin = time.Second

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
	call := l.c.adopt(l.path)
	if call == nil {
		call = l.startLock()
	}
	select {
	case r := <-call.done:
		if r.err != nil {
			if l.cleanup {
				l.removeMarked(call.marker)
			}
			return nil, fmt.Errorf("zk-lib %s: %w", l.path, r.err)
		}
		lost, untrack := l.s.Track(r.epoch)
		return &zkLibLease{lk: call.lk, path: l.path, lost: lost, untrack: untrack, s: l.s, epoch: r.epoch, cleanup: l.cleanup}, nil
	case <-ctx.Done():
		if l.cleanup {
			l.park(call)
		} else {
			l.s.Background(func() {
				if r := <-call.done; r.err == nil {
					_ = call.lk.Unlock() // once, as the library leaves it: an error leaves the node
				}
			})
		}
		return nil, fmt.Errorf("zk-lib %s: %w", l.path, ctx.Err())
	}
}

// startLock calls the library's Lock in a goroutine. With cleanup on, the
// node carries a random marker: the only way to find it again when Lock
// fails or is given up after creating it. With cleanup off the library's
// Lock runs as it is.
func (l *zkLibLocker) startLock() *lockCall {
	call := &lockCall{lk: zk.NewLock(l.s.Conn(), l.path, l.s.ACL()), done: make(chan lockResult, 1)}
	lock := call.lk.Lock
	if l.cleanup {
		call.marker = newMarker()
		lock = func() error { return call.lk.LockWithData(call.marker) }
	}
	go func() {
		err := lock()
		call.done <- lockResult{err: err, epoch: l.s.Epoch()}
	}()
	return call
}

// park keeps a Lock its Acquire gave up on for the next Acquire of the
// same lock, as a caller of the library without a context keeps waiting
// in its Lock: the node keeps its place in the queue across tries. When
// no Acquire takes it over within adoptWithin, its node is removed
// (evict), as Curator removes its node when an acquire times out. Before,
// every try that timed out left the queue: under load, with tries shorter
// than a Lock's three requests, no Lock ever finished (0 visits in the
// atlas' runs, where zk-recipe, which keeps its node across its own
// retries only within one try, made some).
func (l *zkLibLocker) park(call *lockCall) {
	c := l.c
	c.mu.Lock()
	if c.parked == nil {
		c.parked = map[string]*lockCall{}
	}
	old := c.parked[l.path]
	c.parked[l.path] = call
	c.mu.Unlock()
	if old != nil { // two Acquires of one lock at once: the older call goes
		l.evict(old)
	}
	time.AfterFunc(adoptWithin, func() {
		c.mu.Lock()
		mine := c.parked[l.path] == call
		if mine {
			delete(c.parked, l.path)
		}
		c.mu.Unlock()
		if mine {
			l.evict(call)
		}
	})
}

// adopt takes over the Lock parked for path, nil when there is none.
func (c *zkLibClient) adopt(path string) *lockCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	call := c.parked[path]
	delete(c.parked, path)
	return call
}

// evict removes the node of a Lock its Acquire gave up on as soon as that
// node exists, as Curator does when an acquire times out, so that later
// Locks never queue behind it; then, once the Lock has returned (done), it
// removes whatever that Lock left (removeMarked). The goroutine still in
// Lock may return as if it held the lock of a node that is gone: nobody
// uses that. Before, an abandoned Lock's node stayed in the queue until
// that Lock was granted, and every waiter behind it waited for the grant
// and the unlock too (TestZKLibCanceledLeavesQueue).
func (l *zkLibLocker) evict(call *lockCall) {
	marker, done := call.marker, call.done
	conn := l.s.Conn()
	l.s.Background(func() {
		returned := false
		for !returned {
			children, _, ch, err := conn.ChildrenW(l.path)
			if err == nil {
				var found bool
				if found, err = l.deleteMarked(conn, children, marker); found {
					break
				}
			}
			var again <-chan time.Time
			if err != nil {
				ch, again = nil, time.After(50*time.Millisecond) // no parent yet, or no connection
			}
			select {
			case <-ch: // a child came or went
			case <-again:
			case <-done:
				returned = true
			}
		}
		if !returned {
			<-done
		}
		l.removeMarked(marker)
	})
}

// deleteMarked deletes the node among children (of l.path) that carries
// marker and reports whether there was one; a node deleted by someone
// else meanwhile counts as deleted. An error leaves the answer open.
func (l *zkLibLocker) deleteMarked(conn *zk.Conn, children []string, marker []byte) (bool, error) {
	for _, c := range children {
		node := l.path + "/" + c
		data, _, err := conn.Get(node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue
		case err != nil:
			return false, err
		case bytes.Equal(data, marker):
			if err := conn.Delete(node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return false, err
			}
			return true, nil
		}
	}
	return false, nil
}

// newMarker returns the random data of one Lock's node: the only way to
// find that node again when Lock fails after creating it.
func newMarker() []byte {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return []byte(hex.EncodeToString(b))
}

// removeMarked deletes, in the background until done (Session.Guarantee),
// the lock node carrying marker, if any: the node of a failed or abandoned
// Lock. Only that Lock's node carries it, and that Lock failed or its
// Acquire gave up on it, so no acquisition a caller uses loses its node.
func (l *zkLibLocker) removeMarked(marker []byte) {
	conn := l.s.Conn()
	l.s.Guarantee("remove abandoned node under "+l.path, func() error {
		children, _, err := conn.Children(l.path)
		if err != nil {
			return err
		}
		_, err = l.deleteMarked(conn, children, marker)
		return err
	})
}

type zkLibLease struct {
	s       *zklock.Session
	epoch   uint64
	lk      *zk.Lock
	path    string
	lost    <-chan struct{}
	untrack func()
	cleanup bool
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
// on a second Release. An Unlock cut short by a lost connection is tried
// again once the session is back (Session.Guarantee), in the background
// after ctx ends: its node must not outlive the holding in a session that
// survived. A node found gone on such a retry in the same session was
// removed by the earlier attempt (an ephemeral node of a live session goes
// only by a delete). With cleanup off, Unlock runs once and its error is
// the answer.
func (ls *zkLibLease) Release(ctx context.Context) error {
	err := fmt.Errorf("zk-lib %s: released twice: %w", ls.path, locks.ErrNotHeld)
	ls.once.Do(func() {
		ls.untrack()
		var done <-chan error
		if ls.cleanup {
			done = ls.guaranteedUnlock()
		} else {
			once := make(chan error, 1)
			ls.s.Background(func() { once <- ls.lk.Unlock() })
			done = once
		}
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

// guaranteedUnlock runs Unlock until it succeeds once the session is back
// (Session.Guarantee); see Release.
func (ls *zkLibLease) guaranteedUnlock() <-chan error {
	conn := ls.s.Conn()
	sid, tries := conn.SessionID(), 0
	return ls.s.Guarantee("unlock "+ls.path, func() error {
		tries++
		err := ls.lk.Unlock()
		if errors.Is(err, zk.ErrNoNode) && tries > 1 && conn.SessionID() == sid {
			return nil
		}
		return err
	})
}
