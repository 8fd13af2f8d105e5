package report

import (
	"bufio"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// A doc is a report as a list of blocks, written as Markdown or as HTML by
// the same code path, so the two never disagree.
type doc struct {
	title  string
	blocks []block
}

type blockKind int

const (
	bHeading blockKind = iota
	bPara
	bNote // a paragraph that must stand out (partial run, expectation missed)
	bTable
	bImage
	bList
)

type block struct {
	kind  blockKind
	level int    // heading level
	text  string // heading, paragraph, image title
	file  string // image file name
	items []string
	table *docTable
}

// docTable is a table; num marks right-aligned (numeric) columns, bad marks
// rows that show damage (highlighted in HTML, bold-marked in Markdown).
type docTable struct {
	head []string
	num  []bool
	rows [][]string
	bad  []bool
	cls  []string // per row: "", "bad" or "inconclusive" (own colour)
}

func (t *docTable) add(bad bool, cells ...string) {
	cls := ""
	if bad {
		cls = "bad"
	}
	t.addClass(cls, cells...)
}

func (t *docTable) addClass(cls string, cells ...string) {
	t.rows = append(t.rows, cells)
	t.bad = append(t.bad, cls == "bad")
	t.cls = append(t.cls, cls)
}

func (d *doc) h(level int, text string) {
	d.blocks = append(d.blocks, block{kind: bHeading, level: level, text: text})
}
func (d *doc) p(format string, a ...any) {
	d.blocks = append(d.blocks, block{kind: bPara, text: fmt.Sprintf(format, a...)})
}
func (d *doc) note(text string)     { d.blocks = append(d.blocks, block{kind: bNote, text: text}) }
func (d *doc) list(items ...string) { d.blocks = append(d.blocks, block{kind: bList, items: items}) }
func (d *doc) img(p Plot) {
	d.blocks = append(d.blocks, block{kind: bImage, text: p.Title, file: p.PNG()})
}
func (d *doc) tab(t *docTable) {
	if len(t.rows) > 0 {
		d.blocks = append(d.blocks, block{kind: bTable, table: t})
	}
}

// markdown writes d as GitHub-flavoured Markdown; images are referenced by
// file name, next to the report.
func (d *doc) markdown(w *bufio.Writer) error {
	fmt.Fprintf(w, "# %s\n", d.title)
	for _, b := range d.blocks {
		w.WriteString("\n")
		switch b.kind {
		case bHeading:
			fmt.Fprintf(w, "%s %s\n", strings.Repeat("#", b.level), mdEscape(b.text))
		case bPara:
			fmt.Fprintf(w, "%s\n", mdEscape(b.text))
		case bNote:
			fmt.Fprintf(w, "> **%s**\n", mdEscape(b.text))
		case bList:
			for _, it := range b.items {
				fmt.Fprintf(w, "- %s\n", mdEscape(it))
			}
		case bImage:
			fmt.Fprintf(w, "![%s](%s)\n", mdEscape(b.text), b.file)
		case bTable:
			t := b.table
			row := func(cells []string, bad bool, cls string) {
				w.WriteString("|")
				for i, c := range cells {
					c = mdCell(c)
					if bad && i == 0 {
						c = "**" + c + "**"
					}
					if cls == "inconclusive" && i == 0 {
						c = "_" + c + "_ (inconclusive)"
					}
					fmt.Fprintf(w, " %s |", c)
				}
				w.WriteString("\n")
			}
			row(t.head, false, "")
			w.WriteString("|")
			for i := range t.head {
				if i < len(t.num) && t.num[i] {
					w.WriteString("---:|")
				} else {
					w.WriteString("---|")
				}
			}
			w.WriteString("\n")
			for i, r := range t.rows {
				row(r, t.bad[i], t.cls[i])
			}
		}
	}
	return nil
}

var mdEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`, "#", `\#`)

func mdEscape(s string) string { return mdEscaper.Replace(s) }

func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(mdEscape(s), "|", `\|`), "\n", " ")
}

// maxEventsShown bounds the violation events listed per run; the rest are
// counted.
const maxEventsShown = 20

// resultDoc is the report of one result.
func resultDoc(r *Result, plots []Plot, names []string) *doc {
	d := &doc{title: "locklab report: " + r.Scenario}
	switch {
	case r.Interrupted != "":
		d.note("Partial result: " + r.Interrupted + ". Only the runs below finished; the numbers of a cut-short run cover the time it ran.")
	case !r.Complete:
		d.note("Partial result: some runs did not complete (see Status).")
	}
	d.note("Answer: " + ResultHeadline(r))
	verdictNote(d, r)
	answerSection(d, r)
	if r.Description != "" {
		d.h(2, "Scenario")
		d.p("%s", strings.TrimSpace(r.Description))
	}
	safetySection(d, r)

	d.h(2, "Setup")
	d.tab(setupTable(r))

	d.h(2, "Throughput and latency")
	d.tab(summaryTable(r))
	d.p("Latencies in ms. ops: completed critical sections; violations: a client entered the resource while another was inside; stale: writes carrying a fencing token older than one already seen (accepted / rejected).")
	if kinds := kindLines(r); len(kinds) > 0 {
		d.h(2, "Lock kinds")
		d.p("Each lock is judged by its own promise: a read-write lock lets readers share it and a writer be alone, a semaphore lets in at most its permits, a fair lock also promises grants in request order; a violation is an overlap the lock's kind forbids.")
		d.list(kinds...)
	}

	byName := map[string]Plot{}
	for _, p := range plots {
		byName[p.Name] = p
	}
	d.h(2, "Plots")
	for _, n := range []string{"throughput", "scale", "latency", "handoff", "safety"} {
		if p, ok := byName[n]; ok {
			d.img(p)
		}
	}

	if t := scaleTable(r); len(t.rows) > 0 {
		d.h(2, "Scale")
		d.tab(t)
		d.p("Peak RSS is the harness process's (clients, proxies, checker), not the servers'.")
	}

	if t := expectTable(r); len(t.rows) > 0 {
		d.h(2, "Expectations")
		d.tab(t)
	}

	sweep := isSweep(groupSeries(r.Runs))
	d.h(2, "Runs")
	for i := range r.Runs {
		run := &r.Runs[i]
		d.h(3, runLabel(run, sweep))
		d.p("%s", runStatus(run))
		if p, ok := byName[names[i]]; ok {
			d.img(p)
		}
		if p, ok := byName[strings.Replace(names[i], "timeline-", "holds-", 1)]; ok {
			d.img(p)
		}
		if len(run.Faults) > 0 {
			d.h(4, "Fault windows")
			d.tab(faultTable(run))
		}
		if len(run.ViolationEvents) > 0 {
			d.h(4, "Violations")
			d.tab(eventTable(run))
			shown := min(len(run.ViolationEvents), maxEventsShown)
			if more := len(run.ViolationEvents) - shown + run.ViolationEventsDropped; more > 0 {
				d.p("First %d of %d violations shown; result.json keeps %d.", shown, max(run.Violations, len(run.ViolationEvents)+run.ViolationEventsDropped), len(run.ViolationEvents))
			}
		}
		var facts []string
		if z := zombieLine(run); z != "" {
			facts = append(facts, z)
		}
		if e := ErrorsString(run.Errors); e != "0" {
			facts = append(facts, "errors: "+e)
		}
		if len(run.StartupMs) > 0 {
			facts = append(facts, "cluster start-up: "+kvList(run.StartupMs, func(v float64) string { return fmtNum(v) + " ms" }))
		}
		if len(run.Counters) > 0 {
			facts = append(facts, "client counters: "+kvList(run.Counters, func(v int64) string { return fmt.Sprint(v) }))
		}
		if len(run.Options) > 0 {
			facts = append(facts, "options: "+kvList(run.Options, func(v string) string { return v }))
		}
		if len(facts) > 0 {
			d.list(facts...)
		}
	}
	return d
}

func kvList[V any](m map[string]V, f func(V) string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + f(m[k])
	}
	return strings.Join(parts, ", ")
}

func setupTable(r *Result) *docTable {
	t := &docTable{head: []string{"setting", "value"}}
	t.add(false, "scenario", r.Scenario)
	if r.File != "" {
		t.add(false, "file", r.File)
	}
	t.add(false, "seed", fmt.Sprint(r.Seed))
	t.add(false, "locklab version", orDash(r.Version))
	t.add(false, "provider", r.Provider)
	if len(r.Versions) > 0 {
		t.add(false, "server versions", kvList(r.Versions, func(v string) string { return v }))
	} else {
		t.add(false, "server versions", "not recorded")
	}
	t.add(false, "fencing", r.Fencing)
	if p := proxiedString(r.Runs); p != "" {
		t.add(false, "proxied links", p)
	}
	if d := lossyString(r.Runs); d != "" {
		t.add(false, "data dirs", d)
	}
	t.add(false, "workload", workloadString(r))
	if cs := clientValues(r.Runs); len(cs) > 1 {
		t.add(false, "clients sweep", strings.Trim(fmt.Sprint(cs), "[]"))
	}
	h := r.Host
	host := fmt.Sprintf("%d CPUs, %s/%s, %s", h.CPUs, h.OS, h.Arch, h.GoVersion)
	if h.Hostname != "" {
		host += ", " + h.Hostname
	}
	t.add(false, "host", host)
	if !r.Started.IsZero() {
		when := r.Started.UTC().Format("2006-01-02 15:04:05 MST")
		if !r.Finished.IsZero() {
			when += fmt.Sprintf(" (took %s)", r.Finished.Sub(r.Started).Round(time.Second))
		}
		t.add(false, "started", when)
	}
	status := "complete"
	if !r.Complete {
		status = "partial"
		if r.Interrupted != "" {
			status += ": " + r.Interrupted
		}
	}
	t.add(!r.Complete, "status", status)
	return t
}

// lossyString says which runs had their servers' data dirs on the lossy
// filesystem (a power cut), and that their throughput is not a plain
// disk's; "" when none did.
func lossyString(runs []Run) string {
	var locks []string
	for _, run := range runs {
		if run.LossyDisks && !slices.Contains(locks, run.Lock) {
			locks = append(locks, run.Lock)
		}
	}
	if len(locks) == 0 {
		return ""
	}
	return "on the lossy filesystem of a power cut (" + strings.Join(locks, ", ") +
		"): a server that fsyncs every write runs slower there than on plain disk " +
		"(Redis appendfsync always and ZooKeeper measured at 0.8 to 0.9 of it, docs/faults.md); " +
		"compare throughput only with runs on the same filesystem"
}

// proxiedString says which links went through proxies, over every run that
// recorded it: the servers whose client links were proxied (every
// client's), and how many peer links were; "" when no run recorded it.
func proxiedString(runs []Run) string {
	recorded := false
	var servers []string
	peers := 0
	for _, run := range runs {
		if run.ProxiedLinks == nil {
			continue
		}
		recorded = true
		n := 0
		for _, l := range run.ProxiedLinks {
			from, to, _ := strings.Cut(l, "->")
			if !strings.HasPrefix(from, "client-") {
				n++
			} else if !slices.Contains(servers, to) {
				servers = append(servers, to)
			}
		}
		peers = max(peers, n)
	}
	if !recorded {
		return ""
	}
	s := "clients connect directly (no fault acts on a client link)"
	if len(servers) > 0 {
		s = "every client's link to " + strings.Join(servers, ", ")
	}
	if peers > 0 {
		s += fmt.Sprintf("; %d peer links", peers)
	}
	return s
}

func workloadString(r *Result) string {
	w := r.Workload
	var parts []string
	parts = append(parts, fmt.Sprintf("%d clients", w.Clients))
	mode := w.Mode
	if mode == "" {
		mode = "closed"
	}
	if mode == "open" {
		parts = append(parts, fmt.Sprintf("open loop at %s ops/s", fmtNum(w.Rate)))
	} else {
		parts = append(parts, mode+" loop")
	}
	if w.Ops > 0 {
		parts = append(parts, fmt.Sprintf("%d ops", w.Ops))
	} else {
		parts = append(parts, fmt.Sprintf("%s s", fmtNum(w.DurationS)))
	}
	parts = append(parts, fmt.Sprintf("ttl %s ms", fmtNum(w.TTLMs)),
		fmt.Sprintf("critical section %s ms", fmtNum(w.CriticalMs)),
		fmt.Sprintf("%d key(s)", max(w.Keys, 1)))
	if w.ProcessPerClient {
		parts = append(parts, "one process per client")
	}
	return strings.Join(parts, ", ")
}

func runStatus(run *Run) string {
	switch {
	case run.Error != "":
		return "Failed: " + run.Error
	case !run.Complete:
		return fmt.Sprintf("Partial: cut short after %s s.", fmtNum(run.DurationS))
	}
	s := fmt.Sprintf("Complete: %d ops in %s s, %s ops/s, %d violations.", run.Ops, fmtNum(run.DurationS), fmtNum(run.Throughput), run.Violations)
	if v := RunVerdict(run); v != "" {
		s += " Expectations " + v + "."
	}
	return s
}

func latMs(l Latency, v float64) string {
	if l.Count == 0 {
		return "-"
	}
	return fmtNum(v)
}

// zombieLine is a run's zombie time in one line: its lost leases, and
// how long their holders went on from the loss on the server to learning
// it; "" when it lost none or predates the figures.
func zombieLine(run *Run) string {
	if run.LostLeases == nil || *run.LostLeases == 0 || run.ZombieMsP50 == nil || run.ZombieMsMax == nil {
		return ""
	}
	return fmt.Sprintf("zombie time: %s, p50 %s ms, max %s ms from the lock state lost on the server to its holder learning it",
		plural(*run.LostLeases, "lost lease"), fmtNum(*run.ZombieMsP50), fmtNum(*run.ZombieMsMax))
}

func summaryTable(r *Result) *docTable {
	t := &docTable{
		head: []string{"lock", "clients", "ops", "ops/s", "acq p50", "acq p99", "acq p99.9", "acq max", "hand-off p50", "hand-off p99", "errors", "violations", "max overlap ms", "lost upd", "stale acc/rej", "status"},
		num:  []bool{false, true, true, true, true, true, true, true, true, true, false, true, true, true, true, false},
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		status := "ok"
		switch {
		case run.Error != "":
			status = "failed"
		case !run.Complete:
			status = "partial"
		}
		viol := fmt.Sprint(run.Violations)
		if v := RunVerdict(run); v != "" && run.Error == "" {
			status += ", expectations " + v
		}
		overlap := "-"
		if run.Violations > 0 {
			overlap = fmtNum(run.MaxOverlapMs)
		}
		t.add(run.Violations > 0 || run.LostUpdates > 0 || run.StaleAccepted > 0,
			seriesKey(run), fmt.Sprint(run.Clients), fmt.Sprint(run.Ops), fmtNum(run.Throughput),
			latMs(run.Acquire, run.Acquire.P50Ms), latMs(run.Acquire, run.Acquire.P99Ms),
			latMs(run.Acquire, run.Acquire.P999Ms), latMs(run.Acquire, run.Acquire.MaxMs),
			latMs(run.Handoff, run.Handoff.P50Ms), latMs(run.Handoff, run.Handoff.P99Ms),
			ErrorsString(run.Errors), viol, overlap, fmt.Sprint(run.LostUpdates),
			fmt.Sprintf("%d/%d", run.StaleAccepted, run.StaleRejected), status)
	}
	return t
}

func expectTable(r *Result) *docTable {
	t := &docTable{head: []string{"lock", "clients", "field", "want", "got", "met"}, num: []bool{false, true, false, false, true, false}}
	for i := range r.Runs {
		run := &r.Runs[i]
		for _, e := range run.Expectations {
			met, cls := expectVerdict(e)
			t.addClass(cls, seriesKey(run), fmt.Sprint(run.Clients), e.Field, e.Want, fmt.Sprint(e.Got), met)
		}
	}
	return t
}

func faultTable(run *Run) *docTable {
	t := &docTable{head: []string{"type", "target", "start s", "end s", "detail", "visits after", "bit", "observed", "error"},
		num: []bool{false, false, true, true, false, true, false, false, false}}
	for _, f := range run.Faults {
		detail := f.Detail
		if f.Method != "" {
			detail = strings.TrimSpace(detail + " (" + f.Method + ")")
		}
		bit := "-"
		if f.Bit != nil {
			bit = map[bool]string{true: "yes", false: "no"}[*f.Bit]
		}
		t.add(f.Error != "" || (f.Bit != nil && !*f.Bit), f.Type, f.Target, fmt.Sprintf("%.2f", f.StartS), fmt.Sprintf("%.2f", f.EndS),
			orDash(detail), fmt.Sprint(f.VisitsAfter), bit, orDash(f.Observed), orDash(f.Error))
	}
	return t
}

func eventTable(run *Run) *docTable {
	t := &docTable{head: []string{"at s", "first client (token)", "second client (token)", "overlap ms"}, num: []bool{true, false, false, true}}
	for i, ev := range run.ViolationEvents {
		if i == maxEventsShown {
			break
		}
		t.add(false, fmt.Sprintf("%.3f", ev.AtS), clientToken(ev.FirstClient, ev.FirstToken)+readerMark(ev.FirstShared),
			clientToken(ev.SecondClient, ev.SecondToken)+readerMark(ev.SecondShared), fmtNum(ev.OverlapMs))
	}
	return t
}

func clientToken(c int, tok uint64) string {
	if tok == 0 {
		return fmt.Sprintf("client-%d (no token)", c)
	}
	return fmt.Sprintf("client-%d (%d)", c, tok)
}
