package checker

import (
	"context"
	"fmt"
	"sort"
)

// Inside returns the clients inside some lock's resource now, in the order
// they entered.
func (s *Shared) Inside() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.insideLocked()
}

func (s *Shared) insideLocked() []int {
	vs := make([]*visit, 0, len(s.visits))
	for _, v := range s.visits {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].id < vs[j].id })
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = v.client
	}
	return out
}

// WaitInside blocks until some client is inside the resource, has read
// the counter and not yet written it back (it is mid-critical-section,
// holding data it will write), and returns the one that entered first
// among those: the "holder" of fault scenarios. Choosing that moment makes
// a fault on the holder deterministic: pausing a client between Enter and
// Read would let it read fresh data after the pause and lose no update,
// and pausing it after its write (before its Exit) would freeze a client
// whose work is done, so the resumed holder would write nothing stale.
func (s *Shared) WaitInside(ctx context.Context) (int, error) {
	for {
		s.mu.Lock()
		if c, ok := s.firstReader(); ok {
			s.mu.Unlock()
			return c, nil
		}
		if s.waiters == nil {
			s.waiters = make(chan struct{})
		}
		ch := s.waiters
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, fmt.Errorf("wait for a holder: %w", ctx.Err())
		}
	}
}

func (s *Shared) firstReader() (int, bool) {
	var best *visit
	for _, v := range s.visits {
		if v.read && !v.wrote && (best == nil || v.id < best.id) {
			best = v
		}
	}
	if best == nil {
		return 0, false
	}
	return best.client, true
}

// ExitClient exits every visit of client still inside: a client process
// that died (or was killed) cannot exit on its own.
func (s *Shared) ExitClient(client int) {
	s.mu.Lock()
	var ids []uint64
	for id, v := range s.visits {
		if v.client == client {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		_ = s.Exit(context.Background(), id)
	}
}

// ViolationCount returns the number of violations so far (cheap, for
// progress lines).
func (s *Shared) ViolationCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}
