package locks

import (
	"context"
	"errors"
)

// Locker acquires one named lock. A Locker is bound to one client identity
// (its connections and, for reentrant locks, its owner id) and one lock name.
type Locker interface {
	// Acquire blocks until the lock is held, ctx ends, or the backend fails.
	// On ctx's end the error wraps ctx.Err(); when the backend refuses within
	// its own retry budget it is ErrNotObtained.
	Acquire(ctx context.Context) (Lease, error)
}

// Lease is one holding of a lock, returned by Acquire.
type Lease interface {
	// Token is the fencing token of this holding: strictly increasing per lock
	// name across holders, 0 when the backend cannot give one.
	Token() uint64
	// Release gives the lock up. It returns an error wrapping ErrNotHeld when
	// the lock had already been lost (expired, taken over, session gone).
	Release(ctx context.Context) error
	// Lost is closed when the holder learns it no longer holds the lock
	// (renewal found the key gone or owned by someone else, the session
	// expired or was suspended). It is never closed by Release itself.
	Lost() <-chan struct{}
}

// Sentinel errors shared by every implementation; compare with errors.Is.
var (
	// ErrNotObtained means the backend answered but the lock was held by
	// someone else and the implementation gave up (retry budget exhausted).
	ErrNotObtained = errors.New("locks: not obtained")
	// ErrNotHeld means Release (or renewal) found the lock no longer ours.
	ErrNotHeld = errors.New("locks: not held")
	// ErrLeaseLost means the lease ended while held (expiry, session loss).
	ErrLeaseLost = errors.New("locks: lease lost")
)

// NodeError is the error of one backend node among several (Redlock, quorum
// operations); several of them are combined with errors.Join.
type NodeError struct {
	Node string // address or node name
	Err  error
}

// Error implements error.
func (e *NodeError) Error() string { return e.Node + ": " + e.Err.Error() }

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }
