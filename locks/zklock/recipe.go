package zklock

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/locks"
)

// Node names follow Curator's protected mode (and go-zookeeper's
// CreateProtectedEphemeralSequential): "_c_<guid>-lock-<sequence>". The GUID
// lets a client find its own node after a create whose reply was lost.
const (
	protectedPrefix = "_c_"
	lockInfix       = "-lock-"
)

// errNodeGone means our queue node disappeared while we waited: the session
// that owned it expired. The acquisition joins the queue again.
var errNodeGone = errors.New("queue node gone")

// recipeLocker is zk-recipe, ZooKeeper's lock recipe as Curator's
// InterProcessMutex implements it:
//
//  1. create an ephemeral sequential node under /<prefix>/<name>/;
//  2. list the children: the lowest sequence holds the lock;
//  3. otherwise set a watch on the node just below ours only (no herd: one
//     waiter wakes per release) and go back to 2 when it fires.
//
// The fencing token is the node's czxid, not its sequence number. Both grow
// in the order the leader commits the creations, so both increase along the
// queue, but the sequence is a counter of the parent node (it restarts if the
// parent is deleted and recreated, and it counts deletions too), while the
// czxid is the ensemble's transaction id: strictly increasing for every later
// creation under any parent, across leader changes (the epoch is its high 32
// bits), and directly comparable with the zk-herd token.
type recipeLocker struct {
	s     *Session
	dir   string
	retry time.Duration
	q     queue
}

// queue is what a recipe's queue nodes are called and which lower node a
// new one waits for: zk-recipe's queue (mutexQueue), one side of zk-rw's
// (readQueue, writeQueue), or zk-semaphore's.
type queue struct {
	lock  string // the lock's name in errors and logs
	infix string // between the protected-mode GUID and the sequence
	// blocker returns the node name waits for among children ("" when
	// none: name holds) and whether name is there at all.
	blocker func(children []string, name string) (pred string, found bool)
}

// mutexQueue is zk-recipe's: each node waits for the one just below it.
var mutexQueue = queue{lock: NameRecipe, infix: lockInfix, blocker: predecessor}

// Acquire implements locks.Locker.
func (l *recipeLocker) Acquire(ctx context.Context) (locks.Lease, error) {
	for {
		node, stat, err := l.enqueue(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", l.q.lock, l.dir, err)
		}
		ls, err := l.wait(ctx, node, stat)
		if errors.Is(err, errNodeGone) {
			l.s.log.Debug(l.q.lock+": queue node gone, joining again", "node", node)
			continue
		}
		if err != nil {
			l.s.background(func() { l.s.removeNode(node) })
			return nil, fmt.Errorf("%s %s: %w", l.q.lock, l.dir, err)
		}
		return ls, nil
	}
}

// enqueue creates our ephemeral sequential node, creating the parents when
// missing, and returns its path and stat. A create whose reply was lost
// (connection loss) may have succeeded: the node is then found by its GUID
// once the session is back, instead of creating a second one that would
// wait behind the first forever (the "create-retry problem").
func (l *recipeLocker) enqueue(ctx context.Context) (string, *zk.Stat, error) {
	guid := randomID()
	mine := protectedPrefix + guid
	abandon := func() { l.removeMine(mine) }
	for {
		node, err := l.s.create(ctx, l.dir+"/"+mine+l.q.infix, nil, zk.FlagEphemeral|zk.FlagSequence, abandon)
		switch {
		case err == nil:
		case errors.Is(err, zk.ErrNoNode):
			if err := l.s.ensurePath(ctx, l.dir); err != nil {
				return "", nil, err
			}
			continue
		case connLoss(err):
			if err := l.s.waitUp(ctx); err != nil {
				return "", nil, err
			}
			node, err = l.find(ctx, mine)
			if err != nil {
				return "", nil, err
			}
			if node == "" {
				continue // the create never happened (or its session expired)
			}
		default:
			return "", nil, fmt.Errorf("create node: %w", err)
		}
		stat, err := l.stat(ctx, node)
		if errors.Is(err, errNodeGone) {
			continue
		}
		if err != nil {
			l.s.background(func() { l.s.removeNode(node) })
			return "", nil, err
		}
		return node, stat, nil
	}
}

// find returns the path of the child whose name starts with mine, "" when
// there is none; it retries over connection losses until ctx ends.
func (l *recipeLocker) find(ctx context.Context, mine string) (string, error) {
	var children []string
	err := l.s.read(ctx, func() error {
		c, _, err := l.s.conn.Children(l.dir)
		children = c
		return err
	})
	switch {
	case err == nil:
		for _, c := range children {
			if strings.HasPrefix(c, mine) {
				return l.dir + "/" + c, nil
			}
		}
		return "", nil
	case errors.Is(err, zk.ErrNoNode):
		return "", nil
	default:
		return "", fmt.Errorf("list %s: %w", l.dir, err)
	}
}

// stat reads node's stat, for its czxid and owner session (go-zookeeper's
// Create does not return it).
func (l *recipeLocker) stat(ctx context.Context, node string) (*zk.Stat, error) {
	var ok bool
	var stat *zk.Stat
	err := l.s.read(ctx, func() error {
		e, st, err := l.s.conn.Exists(node)
		ok, stat = e, st
		return err
	})
	switch {
	case err == nil && ok:
		return stat, nil
	case err == nil:
		return nil, errNodeGone
	default:
		return nil, fmt.Errorf("stat %s: %w", node, err)
	}
}

// removeMine deletes the node(s) carrying our GUID after an abandoned create.
func (l *recipeLocker) removeMine(mine string) {
	l.s.retryBackground("remove "+mine, func(ctx context.Context) error {
		node, err := l.find(ctx, mine)
		if err != nil || node == "" {
			return err
		}
		err = l.s.call(ctx, func() error { return l.s.conn.Delete(node, -1) })
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
}

// wait runs the recipe's check-and-watch loop until node is the lowest.
func (l *recipeLocker) wait(ctx context.Context, node string, stat *zk.Stat) (locks.Lease, error) {
	name := node[strings.LastIndexByte(node, '/')+1:]
	for {
		// Ownership is established by the listing below; a disconnection
		// after this point voids it (Track checks the epoch).
		locks.Tried(ctx)
		epoch := l.s.Epoch()
		var children []string
		err := l.s.call(ctx, func() error {
			c, _, err := l.s.conn.Children(l.dir)
			children = c
			return err
		})
		if connLoss(err) {
			if err := l.s.waitUp(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", l.dir, err)
		}
		pred, found := l.q.blocker(children, name)
		// After an expiry go-zookeeper carries on with a new session. Our
		// node died with the old one, even if a lagging follower still
		// lists it.
		if !found || l.s.conn.SessionID() != stat.EphemeralOwner {
			return nil, errNodeGone
		}
		if pred == "" {
			lost, untrack := l.s.Track(epoch)
			return &lease{
				s: l.s, epoch: epoch,
				token:   uint64(stat.Czxid),
				lost:    lost,
				untrack: untrack,
				release: func(ctx context.Context) error { return l.release(ctx, node) },
			}, nil
		}
		// GetW, not ExistsW: when the predecessor is already gone it fails
		// with ErrNoNode and leaves no watch behind.
		var watch <-chan zk.Event
		err = l.s.read(ctx, func() error {
			_, _, ch, err := l.s.conn.GetW(l.dir + "/" + pred)
			watch = ch
			return err
		})
		switch {
		case err == nil:
		case errors.Is(err, zk.ErrNoNode):
			continue
		default:
			return nil, fmt.Errorf("watch %s: %w", pred, err)
		}
		// The watch fires on the predecessor's deletion (or data change),
		// and with EventNotWatching when the session expires; across a
		// plain reconnection the library re-registers it.
		if err := awaitWatch(ctx, watch, l.retry); err != nil {
			return nil, err
		}
	}
}

// release deletes our node. Its path is unique to this holding (GUID and
// sequence), so deleting any version cannot remove another holder's node.
//
// A connection lost mid-delete leaves the outcome unknown while the session
// (and so our node) may survive it: Release waits for the session to come
// back and deletes again, as Curator's guaranteed delete does, until ctx
// ends. "No node" then means our earlier delete was applied when the
// session is the same (an ephemeral node of a live session goes only by a
// delete), and an expired session otherwise (ErrNotHeld).
func (l *recipeLocker) release(ctx context.Context, node string) error {
	same, err := l.s.retryDelete(ctx, func() error {
		return l.s.call(ctx, func() error { return l.s.conn.Delete(node, -1) })
	})
	switch {
	case err == nil:
		return nil
	case same && errors.Is(err, zk.ErrNoNode):
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%s %s: node gone (session expired): %w", l.q.lock, l.dir, locks.ErrNotHeld)
	default:
		// The outcome is unknown or the node is still there: keep trying in
		// the background so it does not block the queue until the session
		// expires.
		l.s.background(func() { l.s.removeNode(node) })
		return fmt.Errorf("%s %s: delete %s: %w", l.q.lock, l.dir, node, err)
	}
}

// predecessor returns, among the lock nodes in children, the one just below
// name in sequence order ("" when name is the lowest), and whether name is
// there at all. Children that are not lock nodes are ignored.
func predecessor(children []string, name string) (pred string, found bool) {
	type node struct {
		name string
		seq  int64
	}
	nodes := make([]node, 0, len(children))
	for _, c := range children {
		if s, ok := sequence(c); ok {
			nodes = append(nodes, node{c, s})
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].seq < nodes[j].seq })
	for i, n := range nodes {
		if n.name == name {
			if i == 0 {
				return "", true
			}
			return nodes[i-1].name, true
		}
	}
	return "", false
}

// sequence parses the sequence number ZooKeeper appended to a lock node's
// name ("..lock-0000000042"), as go-zookeeper's Lock and Curator do.
func sequence(name string) (int64, bool) {
	i := strings.LastIndex(name, "lock-")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[i+len("lock-"):], 10, 64)
	return n, err == nil
}
