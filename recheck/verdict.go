package recheck

// The rule of docs/verdicts.md, restated from it: an overlapping pair is
// the lock's fault when both visits entered within their own promises and
// no ordering of the two grants that their [request, reply] windows allow
// acquits the lock. An ordering acquits it when the later grant fell
// outside the earlier holder's promise (at a tie, outside both). A client
// whose clock is known only to within u has its window widened by u and
// every bound of its promise moved inwards by u. A renewal covers from its
// report on. Times are integer nanoseconds.

// holds says whether v's promise certainly runs at instant t.
func holds(v *visit, t int64) bool {
	if v.unbounded {
		return true
	}
	u := v.uncertainty
	if v.validUntil != 0 && t < v.validUntil-u {
		return true
	}
	for _, r := range v.renewals {
		if r[0]+u <= t && t < r[1]-u {
			return true
		}
	}
	return false
}

// lapses returns the instants at which a stretch where v's promise does
// not run may begin: the ends of its promise and of its renewals. With
// lo, they are the only places an instant of [lo, hi] outside the
// promise needs to be looked for.
func lapses(v *visit) []int64 {
	if v.unbounded {
		return nil
	}
	u := v.uncertainty
	var out []int64
	if v.validUntil != 0 {
		out = append(out, v.validUntil-u)
	}
	for _, r := range v.renewals {
		out = append(out, r[1]-u)
	}
	return out
}

// acquit looks for an instant t in [lo, hi] at which none of vs's
// promises runs.
func acquit(lo, hi int64, vs ...*visit) bool {
	if lo > hi {
		return false
	}
	cands := []int64{lo}
	for _, v := range vs {
		for _, t := range lapses(v) {
			if t > lo && t <= hi {
				cands = append(cands, t)
			}
		}
	}
	for _, t := range cands {
		free := true
		for _, v := range vs {
			if holds(v, t) {
				free = false
				break
			}
		}
		if free {
			return true
		}
	}
	return false
}

// pairIsLocks reports whether the overlapping pair a, b is a lock fault.
func pairIsLocks(a, b *visit) bool {
	if !holds(a, a.enter) || !holds(b, b.enter) {
		return false // entered after its own promise: that client's doing
	}
	aLo, aHi := a.req-a.uncertainty, a.acq+a.uncertainty
	bLo, bHi := b.req-b.uncertainty, b.acq+b.uncertainty
	switch {
	case acquit(max(bLo, aLo+1), bHi, a): // a first, b granted outside a's promise
	case acquit(max(aLo, bLo+1), aHi, b): // b first, a granted outside b's promise
	case acquit(max(aLo, bLo), min(aHi, bHi), a, b): // at once, outside both
	default:
		return true
	}
	return false
}
