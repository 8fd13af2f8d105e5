package recheck

// kindRule is what a lock's kind allows inside at once, restated from
// docs/verdicts.md ("Lock kinds"): a mutex or fair lock, nothing
// overlapping; a read-write lock ("rw"), shared visits overlapping each
// other and nothing overlapping an exclusive one; a semaphore of N
// permits, at most N inside.
type kindRule struct {
	kind    string // "" or "mutex", "rw", "semaphore", "fair"
	permits int
}

// broken reports whether the visits inside break the promise.
func (k kindRule) broken(inside []*visit) bool {
	switch k.kind {
	case "rw":
		if len(inside) < 2 {
			return false
		}
		for _, v := range inside {
			if !v.shared {
				return true
			}
		}
		return false
	case "semaphore":
		return len(inside) > max(k.permits, 1)
	}
	return len(inside) >= 2
}

// forbids returns, for v entering while inside (in order of entry) are
// there, the visits it makes a violation with, the visits whose promises
// decide whether the entry is the lock's fault, and how many of those
// pairs must be the lock's. A semaphore's entry that finds its N permits
// taken is one violation (with the first inside) and the lock's fault
// only when N of the holders inside were granted within their promise.
func (k kindRule) forbids(inside []*visit, v *visit) (forbidden, judged []*visit, need int) {
	switch k.kind {
	case "rw":
		if !v.shared {
			return inside, inside, 1
		}
		var w []*visit
		for _, o := range inside {
			if !o.shared {
				w = append(w, o)
			}
		}
		return w, w, 1
	case "semaphore":
		n := max(k.permits, 1)
		if len(inside) < n {
			return nil, nil, 0
		}
		return inside[:1], inside, n
	}
	return inside, inside, 1
}
