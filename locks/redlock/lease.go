package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/locks"
)

// Lease is one Redlock holding. Its methods are safe for concurrent use.
//
// A holder is entitled to the lock only until ValidUntil: past it, the keys
// of a majority may have expired and another client may hold the lock. So
// Lost is closed when the validity runs out — at once for a lease without
// renewal, or when no renewal reached a quorum in time — or when a renewal
// finds that a quorum can no longer be reached because too many nodes no
// longer hold our value (a node restarted empty, its clock jumped).
type Lease struct {
	l        *Locker
	value    string
	start    time.Time // before the first SET was sent
	validity time.Duration
	acked    []bool

	mu    sync.Mutex
	until time.Time

	lost     chan struct{}
	lostOnce sync.Once
	cancel   context.CancelFunc // stops the keeper
	done     chan struct{}      // closed when the keeper has returned
	released atomic.Bool
}

var _ locks.Lease = (*Lease)(nil)

func newLease(l *Locker, value string, start time.Time, validity time.Duration, acked []bool) *Lease {
	c := l.c
	ctx, cancel := context.WithCancel(context.Background())
	s := &Lease{
		l: l, value: value, start: start, validity: validity, acked: acked,
		until:  start.Add(c.ttl - c.drift),
		lost:   make(chan struct{}),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go s.keep(ctx)
	return s
}

// Token returns 0: Redlock has no fencing token. The random value of a
// holding is unique but not ordered, and no counter can be drawn
// atomically with a majority of independent nodes taking the key (two
// holders' INCRs on different majorities need not be ordered like their
// holdings), which is the heart of Kleppmann's critique of Redlock.
func (s *Lease) Token() uint64 { return 0 }

// Validity is the time the holder was entitled to when it acquired the
// lock: ttl - elapsed - drift, where elapsed is how long the attempt took.
// A slow node in the majority shrinks it.
func (s *Lease) Validity() time.Duration { return s.validity }

// ValidUntil is when the holder's entitlement ends: the acquisition's
// start + ttl - drift, moved forward by every renewal that reached a
// quorum (renew option).
func (s *Lease) ValidUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.until
}

// Promise is ValidUntil: start + ttl - drift, moved by each renewal that
// reached a quorum, from that renewal's send time.
func (s *Lease) Promise() locks.Promise { return locks.Promise{Until: s.ValidUntil()} }

// Nodes names the primaries ("redis-0", ...) that took the key when the
// lock was acquired.
func (s *Lease) Nodes() []string {
	var out []string
	for i, ok := range s.acked {
		if ok {
			out = append(out, s.l.c.nodes[i].name)
		}
	}
	return out
}

// Lost is closed when the holding ends without Release: the validity ran
// out (not renewed, or no renewal reached a quorum before ValidUntil), or a
// renewal found our value gone from so many nodes that no quorum is left.
// It is never closed by Release itself.
func (s *Lease) Lost() <-chan struct{} { return s.lost }

func (s *Lease) markLost() { s.lostOnce.Do(func() { close(s.lost) }) }

// keep closes Lost when the validity runs out and, with the renew option,
// extends the keys every ttl/3, until Release cancels ctx.
func (s *Lease) keep(ctx context.Context) {
	defer close(s.done)
	c := s.l.c
	log := c.log.With("key", s.l.key)
	expiry := time.NewTimer(time.Until(s.ValidUntil()))
	defer expiry.Stop()
	every := max(c.ttl/3, time.Millisecond)
	var renewC <-chan time.Time
	renew := time.NewTimer(time.Until(s.start.Add(every)))
	defer renew.Stop()
	if c.renew {
		renewC = renew.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-expiry.C:
			log.Warn("lease lost: validity ran out", "renew", c.renew)
			s.markLost()
			return
		case <-renewC:
		}
		t0 := time.Now()
		if !t0.Before(s.ValidUntil()) {
			log.Warn("lease lost: validity ran out before the renewal")
			s.markLost()
			return
		}
		rs := c.each(ctx, nil, c.nodeTimeout, s.l.extendOne(s.value))
		if ctx.Err() != nil {
			return // released while the renewal ran
		}
		elapsed := time.Since(t0)
		ok, refused, err := tally(rs, nil)
		switch {
		case ok >= c.quorum && c.ttl-elapsed-c.drift > 0:
			s.mu.Lock()
			s.until = t0.Add(c.ttl - c.drift)
			s.mu.Unlock()
			expiry.Reset(time.Until(s.ValidUntil()))
			renew.Reset(time.Until(t0.Add(every)))
		case refused > len(rs)-c.quorum:
			log.Warn("lease lost: our value is gone from too many nodes", "extended", ok, "refused", refused, "quorum", c.quorum)
			s.markLost()
			return
		default:
			log.Debug("renewal short of a quorum", "extended", ok, "quorum", c.quorum, "err", err,
				"left", time.Until(s.ValidUntil()))
			renew.Reset(every / 3) // retry sooner
		}
	}
}

// Release deletes the key from every primary (compare-and-delete, in
// parallel, each bounded by ctx and max(node timeout, ttl/10)), after
// stopping the renewal.
// It returns nil when a quorum deleted our value. It returns an error
// wrapping locks.ErrNotHeld when the lease was already released, when the
// validity had run out before Release (the keys left are deleted all the
// same, but another client may have held the lock meanwhile), or when too
// few nodes still held our value for a quorum. Otherwise, when failed
// nodes leave it unknown, the error joins their *locks.NodeError. Nodes
// that did not confirm the delete are sent it again in the background
// (janitor.go); a key the janitor cannot delete expires on its own.
func (s *Lease) Release(ctx context.Context) error {
	l := s.l
	c := l.c
	if !s.released.CompareAndSwap(false, true) {
		return fmt.Errorf("release %s: already released: %w", l.key, locks.ErrNotHeld)
	}
	s.cancel()
	<-s.done // no renewal in flight from here on
	late := time.Since(s.ValidUntil())
	rs := c.each(ctx, nil, c.releaseTimeout(), l.releaseOne(s.value))
	c.retryLater(l.key, s.value, rs)
	ok, refused, err := tally(rs, nil)
	switch {
	case late >= 0:
		return fmt.Errorf("release %s: validity ran out %v before release (%d of %d nodes still held our value): %w",
			l.key, late.Round(time.Millisecond), ok, len(rs), errors.Join(locks.ErrNotHeld, err))
	case ok >= c.quorum:
		if err != nil {
			c.log.Debug("release: some nodes failed; their keys expire on their own", "key", l.key, "err", err)
		}
		return nil
	case refused > len(rs)-c.quorum:
		return fmt.Errorf("release %s: our value was on %d of %d nodes, %d needed: %w",
			l.key, ok, len(rs), c.quorum, errors.Join(locks.ErrNotHeld, err))
	}
	return fmt.Errorf("release %s: %d of %d nodes deleted the key, %d needed: %w", l.key, ok, len(rs), c.quorum, err)
}
