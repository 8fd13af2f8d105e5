package atlas

import (
	"fmt"
	"io"
	"strings"

	"github.com/locklab/locklab/report"
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

// Claim is "holds" when the row agrees with 2N+1, else "CONTRADICTED".
func (q Quorum) Claim() string {
	if q.Available != q.Expected {
		return "CONTRADICTED"
	}
	return "holds"
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
		fmt.Fprintf(w, "| %s | %d of %d | %d | %s | %v | %v | %s |\n", q.Lock, q.K, q.N, (q.N-1)/2, pct(q.Availability), q.Available, q.Expected, q.Claim())
	}
}

// FencingBroke is what duplicate tokens, token regressions and grants
// without a token (zero_tokens) mean.
const FencingBroke = "the fencing source itself broke: no resource-side check can repair this"

// basis is the sentence saying what c's verdict rests on: how many runs,
// with the fault applied, how much evidence in the fault window, and the
// damage counted.
func basis(c *CellResult) string {
	switch {
	case c.Verdict == NotApplicable:
		return "not-applicable: " + c.NotApplicable
	case c.Runs == 0:
		return fmt.Sprintf("%s: no run found (%d missing)", c.Verdict, c.Missing)
	}
	var parts []string
	switch c.Verdict {
	case Unsafe, UnsafeWithoutFencing:
		s := fmt.Sprintf("%d of %d runs with an incident (%s, %s)", c.RunsWithIncidents, c.Runs,
			count(c.LockFaults, "lock fault"), count(c.ClientFaults, "client fault"))
		if c.LostUpdates > 0 || c.StaleAccepted > 0 {
			s += fmt.Sprintf(", %s, %s accepted", count(c.LostUpdates, "lost update"), count(c.StaleAccepted, "stale write"))
		}
		if c.WithoutFault > 0 {
			s += fmt.Sprintf("; %s without any fault (before the fault or a lease after it: %s)", count(c.WithoutFault, "incident"), report.BrokenWithoutFaults)
		}
		parts = append(parts, s)
		if tokensBroke(c.SafetyFigures) {
			parts = append(parts, tokenCounts(c)+": "+FencingBroke)
		}
	default:
		parts = append(parts, applied(c)+evidence(c))
	}
	var inconclusive int
	reason := ""
	for _, r := range c.RunList {
		if r.Verdict == Inconclusive || r.Error != "" || r.Verdict == "" {
			inconclusive++
			if reason == "" {
				reason = r.Reason
				if r.Error != "" {
					reason = r.Error
				}
			}
		}
	}
	if inconclusive > 0 {
		s := fmt.Sprintf("%s without evidence", count(inconclusive, "run"))
		if reason != "" {
			s += " (" + reason + ")"
		}
		parts = append(parts, s)
	}
	if c.Missing > 0 {
		parts = append(parts, count(c.Missing, "run")+" missing")
	}
	return c.Verdict + ": " + strings.Join(parts, "; ")
}

// applied is "5 of 5 runs with the fault applied", or "5 runs, no fault"
// for a control without faults.
func applied(c *CellResult) string {
	faults, ok := 0, 0
	for _, r := range c.RunList {
		faults += r.Faults
		if r.Faults > 0 && r.FaultsApplied == r.Faults {
			ok++
		}
	}
	if faults == 0 {
		return fmt.Sprintf("%d of %d runs without incident, no fault applied", c.Runs-c.RunsWithIncidents, c.Runs)
	}
	return fmt.Sprintf("%d of %d runs with the fault applied", ok, c.Runs)
}

// evidence is ", 212 visits in the window, 2-4 contenders" from the runs'
// visits in the fault window and the clients that contended there (by a
// visit, or waiting while another held the lock), else the fewest visits
// after a fault's start; "" when the runs recorded neither.
func evidence(c *CellResult) string {
	if s := exposureEvidence(c); s != "" {
		return s
	}
	visits, lo, hi, after := 0, -1, 0, -1
	for _, r := range c.RunList {
		visits += r.VisitsInWindow
		if r.VisitsInWindow > 0 {
			if lo < 0 || r.ContendersInWindow < lo {
				lo = r.ContendersInWindow
			}
			hi = max(hi, r.ContendersInWindow)
		}
		if r.VisitsAfter >= 0 && (after < 0 || r.VisitsAfter < after) {
			after = r.VisitsAfter
		}
	}
	switch {
	case visits > 0 && lo == hi:
		return fmt.Sprintf(", %s in the window, %s", count(visits, "visit"), count(hi, "contender"))
	case visits > 0:
		return fmt.Sprintf(", %s in the window, %d-%d contenders", count(visits, "visit"), lo, hi)
	case after >= 0:
		return fmt.Sprintf(", at least %s begun after each fault's start", count(after, "visit"))
	}
	return ""
}

// exposureEvidence is ", the race opened in 5 runs (120-310 ms, at least
// 4 same-key requests each)" or ", the lock held its holder through the
// fault in 5 runs (at least 6 refused requests each)", from the runs'
// exposure; "" when no run measured it.
func exposureEvidence(c *CellResult) string {
	var exposed, held, minReq int
	var lo, hi float64
	first := true
	for _, r := range c.RunList {
		switch r.Exposure {
		case "exposed":
			exposed++
			if first || r.ExposureMs < lo {
				lo = r.ExposureMs
			}
			hi = max(hi, r.ExposureMs)
		case "held":
			held++
		default:
			continue
		}
		if first || r.Requests < minReq {
			minReq = r.Requests
		}
		first = false
	}
	var parts []string
	if exposed > 0 {
		parts = append(parts, fmt.Sprintf("the race opened in %s (%.0f-%.0f ms)", count(exposed, "run"), lo, hi))
	}
	if held > 0 {
		parts = append(parts, fmt.Sprintf("the lock held its holder through the fault in %s", count(held, "run")))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf(", %s, at least %s each", strings.Join(parts, "; "), count(minReq, "same-key request"))
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// LockReading is what the atlas says of one lock, derived from its cells.
type LockReading struct {
	Lock    string `json:"lock"`
	Fences  bool   `json:"fences"`
	Reading string `json:"reading"`
}

// Readings derives one short reading per lock from its cells (never
// written by hand): under which families the lock granted twice, under
// which only fencing kept it safe, where its tokens broke, where the
// evidence is missing.
func Readings(a *Atlas) []LockReading {
	var out []LockReading
	for _, l := range a.Locks {
		var unsafe, uwf, broke, inconclusive, free []string
		fences, applicable, safe := false, 0, 0
		for _, f := range a.Families {
			c := a.Cell(l, f.Name)
			if c == nil || c.Verdict == NotApplicable || c.Verdict == Held {
				continue // a control that held is no safety evidence
			}
			fences = fences || c.Fences
			applicable++
			if c.WithoutFault > 0 {
				free = append(free, f.Name)
			}
			if tokensBroke(c.SafetyFigures) {
				broke = append(broke, f.Name)
			}
			switch c.Verdict {
			case Unsafe:
				if c.LockFaults > 0 {
					unsafe = append(unsafe, f.Name)
				}
			case UnsafeWithoutFencing:
				uwf = append(uwf, f.Name)
			case Inconclusive:
				inconclusive = append(inconclusive, f.Name)
			case Safe:
				safe++
			}
		}
		r := reading(fences, applicable, safe, unsafe, uwf, broke, inconclusive)
		if len(free) > 0 {
			r = report.BrokenWithoutFaults + ": incidents with no fault to blame in " + strings.Join(free, ", ") + "; " + r
		}
		out = append(out, LockReading{Lock: l, Fences: fences, Reading: r})
	}
	return out
}

func reading(fences bool, applicable, safe int, unsafe, uwf, broke, inconclusive []string) string {
	if applicable == 0 {
		return "no family of the atlas applies to it"
	}
	join := func(fs []string) string { return strings.Join(fs, ", ") }
	var parts []string
	switch {
	case len(unsafe) > 0:
		parts = append(parts, "unsafe: "+join(unsafe)+" can grant it twice (lock faults), which fencing cannot repair")
		if len(uwf) > 0 {
			word := "only with fencing"
			if !fences {
				word = "unsafe without fencing, which it does not offer,"
			}
			parts = append(parts, word+" under "+join(uwf))
		}
	case len(uwf) > 0 && fences && len(broke) == 0 && len(inconclusive) == 0:
		parts = append(parts, "safe under every fault of the atlas only with fencing: "+join(uwf)+" let a holder outlive its lease")
	case len(uwf) > 0 && fences && len(broke) == 0:
		parts = append(parts, "safe only with fencing: "+join(uwf)+" let a holder outlive its lease")
	case len(uwf) > 0:
		parts = append(parts, "unsafe without fencing under "+join(uwf)+" (a holder outlived its lease)")
		if !fences {
			parts[len(parts)-1] += ", and it gives no fencing tokens"
		}
	case len(broke) == 0 && len(inconclusive) == 0:
		return fmt.Sprintf("safe under every fault of the atlas it was tried with (%d of %d families)", safe, applicable)
	case len(broke) == 0:
		parts = append(parts, fmt.Sprintf("safe under %d of %d families", safe, applicable))
	}
	if len(broke) > 0 {
		s := "its fencing tokens broke under " + join(broke) + " (duplicates, regressions or grants without a token: no resource-side check repairs this)"
		if len(parts) == 0 {
			s = "unsafe: " + s
		}
		parts = append(parts, s)
	}
	if len(inconclusive) > 0 {
		parts = append(parts, "no evidence yet under "+join(inconclusive))
	}
	return strings.Join(parts, "; ")
}
