package checker

// SafetyFigures are the safety counts of a run under their result names
// (docs/results.md): what the resource counts (Summary), what a result's
// run, the sums over repeated runs and an atlas cell hold, what
// expectations are checked against and what `bench check` recomputes.
// Every one of them holds this struct, so a new figure is one field here,
// its entry in SafetyNames and in fields.
type SafetyFigures struct {
	// Violations counts overlapping visit pairs.
	Violations int `json:"violations"`
	// LostUpdates is writes applied minus the counter at the end (never
	// negative).
	LostUpdates int `json:"lost_updates"`
	// StaleTokens counts writes with a token lower than one seen before
	// (applied or not); StaleRejected those that enforce rejected,
	// StaleAccepted those applied.
	StaleTokens   int `json:"stale_tokens"`
	StaleRejected int `json:"stale_rejected"`
	StaleAccepted int `json:"stale_accepted"`
	// Incidents counts maximal groups of overlapping visits (Incident);
	// each is a lock fault (the lock granted again within the earlier
	// holder's promise) or a client fault (the earlier holder stayed
	// inside past its promise).
	Incidents    int `json:"incidents"`
	LockFaults   int `json:"lock_faults"`
	ClientFaults int `json:"client_faults"`
	// DuplicateTokens and TokenRegressions: see tokenFigures.
	DuplicateTokens  int `json:"duplicate_tokens"`
	TokenRegressions int `json:"token_regressions"`
	// ZeroTokens counts grants without a token (token 0) from a lock that
	// reports fencing: its writes pass any resource-side check unchecked,
	// so it is the fencing source's defect, as duplicates are.
	ZeroTokens int `json:"zero_tokens"`
	// ChangedReads counts shared visits (readers of a read-write lock)
	// that read the counter at entry and again before leaving and saw it
	// change: a writer wrote while they read. Each also counts as a lost
	// update.
	ChangedReads int `json:"changed_reads"`
}

// SafetyNames are the result names of the SafetyFigures fields, in the
// order Figures lists them.
var SafetyNames = []string{"violations", "incidents", "lock_faults", "client_faults", "lost_updates",
	"stale_tokens", "stale_rejected", "stale_accepted", "duplicate_tokens", "token_regressions", "zero_tokens", "changed_reads"}

// fields are pointers to s's fields in the order of SafetyNames.
func (s *SafetyFigures) fields() []*int {
	return []*int{&s.Violations, &s.Incidents, &s.LockFaults, &s.ClientFaults, &s.LostUpdates,
		&s.StaleTokens, &s.StaleRejected, &s.StaleAccepted, &s.DuplicateTokens, &s.TokenRegressions, &s.ZeroTokens, &s.ChangedReads}
}

// Add adds every figure of o to s's.
func (s *SafetyFigures) Add(o SafetyFigures) {
	of := o.fields()
	for i, p := range s.fields() {
		*p += *of[i]
	}
}

// Figures returns the values of s in the order of SafetyNames.
func (s SafetyFigures) Figures() []int {
	fs := s.fields()
	out := make([]int, len(fs))
	for i, p := range fs {
		out[i] = *p
	}
	return out
}

// Get returns the figure called name (one of SafetyNames); ok is false
// for any other name.
func (s SafetyFigures) Get(name string) (v int, ok bool) {
	for i, n := range SafetyNames {
		if n == name {
			return *s.fields()[i], true
		}
	}
	return 0, false
}
