package locks

import (
	"context"
	"fmt"
	"strconv"
)

// Kind says what a lock promises about holders inside at once: the
// checker judges each lock by its own kind's promise.
type Kind string

// Lock kinds (contract spellings in results and reports).
const (
	// KindMutex: one holder at a time.
	KindMutex Kind = "mutex"
	// KindRW: a read-write lock. Shared holders (readers) may overlap each
	// other; an exclusive holder (writer) overlaps nobody.
	KindRW Kind = "rw"
	// KindSemaphore: at most Permits holders inside at once.
	KindSemaphore Kind = "semaphore"
	// KindFair: a mutex that also promises grants in request order.
	KindFair Kind = "fair"
)

// KindOf returns the spec's kind; an empty Kind is a mutex.
func (s Spec) KindOf() Kind {
	if s.Kind == "" {
		return KindMutex
	}
	return s.Kind
}

// SharedLocker is implemented by the Lockers of read-write locks: Acquire
// takes the exclusive (write) side, AcquireShared the shared (read) side.
// The Lease it returns behaves as Acquire's.
type SharedLocker interface {
	Locker
	AcquireShared(ctx context.Context) (Lease, error)
}

// PermitsOption is the lock option of semaphores: how many holders may be
// inside at once.
const PermitsOption = "permits"

// DefaultPermits is a semaphore's permit count when the scenario sets none.
const DefaultPermits = 3

// PermitsOptionSpec is the option every semaphore declares.
func PermitsOptionSpec() Option {
	return Option{
		Name:    PermitsOption,
		Default: strconv.Itoa(DefaultPermits),
		Doc:     "holders allowed inside at once (a semaphore's permits)",
		Check: func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				return fmt.Errorf("permits %q: want a whole number from 1 to 1000", v)
			}
			return nil
		},
	}
}

// Permits returns the permit count a semaphore's options give (the
// default when unset or unreadable: options are validated before use).
func Permits(opts map[string]string) int {
	if n, err := strconv.Atoi(opts[PermitsOption]); err == nil && n >= 1 {
		return n
	}
	return DefaultPermits
}
