package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/recheck"
	"github.com/locklab/locklab/report"
)

// checkCmd is `bench check DIR...`: recompute every safety figure of each
// run from history.jsonl twice, by replaying it through the checker and by
// the independent re-check (package recheck), and compare both with
// result.json.
func checkCmd(args []string, stdout, stderr io.Writer) error {
	fs := cli.FlagSet("bench check", stderr, "usage: bench check DIR...\n\nRecomputes every safety figure of each run from DIR/history.jsonl twice: replayed\n"+
		"through the checker, and by an independent re-check that shares no code with it;\n"+
		"compares both with DIR/result.json; exit 1 when any two disagree.\n")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return cli.Usagef("bench check: no results folder given")
	}
	agree := true
	for _, dir := range fs.Args() {
		ok, err := checkDir(dir, stdout)
		if err != nil {
			return err
		}
		agree = agree && ok
	}
	if !agree {
		fmt.Fprintln(stdout, "\nDISAGREE: result.json, the replay and the re-check differ (see the marked lines; the odd one out is named)")
		return cli.ErrFailed
	}
	fmt.Fprintln(stdout, "\nthe replay and the independent re-check reproduce every safety figure of result.json")
	return nil
}

// tokenOrderTimeout bounds porcupine's search per run, as during the run.
const tokenOrderTimeout = 30 * time.Second

// figure is one safety figure as the result states it, as the replay
// gives it and as the re-check gives it.
type figure struct {
	name                     string
	result, replay, recheck  string
	nResult, nReplay, nCheck float64
	tolerance                float64
	numeric                  bool
	// unmeasured: result.json predates the figure ("not measured"): only
	// the replay and the re-check are compared.
	unmeasured bool
}

// differ reports whether two values of f disagree.
func (f figure) differ(a, b float64, sa, sb string) bool {
	if f.numeric {
		return math.Abs(a-b) > f.tolerance
	}
	return sa != sb
}

// odd names the value that disagrees: "" when all agree, the odd one out
// when two agree, "all" when none does.
func (f figure) odd() string {
	if f.unmeasured {
		if f.differ(f.nReplay, f.nCheck, f.replay, f.recheck) {
			return "replay or recheck"
		}
		return ""
	}
	rp := f.differ(f.nResult, f.nReplay, f.result, f.replay)
	rc := f.differ(f.nResult, f.nCheck, f.result, f.recheck)
	pc := f.differ(f.nReplay, f.nCheck, f.replay, f.recheck)
	switch {
	case !rp && !rc && !pc:
		return ""
	case !pc:
		return "result.json"
	case !rc:
		return "replay"
	case !rp:
		return "recheck"
	}
	return "all"
}

// history opens dir's history afresh (plain or gzipped) for one reader.
func history(dir string, read func(r io.Reader) error) error {
	f, err := report.OpenHistory(dir)
	if err != nil {
		return fmt.Errorf("bench check %s: %w", dir, err)
	}
	defer f.Close()
	if err := read(f); err != nil {
		return fmt.Errorf("bench check %s: %w", dir, err)
	}
	return nil
}

func checkDir(dir string, w io.Writer) (bool, error) {
	res, err := report.Read(dir)
	if err != nil {
		return false, err
	}
	fencing, err := checker.ParseFencing(res.Fencing)
	if err != nil {
		return false, fmt.Errorf("bench check %s: result.json: %w", dir, err)
	}
	var sums map[int]checker.Summary
	var orders map[int]checker.TokenOrder
	var rechecked map[int]recheck.Figures
	if err := history(dir, func(r io.Reader) (err error) { sums, err = checker.Replay(r, fencing); return err }); err != nil {
		return false, err
	}
	if err := history(dir, func(r io.Reader) (err error) {
		orders, err = checker.CheckTokenOrder(r, tokenOrderTimeout)
		return err
	}); err != nil {
		return false, err
	}
	if err := history(dir, func(r io.Reader) (err error) {
		if rechecked, err = recheck.Check(r, tokenOrderTimeout); err != nil {
			return fmt.Errorf("recheck: %w", err)
		}
		return nil
	}); err != nil {
		return false, err
	}
	var judged recheck.Judged
	if err := history(dir, func(r io.Reader) (err error) {
		if judged, err = recheck.Judge(r); err != nil {
			return fmt.Errorf("recheck exposure and zombie time: %w", err)
		}
		return nil
	}); err != nil {
		return false, err
	}
	fmt.Fprintf(w, "%s (%s)\n", dir, res.Scenario)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tlock\tfigure\tresult.json\treplay\trecheck\t")
	ok := true
	for i, run := range res.Runs {
		s, found := sums[i]
		rc, rfound := rechecked[i]
		if (!found || !rfound) && run.Visits > 0 {
			fmt.Fprintf(tw, "%d\t%s\t(no history lines)\t\t\t\tDISAGREE\n", i, run.Lock)
			ok = false
			continue
		}
		for _, fg := range figuresOf(run, s, orders[i].Verdict, rc, judged.Zombies[i]) {
			mark := ""
			if odd := fg.odd(); odd != "" {
				mark, ok = "DISAGREE: "+odd, false
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i, run.Lock, fg.name, fg.result, fg.replay, fg.recheck, mark)
		}
		for _, d := range rederive(run, rc, judged.Exposures[i], judged.KeyClients[i]) {
			mark := ""
			if d.result != d.recheck {
				mark, ok = "DISAGREE: the re-check derives "+d.recheck, false
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t\t%s\t%s\n", i, run.Lock, d.name, d.result, d.recheck, mark)
		}
	}
	tw.Flush()
	return ok, nil
}

// figuresOf lines up the result's safety figures with the replayed and the
// re-checked ones. Overlap times may differ by the instants between the
// live summary and the last exits written after it (client processes
// stopped at the end): 1ms.
func figuresOf(run report.Run, s checker.Summary, order string, rc recheck.Figures, zombie recheck.Zombie) []figure {
	n := func(name string, a, b, c int) figure {
		return figure{name: name, numeric: true, nResult: float64(a), nReplay: float64(b), nCheck: float64(c),
			result: strconv.Itoa(a), replay: strconv.Itoa(b), recheck: strconv.Itoa(c)}
	}
	ms := func(name string, a float64, b, c time.Duration) figure {
		fb, fc := float64(b)/1e6, float64(c)/1e6
		return figure{name: name, numeric: true, tolerance: 1, nResult: a, nReplay: fb, nCheck: fc,
			result: strconv.FormatFloat(a, 'g', -1, 64), replay: strconv.FormatFloat(fb, 'g', -1, 64), recheck: strconv.FormatFloat(fc, 'g', -1, 64)}
	}
	str := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	out := []figure{n("visits", run.Visits, s.Visits, rc.Visits)}
	a, b, c := run.SafetyFigures.Figures(), s.SafetyFigures.Figures(), recheckSafety(rc).Figures()
	for i, name := range checker.SafetyNames {
		out = append(out, n(name, a[i], b[i], c[i]))
	}
	if run.Kind == checker.KindSemaphore || s.Kind == checker.KindSemaphore {
		out = append(out, leakFigure(run, s, rc))
	}
	out = append(out,
		n("out_of_order", run.OutOfOrder, s.Fair.OutOfOrder, rc.OutOfOrder),
		ms("overlap_ms_total", run.OverlapMsTotal, s.OverlapTotal, rc.OverlapTotal),
		ms("max_overlap_ms", run.MaxOverlapMs, s.MaxOverlap, rc.MaxOverlap),
		figure{name: "token_order", result: str(run.TokenOrder), replay: str(order), recheck: str(rc.TokenOrder)})
	return append(out, zombieFigures(run, s.Zombies, zombie)...)
}

// zombieFigures lines up the run's lost leases and zombie times with the
// replayed and the re-checked ones; none for a result written before
// they were measured. A time absent (no lost lease) reads "-" and counts
// as 0; times agree within 1ms, as overlaps do (a visit still inside at
// the end leaves at a slightly different end on each side).
func zombieFigures(run report.Run, s checker.Zombies, rc recheck.Zombie) []figure {
	if run.LostLeases == nil && run.ZombieMsP50 == nil && run.ZombieMsMax == nil {
		return nil // not measured
	}
	count := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	zombie := func(name string, result *float64, replay time.Duration, recheck int64, lost, rlost int) figure {
		text := func(x float64, present bool) string {
			if !present {
				return "-"
			}
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		f := figure{name: name, numeric: true, tolerance: 1, nReplay: float64(replay) / 1e6, nCheck: float64(recheck) / 1e6}
		if result != nil {
			f.nResult = *result
		}
		f.result, f.replay, f.recheck = text(f.nResult, result != nil), text(f.nReplay, lost > 0), text(f.nCheck, rlost > 0)
		return f
	}
	n := count(run.LostLeases)
	return []figure{
		{name: "lost_leases", numeric: true, nResult: float64(n), nReplay: float64(s.LostLeases), nCheck: float64(rc.LostLeases),
			result: strconv.Itoa(n), replay: strconv.Itoa(s.LostLeases), recheck: strconv.Itoa(rc.LostLeases)},
		zombie("zombie_ms_p50", run.ZombieMsP50, s.P50, rc.P50Ns, s.LostLeases, rc.LostLeases),
		zombie("zombie_ms_max", run.ZombieMsMax, s.Max, rc.MaxNs, s.LostLeases, rc.LostLeases),
	}
}

// recheckSafety reads recheck's figures as checker.SafetyFigures: recheck
// shares no code with package checker on purpose, so this is where its
// counts meet the checker's.
func recheckSafety(rc recheck.Figures) checker.SafetyFigures {
	return checker.SafetyFigures{Violations: rc.Violations, LostUpdates: rc.LostUpdates,
		StaleTokens: rc.StaleTokens, StaleRejected: rc.StaleRejected, StaleAccepted: rc.StaleAccepted,
		Incidents: rc.Incidents, LockFaults: rc.LockFaults, ClientFaults: rc.ClientFaults,
		DuplicateTokens: rc.DuplicateTokens, TokenRegressions: rc.TokenRegressions, ZeroTokens: rc.ZeroTokens,
		ChangedReads: rc.ChangedReads}
}
