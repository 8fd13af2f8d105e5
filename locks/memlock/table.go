package memlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/locklab/locklab/locks"
)

// Table is one in-process lease table: per lock name the holder, its
// expiry and the last token handed out. It is safe for concurrent use; the
// zero value is not usable, call NewTable.
type Table struct {
	mu    sync.Mutex
	locks map[string]*state
}

// state is one lock name's entry. States are never deleted: a name keeps
// its token counter for the table's life.
type state struct {
	token  uint64
	holder *Lease
	// free is closed (and set to nil) when the lock becomes free; waiters
	// create it when they find the lock held. nil means nobody waits.
	free chan struct{}
}

// Default is the table every "mem" client of this process shares.
var Default = NewTable()

// NewTable returns an empty table.
func NewTable() *Table { return &Table{locks: map[string]*state{}} }

// Locker returns the locker of the lock name in t; leases last ttl
// (0: until released).
func (t *Table) Locker(name string, ttl time.Duration) *Locker {
	return &Locker{t: t, name: name, ttl: ttl}
}

// Locker acquires one lock name of a Table.
type Locker struct {
	t    *Table
	name string
	ttl  time.Duration
}

var _ locks.Locker = (*Locker)(nil)

// Acquire blocks until the lock is free (released or expired) and takes
// it, or until ctx ends (the error then wraps ctx.Err()). Waiters are woken
// by the release itself, never by polling. A ctx that has ended is never
// granted the lock, even when the release that woke the waiter came as it
// ended (a holder woken by the same end let go first).
func (l *Locker) Acquire(ctx context.Context) (locks.Lease, error) {
	t := l.t
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("mem acquire %s: %w", l.name, err)
		}
		t.mu.Lock()
		st := t.locks[l.name]
		if st == nil {
			st = &state{}
			t.locks[l.name] = st
		}
		if st.holder == nil {
			st.token++
			ls := &Lease{st: st, t: t, token: st.token, lost: make(chan struct{})}
			st.holder = ls
			if l.ttl > 0 {
				ls.timer = time.AfterFunc(l.ttl, ls.expire)
			}
			t.mu.Unlock()
			return ls, nil
		}
		if st.free == nil {
			st.free = make(chan struct{})
		}
		free := st.free
		t.mu.Unlock()
		select {
		case <-free:
		case <-ctx.Done():
			return nil, fmt.Errorf("mem acquire %s: %w", l.name, ctx.Err())
		}
	}
}

// Lease is one holding of a mem lock.
type Lease struct {
	t     *Table
	st    *state
	token uint64
	lost  chan struct{}
	timer *time.Timer
}

var _ locks.Lease = (*Lease)(nil)

// Token is the lock name's counter at this acquisition: strictly increasing
// per name.
func (ls *Lease) Token() uint64 { return ls.token }

// Lost is closed when the lease expired (its TTL ran out before Release).
func (ls *Lease) Lost() <-chan struct{} { return ls.lost }

// Release frees the lock and wakes its waiters. It returns an error
// wrapping locks.ErrNotHeld when the lease had expired (or was released
// already).
func (ls *Lease) Release(context.Context) error {
	ls.t.mu.Lock()
	defer ls.t.mu.Unlock()
	if ls.st.holder != ls {
		return fmt.Errorf("mem release token %d: %w", ls.token, locks.ErrNotHeld)
	}
	if ls.timer != nil {
		ls.timer.Stop()
	}
	ls.st.unhold()
	return nil
}

// expire ends the lease when its TTL runs out: the lock is freed and Lost
// closed, unless it was released first.
func (ls *Lease) expire() {
	ls.t.mu.Lock()
	defer ls.t.mu.Unlock()
	if ls.st.holder != ls {
		return
	}
	ls.st.unhold()
	close(ls.lost)
}

// free_ clears the holder and wakes the waiters; t.mu is held.
func (st *state) unhold() {
	st.holder = nil
	if st.free != nil {
		close(st.free)
		st.free = nil
	}
}
