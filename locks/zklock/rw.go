package zklock

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/locklab/locklab/locks"
)

// Node infixes of zk-rw: the shared-lock recipe of the ZooKeeper
// documentation names its nodes "read-<sequence>" and "write-<sequence>";
// ours carry the protected-mode GUID in front, as zk-recipe's do. Both kinds
// take their sequence from the same parent, so it orders them together.
const (
	readInfix  = "-read-"
	writeInfix = "-write-"
)

// rwLocker is zk-rw, the shared-lock recipe of the ZooKeeper documentation
// ("Recipes and Solutions", Shared Locks), on zk-recipe's queue machinery:
//
//   - a reader creates an ephemeral sequential "read-" node; it holds the
//     lock when no "write-" node has a lower sequence, and otherwise watches
//     the write- node just below its own (the last writer before it);
//   - a writer creates a "write-" node; it holds the lock when no node of
//     either kind has a lower sequence, and otherwise watches the node just
//     below its own.
//
// After each notification the waiter lists the children again, so a writer
// that gave up (its node deleted) does not let a reader in ahead of a writer
// still queued below. Writers hold in queue order; readers queued between
// two writers hold together.
//
// The token is the node's czxid, as zk-recipe's: a writer waits for every
// lower node, and a reader for every lower writer, so a writer's token is
// above that of every holder before it and a reader's above that of every
// writer before it.
type rwLocker struct {
	read, write *recipeLocker
}

var _ locks.SharedLocker = (*rwLocker)(nil)

// The two sides of zk-rw's queue.
var (
	readQueue  = queue{lock: NameRW, infix: readInfix, blocker: rwBlocker(true)}
	writeQueue = queue{lock: NameRW, infix: writeInfix, blocker: rwBlocker(false)}
)

// Acquire takes the exclusive (write) side.
func (l *rwLocker) Acquire(ctx context.Context) (locks.Lease, error) { return l.write.Acquire(ctx) }

// AcquireShared takes the shared (read) side.
func (l *rwLocker) AcquireShared(ctx context.Context) (locks.Lease, error) {
	return l.read.Acquire(ctx)
}

// rwBlocker returns the blocker of one side of zk-rw: for a reader
// (writersOnly) the write- node just below name, for a writer the node of
// either kind just below it. Children that are not zk-rw nodes are
// ignored.
func rwBlocker(writersOnly bool) func(children []string, name string) (string, bool) {
	return func(children []string, name string) (string, bool) {
		type node struct {
			name  string
			seq   int64
			write bool
		}
		nodes := make([]node, 0, len(children))
		for _, c := range children {
			if seq, write, ok := rwSequence(c); ok {
				nodes = append(nodes, node{c, seq, write})
			}
		}
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].seq < nodes[j].seq })
		for i, n := range nodes {
			if n.name != name {
				continue
			}
			for j := i - 1; j >= 0; j-- {
				if nodes[j].write || !writersOnly {
					return nodes[j].name, true
				}
			}
			return "", true
		}
		return "", false
	}
}

// rwSequence parses a zk-rw node name ("_c_<guid>-write-0000000042"): its
// sequence and whether it is a writer's.
func rwSequence(name string) (seq int64, write bool, ok bool) {
	var i int
	switch {
	case strings.Contains(name, writeInfix):
		i, write = strings.LastIndex(name, writeInfix)+len(writeInfix), true
	case strings.Contains(name, readInfix):
		i = strings.LastIndex(name, readInfix) + len(readInfix)
	default:
		return 0, false, false
	}
	n, err := strconv.ParseInt(name[i:], 10, 64)
	return n, write, err == nil
}
