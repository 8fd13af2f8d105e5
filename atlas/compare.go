package atlas

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/runner"
)

// CompareSchema is the version of compare.json. Fields are added, never
// renamed.
const CompareSchema = "locklab/atlas-compare/v1"

// NoticedMeasure names what Noticed measures, for the page's header.
const NoticedMeasure = "time from the start of the run's first fault to the earliest of: " +
	"a `lost` line, or a release or renew line whose outcome is an error, in history.jsonl, by a client the fault acted on " +
	"(named in its target or its links; every client when it names none); " +
	"the start of the first 100 ms bucket of result.json's timeline counting an error (a failed acquire, release or renewal, any client), " +
	"unless such a history line falls inside that bucket (the line then times it). " +
	"A `lost` line carries when the holder learnt it: a Go lock's Lost channel closing inside the critical section, " +
	"a client program's `lost` line arriving; histories recorded before that rule (a Go holder's line written when it left " +
	"its critical section) bound the moment from above"

// Comparison sets two atlases of the same families side by side, cell by
// cell: the same locks under two providers (faults in proxies, faults as
// dropped packets), or any two atlases.
type Comparison struct {
	Schema string       `json:"schema"`
	A      CompareAtlas `json:"a"`
	B      CompareAtlas `json:"b"`
	// Measure says what Noticed measures.
	Measure string       `json:"noticed_measure"`
	Rows    []CompareRow `json:"rows"`
	// Differ counts the rows whose verdicts differ.
	Differ int `json:"differ"`
	// OneSided are the cells applicable in one atlas only, of the
	// families compared: that side's figures and why the other has none.
	OneSided []OneSidedCell `json:"one_sided,omitempty"`
	// Skipped are the cells (or whole families) left out, and why.
	Skipped []SkippedCell `json:"skipped,omitempty"`
}

// OneSidedCell is a cell applicable in one atlas only.
type OneSidedCell struct {
	Lock   string `json:"lock"`
	Family string `json:"family"`
	// Side is "A" or "B": the atlas that ran it.
	Side string `json:"side"`
	CompareSide
	// Why the other atlas has no such cell.
	Why string `json:"why"`
}

// CompareAtlas is one side of a comparison.
type CompareAtlas struct {
	Dir      string  `json:"dir"`
	Provider string  `json:"provider"`
	Runs     int     `json:"runs_per_cell"`
	WallS    float64 `json:"wall_s,omitempty"`
}

// CompareRow is one (lock, family) cell present in both atlases.
type CompareRow struct {
	Lock    string      `json:"lock"`
	Family  string      `json:"family"`
	A       CompareSide `json:"a"`
	B       CompareSide `json:"b"`
	Differs bool        `json:"verdict_differs"`
}

// CompareSide is what a comparison keeps of one cell.
type CompareSide struct {
	Verdict           string  `json:"verdict"`
	Runs              int     `json:"runs"`
	RunsWithIncidents int     `json:"runs_with_incidents"`
	Rate              float64 `json:"rate"`
	LockFaults        int     `json:"lock_faults"`
	ClientFaults      int     `json:"client_faults"`
	// Availability is the mean over the cell's runs of their availability
	// during the fault (their completion rate in the fault windows over
	// their rate before it, measured again from the timeline of runs
	// that predate the field); nil when no run measured it.
	Availability *float64 `json:"availability_during_fault,omitempty"`
	// RecoveryS is the cell's mean time from the last heal to the next
	// completed critical section (-1: none).
	RecoveryS float64 `json:"recovery_s"`
	Noticed   Noticed `json:"noticed"`
	// ZombieMsP50 and ZombieMsMax are the cell's zombie times (the
	// median of its runs' medians over the runs that lost a lease, the
	// longest): nil when none lost one or the atlas predates them.
	ZombieMsP50 *float64 `json:"zombie_ms_p50,omitempty"`
	ZombieMsMax *float64 `json:"zombie_ms_max,omitempty"`
}

// Noticed is how soon the library told a client the fault acted on that
// something was wrong (NoticedMeasure), over a cell's runs.
type Noticed struct {
	// Runs were read; InRuns of them noticed.
	Runs   int `json:"runs"`
	InRuns int `json:"in_runs"`
	// MedianMs, MinMs and MaxMs are over the runs that noticed.
	MedianMs float64 `json:"median_ms,omitempty"`
	MinMs    float64 `json:"min_ms,omitempty"`
	MaxMs    float64 `json:"max_ms,omitempty"`
	// By counts the first signals by kind ("lost", "release:ERROR",
	// "timeline error").
	By map[string]int `json:"by,omitempty"`
}

// SkippedCell is a cell of either atlas left out, and why.
type SkippedCell struct {
	Lock   string `json:"lock"`
	Family string `json:"family"`
	Why    string `json:"why"`
}

// Compare reads the atlases in dirA and dirB and compares every cell
// applicable in both, of the given families (none: every family both
// atlases have). A cell applicable on one side only, or of a listed
// family one atlas lacks, is shown for that side alone (OneSided); a
// family neither listed nor in both atlases is skipped whole.
func Compare(dirA, dirB string, families []string) (*Comparison, error) {
	a, err := Read(dirA)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	b, err := Read(dirB)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	c := &Comparison{Schema: CompareSchema, Measure: NoticedMeasure,
		A: CompareAtlas{Dir: dirA, Provider: providerOf(a), Runs: a.Runs, WallS: a.WallS},
		B: CompareAtlas{Dir: dirB, Provider: providerOf(b), Runs: b.Runs, WallS: b.WallS}}
	inA, inB := familySet(a), familySet(b)
	if len(families) == 0 {
		for _, f := range a.Families {
			if inB[f.Name] {
				families = append(families, f.Name)
			}
		}
		for _, x := range []struct {
			in    map[string]bool
			other string
			at    *Atlas
		}{{inA, dirB, a}, {inB, dirA, b}} {
			for _, f := range x.at.Families {
				if !inA[f.Name] || !inB[f.Name] {
					c.skip("every lock", f.Name, "a family of one atlas only (not in "+x.other+"): name it with --families to show its cells")
				}
			}
		}
	}
	for _, fam := range families {
		if !inA[fam] && !inB[fam] {
			return nil, fmt.Errorf("compare: family %q is in neither atlas", fam)
		}
		for _, lock := range unionLocks(a, b) {
			if err := c.add(dirA, dirB, a.Cell(lock, fam), b.Cell(lock, fam), lock, fam); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// add compares one (lock, family) cell, or records it one-sided or
// skipped.
func (c *Comparison) add(dirA, dirB string, ca, cb *CellResult, lock, fam string) error {
	applicable := func(x *CellResult) bool { return x != nil && x.Verdict != NotApplicable }
	why := func(x *CellResult, dir string) string {
		if x == nil {
			return "not in " + dir
		}
		return "not applicable in " + dir + ": " + x.NotApplicable
	}
	switch {
	case !applicable(ca) && !applicable(cb):
		if ca != nil && cb != nil {
			return nil // not applicable on both sides: nothing to say
		}
		c.skip(lock, fam, why(ca, dirA)+"; "+why(cb, dirB))
		return nil
	case !applicable(ca) || !applicable(cb):
		side, dir, x, whyNot := "B", dirB, cb, why(ca, dirA)
		if applicable(ca) {
			side, dir, x, whyNot = "A", dirA, ca, why(cb, dirB)
		}
		s, err := compareSide(dir, x)
		if err != nil {
			return err
		}
		c.OneSided = append(c.OneSided, OneSidedCell{Lock: lock, Family: fam, Side: side, CompareSide: s, Why: whyNot})
		return nil
	}
	sa, err := compareSide(dirA, ca)
	if err != nil {
		return err
	}
	sb, err := compareSide(dirB, cb)
	if err != nil {
		return err
	}
	row := CompareRow{Lock: lock, Family: fam, A: sa, B: sb, Differs: sa.Verdict != sb.Verdict}
	if row.Differs {
		c.Differ++
	}
	c.Rows = append(c.Rows, row)
	return nil
}

func familySet(a *Atlas) map[string]bool {
	m := map[string]bool{}
	for _, f := range a.Families {
		m[f.Name] = true
	}
	return m
}

// unionLocks is a's locks, then b's that a lacks.
func unionLocks(a, b *Atlas) []string {
	out := slices.Clone(a.Locks)
	for _, l := range b.Locks {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

func (c *Comparison) skip(lock, family, why string) {
	c.Skipped = append(c.Skipped, SkippedCell{Lock: lock, Family: family, Why: why})
}

// providerOf is the atlas's provider; atlases that predate the field ran
// on local.
func providerOf(a *Atlas) string {
	if a.Provider == "" {
		return "local"
	}
	return a.Provider
}

// compareSide reads one cell's runs (their result.json and history)
// under the atlas folder dir.
func compareSide(dir string, c *CellResult) (CompareSide, error) {
	s := CompareSide{Verdict: c.Verdict, Runs: c.Runs, RunsWithIncidents: c.RunsWithIncidents, Rate: c.Rate,
		LockFaults: c.LockFaults, ClientFaults: c.ClientFaults, RecoveryS: c.RecoveryS,
		ZombieMsP50: c.ZombieMsP50, ZombieMsMax: c.ZombieMsMax}
	var ms, avail []float64
	for _, r := range c.RunList {
		rd := filepath.Join(dir, r.Dir)
		res, err := readResult(rd)
		if err != nil {
			return s, fmt.Errorf("compare %s: %w", c.Family+"/"+c.Lock, err)
		}
		if len(res.Runs) == 0 {
			continue
		}
		s.Noticed.Runs++
		run := res.Runs[0]
		// From the timeline on both sides, by today's rule: a stored
		// figure may predate it (or the field).
		if a := runner.AvailabilityDuringFault(&run); a != nil {
			avail = append(avail, *a)
		}
		d, kind, ok, err := noticed(rd, run)
		if err != nil {
			return s, fmt.Errorf("compare %s: %w", c.Family+"/"+c.Lock, err)
		}
		if ok {
			ms = append(ms, d)
			if s.Noticed.By == nil {
				s.Noticed.By = map[string]int{}
			}
			s.Noticed.By[kind]++
		}
	}
	if len(avail) > 0 {
		m := mean(avail)
		s.Availability = &m
	}
	s.Noticed.InRuns = len(ms)
	if len(ms) > 0 {
		slices.Sort(ms)
		s.Noticed.MinMs, s.Noticed.MaxMs = ms[0], ms[len(ms)-1]
		s.Noticed.MedianMs = ms[len(ms)/2]
		if len(ms)%2 == 0 {
			s.Noticed.MedianMs = (ms[len(ms)/2-1] + ms[len(ms)/2]) / 2
		}
	}
	return s, nil
}

var clientName = regexp.MustCompile(`\bclient-(\d+)\b`)

// actedOn returns the clients the run's faults name in their targets and
// details (their links), or nil when they name none: the fault then acts
// on every client alike (a server's links, a reset of every client link).
func actedOn(faults []report.FaultWindow) map[int]bool {
	var out map[int]bool
	for _, f := range faults {
		for _, m := range clientName.FindAllStringSubmatch(f.Target+" "+f.Detail, -1) {
			n, _ := strconv.Atoi(m[1])
			if out == nil {
				out = map[int]bool{}
			}
			out[n] = true
		}
	}
	return out
}

// noticed is NoticedMeasure for one run in folder dir: the delay in
// milliseconds, the kind of the first signal, and whether there was one.
func noticed(dir string, run report.Run) (float64, string, bool, error) {
	start := -1.0
	var applied []report.FaultWindow
	for _, f := range run.Faults {
		if f.Error != "" {
			continue
		}
		applied = append(applied, f)
		if start < 0 || f.StartS < start {
			start = f.StartS
		}
	}
	if start < 0 {
		return 0, "", false, nil
	}
	startNs := int64(start * 1e9)
	clients := actedOn(applied)
	tl, tlEnd := firstErrorBucket(run, startNs)
	h, err := report.OpenHistory(dir)
	if errors.Is(err, os.ErrNotExist) {
		return msSince(tl, startNs, "timeline error")
	}
	if err != nil {
		return 0, "", false, err
	}
	defer h.Close()
	best, kind := int64(-1), ""
	sc := bufio.NewScanner(h)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var op checker.Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return 0, "", false, fmt.Errorf("%s: %w", filepath.Join(dir, report.HistoryFile), err)
		}
		if op.Return < startNs || (clients != nil && !clients[op.Client]) {
			continue
		}
		k := ""
		switch {
		case op.Op == checker.OpLost:
			k = "lost"
		case (op.Op == checker.OpRelease || op.Op == checker.OpRenew) && op.Outcome != "ok":
			k = op.Op + ":" + op.Outcome
		}
		if k != "" && (best < 0 || op.Return < best) {
			best, kind = op.Return, k
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return 0, "", false, fmt.Errorf("%s: %w", filepath.Join(dir, report.HistoryFile), err)
	}
	// A history line inside the first error bucket is most likely that
	// error, timed to the nanosecond and by a client the fault acted on:
	// it wins over the bucket's start.
	if tl >= 0 && (best < 0 || best >= tlEnd) {
		return msSince(tl, startNs, "timeline error")
	}
	return msSince(best, startNs, kind)
}

// firstErrorBucket returns when the first timeline bucket counting an
// error at or after startNs begins (startNs itself when the bucket holds
// it) and when it ends; -1 when there is none.
func firstErrorBucket(run report.Run, startNs int64) (int64, int64) {
	bw := int64(run.TimelineBucketMs) * 1e6
	if bw <= 0 {
		return -1, -1
	}
	for i, b := range run.Timeline {
		if at := int64(i) * bw; b.Errors > 0 && at+bw > startNs {
			return max(at, startNs), at + bw
		}
	}
	return -1, -1
}

func msSince(at, startNs int64, kind string) (float64, string, bool, error) {
	if at < 0 {
		return 0, "", false, nil
	}
	return float64(at-startNs) / 1e6, kind, true, nil
}

// WriteComparison writes compare.json and compare.md into dir.
func WriteComparison(dir string, c *Comparison) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("compare folder: %w", err)
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("compare.json: %w", err)
	}
	jerr := os.WriteFile(filepath.Join(dir, "compare.json"), append(data, '\n'), 0o644)
	merr := writeWith(filepath.Join(dir, "compare.md"), func(w io.Writer) { compareMarkdown(w, c) })
	return errors.Join(jerr, merr)
}

func compareMarkdown(w io.Writer, c *Comparison) {
	a, b := c.A.Provider, c.B.Provider
	fmt.Fprintf(w, "# locklab atlas comparison: %s vs %s\n\n", a, b)
	fmt.Fprintf(w, "- **%s** (A): `%s`, %d runs per cell", a, c.A.Dir, c.A.Runs)
	if c.A.WallS > 0 {
		fmt.Fprintf(w, ", the whole atlas ran %s", secs(c.A.WallS))
	}
	fmt.Fprintf(w, "\n- **%s** (B): `%s`, %d runs per cell", b, c.B.Dir, c.B.Runs)
	if c.B.WallS > 0 {
		fmt.Fprintf(w, ", the whole atlas ran %s", secs(c.B.WallS))
	}
	fmt.Fprintf(w, "\n- %d cells in both, %d with different verdicts (marked **≠**); %d cells of one atlas only; %d skipped (below).\n\n", len(c.Rows), c.Differ, len(c.OneSided), len(c.Skipped))
	fmt.Fprintf(w, "**noticed**: %s. Shown as the median in ms over the runs that noticed (n/N: runs that noticed of runs read), with the first signal's most common kind.\n\n", c.Measure)
	fmt.Fprintf(w, "**availability**: the cell's mean completion rate during the fault windows over the rate before the first fault (- not measured).\n\n")
	fmt.Fprintf(w, "**recovery**: the mean time from the last heal to the next completed critical section.\n\n")
	fmt.Fprintf(w, "**zombie**: how long a holder acted on a lease the server had dropped, in ms: the median of the runs' medians / the longest (- no lease lost).\n\n")
	fmt.Fprintf(w, "| family | lock | | verdict %s | verdict %s | incidents %s | incidents %s | availability %s | availability %s | recovery %s | recovery %s | noticed %s | noticed %s | zombie %s | zombie %s |\n", a, b, a, b, a, b, a, b, a, b, a, b)
	fmt.Fprintln(w, "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|")
	for _, r := range c.Rows {
		mark := ""
		if r.Differs {
			mark = "**≠**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Family, r.Lock, mark,
			r.A.Verdict, r.B.Verdict, incidentsText(r.A), incidentsText(r.B),
			availPtr(r.A.Availability), availPtr(r.B.Availability), secs(r.A.RecoveryS), secs(r.B.RecoveryS),
			noticedText(r.A.Noticed), noticedText(r.B.Noticed), zombiePair(r.A.ZombieMsP50, r.A.ZombieMsMax), zombiePair(r.B.ZombieMsP50, r.B.ZombieMsMax))
	}
	if len(c.OneSided) > 0 {
		fmt.Fprintf(w, "\n## Cells of one atlas only\n\nApplicable on one side only: that side's figures, and why the other has none.\n\n")
		fmt.Fprintln(w, "| family | lock | atlas | verdict | incidents | availability | recovery | noticed | zombie | why not in the other |")
		fmt.Fprintln(w, "|---|---|---|---|---:|---:|---:|---|---:|---|")
		for _, o := range c.OneSided {
			p := c.A.Provider
			if o.Side == "B" {
				p = c.B.Provider
			}
			fmt.Fprintf(w, "| %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s |\n", o.Family, o.Lock, o.Side, p, o.Verdict,
				incidentsText(o.CompareSide), availPtr(o.Availability), secs(o.RecoveryS), noticedText(o.Noticed), zombiePair(o.ZombieMsP50, o.ZombieMsMax), cellText(o.Why))
		}
	}
	if len(c.Skipped) > 0 {
		fmt.Fprintf(w, "\n## Skipped\n\nCells not applicable in both atlases are left out silently.\n\n| family | lock | why |\n|---|---|---|\n")
		for _, s := range c.Skipped {
			fmt.Fprintf(w, "| %s | %s | %s |\n", s.Family, s.Lock, cellText(s.Why))
		}
	}
}

// cellText escapes a table cell's pipes.
func cellText(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// incidentsText is "k/n (rate)" with the lock and client faults summed.
func incidentsText(s CompareSide) string {
	t := fmt.Sprintf("%d/%d (%s)", s.RunsWithIncidents, s.Runs, pct(s.Rate))
	if s.LockFaults > 0 || s.ClientFaults > 0 {
		t += fmt.Sprintf(" L%d C%d", s.LockFaults, s.ClientFaults)
	}
	return t
}

func availPtr(p *float64) string {
	if p == nil {
		return "-"
	}
	return pct(*p)
}

func noticedText(n Noticed) string {
	if n.InRuns == 0 {
		return fmt.Sprintf("never (0/%d)", n.Runs)
	}
	kind, most := "", 0
	for k, v := range n.By {
		if v > most || (v == most && k < kind) {
			kind, most = k, v
		}
	}
	return fmt.Sprintf("%.0f ms (%d/%d, %s)", n.MedianMs, n.InRuns, n.Runs, kind)
}
