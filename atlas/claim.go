package atlas

import (
	"fmt"
	"io"
)

// Quorum is one row of the 2N+1 check: k of n Redlock primaries killed.
type Quorum struct {
	Lock string `json:"lock"`
	K    int    `json:"k"`
	N    int    `json:"n"`
	// Availability is the completion rate after the kill relative to the
	// lock's baseline (-1: unknown).
	Availability float64 `json:"availability"`
	// Available is true when critical sections completed after the kill
	// (a visit began after the kill) in every run; Expected is k <= (n-1)/2.
	Available bool `json:"available"`
	Expected  bool `json:"expected"`
}

// Quorums reads the kill-k-of-n cells of a: "to survive N failed nodes
// Redlock needs 2N+1 masters" holds when Available == Expected in every
// row.
func Quorums(a *Atlas) []Quorum {
	var out []Quorum
	for _, c := range a.Cells {
		var k, n int
		if _, err := fmt.Sscanf(c.Family, "kill-%d-of-%d", &k, &n); err != nil || c.Verdict == NotApplicable || c.Runs == 0 {
			continue
		}
		q := Quorum{Lock: c.Lock, K: k, N: n, Availability: c.AvailDuring, Expected: k <= (n-1)/2, Available: true}
		for _, r := range c.RunList {
			// A visit begun after the kill: a completion right after it may
			// belong to a visit that began before.
			if r.VisitsAfter <= 0 {
				q.Available = false
			}
		}
		out = append(out, q)
	}
	return out
}

func quorumSection(w io.Writer, a *Atlas) {
	qs := Quorums(a)
	if len(qs) == 0 {
		return
	}
	fmt.Fprint(w, "\n## The 2N+1 claim\n\n\"To survive N failed nodes Redlock needs 2N+1 masters\": k of n primaries killed, available iff k <= N.\n\n")
	fmt.Fprintln(w, "| lock | killed | N | availability after the kill | available | expected | claim |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, q := range qs {
		ok := "holds"
		if q.Available != q.Expected {
			ok = "CONTRADICTED"
		}
		fmt.Fprintf(w, "| %s | %d of %d | %d | %s | %v | %v | %s |\n", q.Lock, q.K, q.N, (q.N-1)/2, pct(q.Availability), q.Available, q.Expected, ok)
	}
}
