// Package suggest finds the names a mistyped one was probably meant to be,
// for "did you mean" hints in error messages (an unknown lock, scenario or
// verb). It is a leaf: it imports nothing of locklab.
package suggest

import (
	"fmt"
	"strings"
)

// Closest returns the candidates nearest to name: those at the least edit
// distance (insertions, deletions, substitutions and swaps of two adjacent
// letters, case ignored) when that distance is at most a quarter of name's
// length (at least 1), in the candidates' order; else the one candidate
// that name is a prefix of (3 letters at least). Nil when nothing is
// close, or when name is itself a candidate.
func Closest(name string, candidates []string) []string {
	lname := strings.ToLower(name)
	limit := max(1, len([]rune(lname))/4)
	best := limit
	var out []string
	var prefixed []string
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == lname {
			return nil
		}
		if len(lname) >= 3 && strings.HasPrefix(lc, lname) {
			prefixed = append(prefixed, c)
		}
		switch d := distance(lname, lc); {
		case d > limit:
		case d < best || out == nil:
			best, out = d, []string{c}
		case d == best:
			out = append(out, c)
		}
	}
	if len(out) == 0 && len(prefixed) == 1 {
		return prefixed
	}
	return out
}

// Hint is `; did you mean "x"?` (or `"x" or "y"`) for the names Closest
// finds, or "" when it finds none: append it to an error message.
func Hint(name string, candidates []string) string {
	c := Closest(name, candidates)
	if len(c) == 0 {
		return ""
	}
	if len(c) > 3 {
		c = c[:3]
	}
	q := make([]string, len(c))
	for i, s := range c {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "; did you mean " + strings.Join(q, " or ") + "?"
}

// distance is the optimal string alignment distance between a and b:
// Levenshtein's, with a swap of two adjacent letters costing 1.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j]: distance between ra[:i] and rb[:j]; three rows suffice.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
