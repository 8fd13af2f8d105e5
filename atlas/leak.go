package atlas

// mostLeaked is the largest permits_leaked_ms among runs, nil when no run
// measured it (not a semaphore, or results that predate the figure).
func mostLeaked(runs []RunSummary) *float64 {
	var most *float64
	for _, r := range runs {
		if r.PermitsLeakedMs != nil && (most == nil || *r.PermitsLeakedMs > *most) {
			v := *r.PermitsLeakedMs
			most = &v
		}
	}
	return most
}
