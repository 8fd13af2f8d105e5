package recheck

import (
	"sort"
	"time"
)

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

// fairMargin: a client asked first when it sent its request at least this
// much before the other (docs/verdicts.md).
const fairMargin = int64(10 * time.Millisecond)

// fairOrder derives a fair lock's order figures from its visits' grant
// windows: a grant that came back before that of a client that asked
// fairMargin or more earlier is out of order, and that client's wait
// (request to reply) counts for the longest overtaken wait.
func (rn *run) fairOrder() {
	byLock := map[string][]*visit{}
	for _, v := range rn.order {
		if rn.kind[v.lock] == "fair" {
			byLock[v.lock] = append(byLock[v.lock], v)
		}
	}
	for _, vs := range byLock {
		// by reply time: each grant looks at the grants that replied after
		// it and asks whether one of them had asked a margin earlier
		sort.Slice(vs, func(i, j int) bool { return vs[i].acq < vs[j].acq })
		// minReq[i] is the earliest request among vs[i:]
		minReq := make([]int64, len(vs)+1)
		minReq[len(vs)] = 1<<63 - 1
		for i := len(vs) - 1; i >= 0; i-- {
			minReq[i] = min(minReq[i+1], vs[i].req)
		}
		// maxReq[i] is the latest request among vs[:i]
		maxReq := make([]int64, len(vs)+1)
		maxReq[0] = -1 << 63
		for i, v := range vs {
			maxReq[i+1] = max(maxReq[i], v.req)
		}
		for _, v := range vs {
			later := sort.Search(len(vs), func(k int) bool { return vs[k].acq > v.acq })
			if minReq[later] <= v.req-fairMargin {
				rn.fig.OutOfOrder++
			}
			earlier := sort.Search(len(vs), func(k int) bool { return vs[k].acq >= v.acq })
			if maxReq[earlier] >= v.req+fairMargin {
				rn.fig.MaxOvertakenWait = max(rn.fig.MaxOvertakenWait, time.Duration(v.acq-v.req))
			}
		}
	}
}
