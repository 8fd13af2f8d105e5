package checker

import "time"

// entryBucket is the resolution of VisitsAfter.
const entryBucket = 100 * time.Millisecond

func (s *Shared) countEntry(now time.Duration) {
	i := max(int(now/entryBucket), 0)
	for len(s.entries) <= i {
		s.entries = append(s.entries, 0)
	}
	s.entries[i]++
}

// VisitsAfter returns how many visits began after t (since base): the
// evidence that a fault starting at t was exercised. It counts whole
// 100ms buckets after the one holding t, so it never counts a visit that
// began before t.
func (s *Shared) VisitsAfter(t time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i := max(int(t/entryBucket)+1, 0); i < len(s.entries); i++ {
		n += s.entries[i]
	}
	return n
}
