package report

import (
	"fmt"
	"strings"

	"github.com/locklab/locklab/checker"
)

// The two classes of incident, one sentence each for a design review.
const (
	LockFaultMeaning   = "lock fault: the lock granted a second holder while the first one's promised validity still ran; nothing on the client side repairs this."
	ClientFaultMeaning = "client fault: a holder stayed inside after its promise had run out (a pause, a partition); fencing repairs this (the resource rejects the older token)."
)

// RunVerdict is a run's verdict on its expectations: checker.VerdictFailed for a
// run that failed, else its own verdict; results written before verdicts
// existed only have expect_met. "" when the run had no expectation.
func RunVerdict(run *Run) string {
	switch {
	case run.Error != "":
		return checker.VerdictFailed
	case run.Verdict != "":
		return run.Verdict
	case run.ExpectMet != nil && !*run.ExpectMet:
		return checker.VerdictFailed
	case run.ExpectMet != nil:
		return checker.VerdictMet
	}
	return ""
}

// resultVerdict is r's verdict over its runs, "" without expectations.
func resultVerdict(r *Result) string {
	switch {
	case r.Verdict != "":
		return r.Verdict
	case r.ExpectMet != nil && *r.ExpectMet:
		return checker.VerdictMet
	case r.ExpectMet != nil:
		return checker.VerdictFailed
	}
	return ""
}

// safetySection leads a report: incidents and their classification per
// run, the meaning of each class, and the verdicts.
func safetySection(d *doc, r *Result) {
	d.h(2, "Safety")
	t := &docTable{
		head: []string{"lock", "clients", "incidents", "lock faults", "client faults", "overlap ms", "violations (pairs)",
			"dup tokens", "token regressions", "token order (porcupine)", "evidence in fault window", "promise", "client model", "verdict"},
		num: []bool{false, true, true, true, true, true, true, true, true, false, false, false, false, false},
	}
	model := r.Workload.OnLost
	if model == "" {
		model = "ignore"
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		v := orDash(RunVerdict(run))
		if run.VerdictReason != "" {
			v += ": " + run.VerdictReason
		}
		t.addClass(rowClass(run), seriesKey(run), fmt.Sprint(run.Clients), fmt.Sprint(run.Incidents),
			fmt.Sprint(run.LockFaults), fmt.Sprint(run.ClientFaults), fmtNum(run.OverlapMsTotal),
			fmt.Sprint(run.Violations), fmt.Sprint(run.DuplicateTokens), fmt.Sprint(run.TokenRegressions),
			tokenOrder(run), windowEvidence(run), orDash(run.Promise), model, v)
	}
	d.tab(t)
	d.list(LockFaultMeaning, ClientFaultMeaning,
		"An incident is a maximal group of overlapping visits (one paused holder overlapped by many others counts once); violations count the overlapping pairs.",
		"Inconclusive: a safety claim without evidence (a fault that did not apply, fewer than min_visits visits or fewer than 2 contenders in a fault's window, a resource-call error).")
}

// rowClass is "bad" for damage or a failed verdict, "inconclusive" for an
// inconclusive one, "" otherwise.
func rowClass(run *Run) string {
	switch {
	case run.Verdict == checker.VerdictFailed, run.Error != "":
		return "bad"
	case run.Verdict == checker.VerdictInconclusive:
		return "inconclusive"
	case run.Verdict == "" && (run.Incidents > 0 || run.LostUpdates > 0):
		return "bad"
	}
	return ""
}

// verdictNote is the report's headline on its expectations.
func verdictNote(d *doc, r *Result) {
	switch resultVerdict(r) {
	case checker.VerdictInconclusive:
		d.note("Expectations inconclusive: none failed, but some safety claims have no evidence (see Safety).")
	case checker.VerdictMet:
		d.p("Expectations met: every run met the scenario's expectations.")
	case checker.VerdictFailed:
		d.note("Expectations failed: see the Expectations section.")
	}
}

func expectVerdict(e Expectation) (string, string) {
	switch {
	case e.Verdict == checker.VerdictInconclusive:
		return "inconclusive: " + e.Reason, "inconclusive"
	case e.Met:
		return checker.VerdictMet, ""
	}
	return strings.TrimSuffix(checker.VerdictFailed+": "+e.Reason, ": "), "bad"
}

// windowEvidence is "212 visits, 3 contenders (1 waiting)", "-" when the
// run recorded no visit in a fault window (or predates the field).
func windowEvidence(run *Run) string {
	if run.VisitsInWindow == 0 && run.ContendersInWindow == 0 {
		return "-"
	}
	return EvidenceString(run.VisitsInWindow, run.ContendersInWindow, run.WaitingInWindow)
}

// EvidenceString is the evidence of a fault window in words: "5 visits, 3
// contenders (2 waiting)": visits that overlapped it, clients that
// contended in it, and how many of those only waited (while another
// client held the lock).
func EvidenceString(visits, contenders, waiting int) string {
	s := plural(visits, "visit") + ", " + plural(contenders, "contender")
	if waiting > 0 {
		s += fmt.Sprintf(" (%d waiting)", waiting)
	}
	return s
}

func tokenOrder(run *Run) string {
	if run.TokenOrderHTML != "" {
		return run.TokenOrder + " (see " + run.TokenOrderHTML + ")"
	}
	return orDash(run.TokenOrder)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
