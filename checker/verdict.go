package checker

// The verdict vocabulary (contract values): what an expectation, a run, a
// scenario or a matrix cell came to. Scenario expectations, result.json,
// the reports, the atlas and the chaos matrix all speak it.
const (
	VerdictMet          = "met"
	VerdictFailed       = "failed"
	VerdictInconclusive = "inconclusive"
)
