package explore

import (
	"slices"
	"strings"
)

// RootCause is what findings come down to once shrunk: one lock, one
// breakage and one minimal set of fault types. Findings that differ only
// in which harmless extra fault happened to bite are variants of one root
// cause.
type RootCause struct {
	Lock  string `json:"lock"`
	Broke string `json:"broke"`
	// Faults are the minimal scenario's sorted fault types ("none": it
	// breaks without a fault); for a root cause not shrunk, the fault
	// types that bit in its runs.
	Faults []string `json:"faults"`
	// Shrunk is false when no finding of it was shrunk (the budget ran
	// out first): its fault types may include harmless ones. Stopped says
	// its shrinking began but the budget ran out: Faults and Minimal are
	// those of the last step kept, not a minimal scenario.
	Shrunk  bool `json:"shrunk"`
	Stopped bool `json:"stopped,omitempty"`
	// Minimal, Repro and the rate are those of its best shrunk finding
	// (the highest reproduction rate).
	Minimal    string  `json:"minimal,omitempty"`
	Repro      string  `json:"repro,omitempty"`
	Reproduced int     `json:"reproduced"`
	Tries      int     `json:"tries"`
	Rate       float64 `json:"rate"`
	RateLow    float64 `json:"rate_low"`
	RateHigh   float64 `json:"rate_high"`
	// Variants are the signatures of the findings that led to it; Runs
	// their unsafe runs; FirstAtS when the first was found.
	Variants []string `json:"variants"`
	Runs     int      `json:"runs"`
	FirstAtS float64  `json:"first_at_s"`
}

// Name is the root cause's name: lock--breakage--fault+types.
func (c RootCause) Name() string {
	return c.Lock + "--" + c.Broke + "--" + strings.Join(c.Faults, "+")
}

// RootCauses groups findings into root causes, most severe breakage
// first, then by lock and fault count. A shrunk (or subsumed) finding
// joins the root cause of its minimal fault types; a finding not shrunk
// stands for itself with the types that bit, one whose shrinking the
// budget stopped with those of its last step kept.
func RootCauses(fs []*Finding) []RootCause {
	byKey := map[string]*RootCause{}
	var keys []string
	for _, f := range fs {
		// A stopped shrinking keeps its last step, if it took one.
		types, shrunk, stopped := f.FaultTypes, Shrunk(f), stoppedMidShrink(f) && f.Minimal != ""
		if shrunk || stopped {
			types = f.MinimalTypes
		}
		if len(types) == 0 {
			types = []string{"none"}
		}
		key := f.Lock + "\x00" + f.Broke + "\x00" + strings.Join(types, "+")
		if !shrunk {
			key += "\x00unshrunk"
		}
		c := byKey[key]
		if c == nil {
			c = &RootCause{Lock: f.Lock, Broke: f.Broke, Faults: slices.Clone(types), Shrunk: shrunk, Stopped: stopped, FirstAtS: f.FirstAtS}
			byKey[key] = c
			keys = append(keys, key)
		}
		c.Variants = append(c.Variants, f.Signature)
		c.Runs += len(f.Runs)
		c.FirstAtS = min(c.FirstAtS, f.FirstAtS)
		c.Stopped = c.Stopped || stopped
		if (shrunk || stopped) && (c.Minimal == "" || f.Rate > c.Rate) {
			c.Minimal, c.Repro = f.Minimal, f.Repro
			c.Reproduced, c.Tries, c.Rate, c.RateLow, c.RateHigh = f.Reproduced, f.Tries, f.Rate, f.RateLow, f.RateHigh
		}
	}
	out := make([]RootCause, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	slices.SortStableFunc(out, func(a, b RootCause) int {
		if d := slices.Index(severity, a.Broke) - slices.Index(severity, b.Broke); d != 0 {
			return d
		}
		if d := strings.Compare(a.Lock, b.Lock); d != 0 {
			return d
		}
		return len(a.Faults) - len(b.Faults)
	})
	return out
}

// Shrunk reports whether f's shrinking ended (done or rare) or f was
// subsumed by a finding whose shrinking did: its minimal fault types are
// a root cause's.
func Shrunk(f *Finding) bool {
	return f.Minimal != "" && (f.Shrink == "done" || f.Shrink == "rare" || f.Shrink == "subsumed")
}

// unshrunk counts the findings not shrunk: never started, or stopped by
// the budget or an interrupt.
func unshrunk(fs []*Finding) int {
	n := 0
	for _, f := range fs {
		if !Shrunk(f) {
			n++
		}
	}
	return n
}

// stoppedMidShrink reports whether f's shrinking began and was cut short
// by the budget or an interrupt.
func stoppedMidShrink(f *Finding) bool { return f.Shrink != "" && !Shrunk(f) }

// stopped counts the findings whose shrinking began and was cut short.
func stopped(fs []*Finding) int {
	n := 0
	for _, f := range fs {
		if stoppedMidShrink(f) {
			n++
		}
	}
	return n
}
