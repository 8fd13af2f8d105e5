package report

import (
	"fmt"
	"strings"
)

// readerMark marks a reader's client in a violation's row.
func readerMark(shared bool) string {
	if shared {
		return ", reader"
	}
	return ""
}

// KindReading says in words what run's lock promises about holders inside
// at once and what the run showed of it, in the kind's own terms ("2
// writers inside together", "4 holders of 3 permits"); "" for a mutex.
func KindReading(run *Run) string {
	switch run.Kind {
	case "rw":
		return rwReading(run)
	case "semaphore":
		return semaphoreReading(run)
	case "fair":
		s := "fair lock (grants in request order): "
		if run.OutOfOrder == 0 {
			return s + "every grant in request order"
		}
		return s + fmt.Sprintf("%s out of request order; the longest wait of a client that asked first and was overtaken: %s ms",
			plural(run.OutOfOrder, "grant"), fmtNum(run.MaxOvertakenWaitMs))
	}
	return ""
}

func rwReading(run *Run) string {
	parts := []string{fmt.Sprintf("read-write lock, read share %s", fmtNum(run.ReadShare))}
	if run.PeakHolders > 1 {
		parts = append(parts, fmt.Sprintf("up to %d inside at once", run.PeakHolders))
	}
	var writers, mixed int
	for _, ev := range run.ViolationEvents {
		if ev.FirstShared || ev.SecondShared {
			mixed++
		} else {
			writers++
		}
	}
	of := ""
	if len(run.ViolationEvents) < run.Violations {
		of = fmt.Sprintf(" (of the first %d violations)", len(run.ViolationEvents))
	}
	if writers > 0 {
		parts = append(parts, fmt.Sprintf("2 writers inside together %s%s", times(writers), of))
	}
	if mixed > 0 {
		parts = append(parts, fmt.Sprintf("a writer inside with a reader %s%s", times(mixed), of))
	}
	if run.ChangedReads > 0 {
		parts = append(parts, fmt.Sprintf("%s saw the value change while reading", plural(run.ChangedReads, "reader")))
	}
	if run.Violations == 0 && run.ChangedReads == 0 {
		parts = append(parts, "never a writer with anyone")
	}
	return strings.Join(parts, "; ")
}

func semaphoreReading(run *Run) string {
	permits := plural(run.Permits, "permit")
	parts := []string{"semaphore of " + permits}
	switch {
	case run.PeakHolders > run.Permits:
		parts = append(parts, fmt.Sprintf("%d holders of %s inside at once", run.PeakHolders, permits))
	case run.PeakHolders > 0:
		parts = append(parts, fmt.Sprintf("up to %d of %s in use", run.PeakHolders, permits))
	}
	switch leaked := run.PermitsLeakedMs; {
	case leaked != nil:
		parts = append(parts, leakReading(*leaked))
	case leakedFor(run) > 0: // a result written before permits_leaked_ms
		parts = append(parts, fmt.Sprintf("a permit leaked for %s s (no holder completed from the fault to the end)", fmtNum(leakedFor(run))))
	}
	return strings.Join(parts, "; ")
}

// leakShown is the permits_leaked_ms from which a semaphore's reading
// says a permit leaked: below it, the owed permit came back as soon as
// a waiter could notice (a dead holder's promise ran out, a waiter's
// next try got it).
const leakShown = 100

// leakReading says a semaphore's permits_leaked_ms in words.
func leakReading(ms float64) string {
	switch {
	case ms == 0:
		return "no permit leaked"
	case ms < leakShown:
		return fmt.Sprintf("no permit leaked (owed for %s ms after a holder's promise ran out, until a waiter took it)", fmtNum(ms))
	}
	return fmt.Sprintf("a permit leaked for %.1f s (owed by a holder that died or outlived its promise while clients were refused or kept waiting)", ms/1000)
}

// leakedFor is how long, in seconds, no operation completed from about
// the first fault's start to the run's end, when that lasts at least two
// leases: the unavailability a permit that never came back leaves. 0
// otherwise. The run's last bucket is left out: clients stopped at the
// end may complete there.
func leakedFor(run *Run) float64 {
	n := len(run.Timeline) - 1
	if len(run.Faults) == 0 || run.TimelineBucketMs <= 0 || n < 1 {
		return 0
	}
	w := float64(run.TimelineBucketMs) / 1000
	from, end := run.Faults[0].StartS, w*float64(n)
	last := 0.0 // end of the last bucket with a completion
	for i, b := range run.Timeline[:n] {
		if b.Completions > 0 {
			last = w * float64(i+1)
		}
	}
	if last > from+w || end-max(from, last) < 2*run.TTLMs/1000 {
		return 0
	}
	return end - max(from, last)
}

// times is "once", "twice" or "N times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}
