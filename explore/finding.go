package explore

import (
	"slices"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/report"
)

// Outcomes of one explored run.
const (
	Safe         = "safe"
	Unsafe       = "unsafe"
	Inconclusive = "inconclusive" // a fault did not bite, too few visits, a run error
)

// What broke in an unsafe run, most severe first: the contract names of
// the result fields (docs/results.md), with dashes.
const (
	LockFault       = "lock-fault"       // the lock granted again inside an earlier holder's promise
	DuplicateToken  = "duplicate-token"  // two holders got one fencing token
	TokenRegression = "token-regression" // a later holder got a lower token
	ClientFault     = "client-fault"     // a holder stayed inside after its promise ran out
	LostUpdate      = "lost-update"      // the counter lost a write
)

// severity orders what broke, most severe first.
var severity = []string{LockFault, DuplicateToken, TokenRegression, ClientFault, LostUpdate}

// brokenFields maps what broke to the expectation field that states it.
var brokenFields = map[string]string{
	LockFault: "lock_faults", DuplicateToken: "duplicate_tokens", TokenRegression: "token_regressions",
	ClientFault: "client_faults", LostUpdate: "lost_updates",
}

// Outcome is what one run showed.
type Outcome struct {
	// Verdict is Safe, Unsafe or Inconclusive.
	Verdict string `json:"verdict"`
	// Broke is the most severe thing that broke (unsafe runs).
	Broke string `json:"broke,omitempty"`
	// Bit are the sorted fault types that applied and were not seen not
	// to bite.
	Bit []string `json:"bit,omitempty"`
	// Opened are the sorted fault types of the faults that opened the race
	// they exist for (report.Fault.Exposed): a holder was inside while the
	// lock's state no longer protected it.
	Opened []string `json:"opened,omitempty"`
	// Reason says why a run is inconclusive.
	Reason string `json:"reason,omitempty"`
}

// Judge reads one run's result. A run with any unsafe figure is unsafe
// whatever its evidence; otherwise a run without full evidence (a fault
// that did not bite or apply, too few visits, an error) is inconclusive:
// counted, never a finding, never safe.
func Judge(r report.Run) Outcome {
	var o Outcome
	for _, f := range r.Faults {
		if f.Error == "" && (f.Bit == nil || *f.Bit) && !slices.Contains(o.Bit, f.Type) {
			o.Bit = append(o.Bit, f.Type)
		}
		if f.Exposed != nil && *f.Exposed && !slices.Contains(o.Opened, f.Type) {
			o.Opened = append(o.Opened, f.Type)
		}
	}
	slices.Sort(o.Bit)
	slices.Sort(o.Opened)
	o.Broke = broke(r)
	switch {
	case o.Broke != "":
		o.Verdict = Unsafe
	case r.Error != "" || !r.Complete:
		o.Verdict, o.Reason = Inconclusive, strings.TrimSpace("run error: "+r.Error)
	case r.Verdict == checker.VerdictMet:
		o.Verdict = Safe
	default:
		o.Verdict, o.Reason = Inconclusive, r.VerdictReason
	}
	return o
}

// broke names the most severe thing that broke in r, "" when nothing.
func broke(r report.Run) string {
	switch {
	case r.LockFaults > 0:
		return LockFault
	case r.DuplicateTokens > 0:
		return DuplicateToken
	case r.TokenRegressions > 0:
		return TokenRegression
	case r.ClientFaults > 0:
		return ClientFault
	case r.LostUpdates > 0:
		return LostUpdate
	}
	return ""
}

// Reproduces reports whether r shows what broke.
func Reproduces(r report.Run, what string) bool {
	switch what {
	case LockFault:
		return r.LockFaults > 0
	case DuplicateToken:
		return r.DuplicateTokens > 0
	case TokenRegression:
		return r.TokenRegressions > 0
	case ClientFault:
		return r.ClientFaults > 0
	case LostUpdate:
		return r.LostUpdates > 0
	}
	return false
}

// Signature names a finding: the lock, what broke and the fault types
// that bit ("none" without one), e.g. redis-cad--lock-fault--restart.
// Runs with one signature are one finding.
func Signature(lock string, o Outcome) string {
	types := "none"
	if len(o.Bit) > 0 {
		types = strings.Join(o.Bit, "+")
	}
	return lock + "--" + o.Broke + "--" + types
}

// Classify says in a few words what kind of finding a signature is: the
// lock's own design (a lock broken by design, or unsafe with no fault
// at all), a server-side fault, a client-side pause or cut, or the
// network.
func Classify(lock string, o Outcome) string {
	spec, _ := locks.Lookup(lock)
	what := strings.ReplaceAll(o.Broke, "-", " ")
	switch {
	case len(o.Bit) == 0 && spec.Broken:
		return what + " without faults: broken by design"
	case len(o.Bit) == 0:
		return what + " without faults"
	}
	var sides []string
	for _, t := range o.Bit {
		side := sideOf(t)
		if !slices.Contains(sides, side) {
			sides = append(sides, side)
		}
	}
	s := what + " under " + strings.Join(sides, ", ") + " faults"
	if spec.Broken {
		s += " (lock broken by design)"
	}
	return s
}

// sideOf is where a fault type acts, read off its row of the fault
// table: a client, a server, or the network between them.
func sideOf(typ string) string {
	t, _ := faults.Lookup(typ)
	switch t.Target {
	case faults.OnClient:
		return "client"
	case faults.OnServer:
		return "server"
	}
	return "network"
}
