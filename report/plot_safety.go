package report

import (
	"fmt"
	"image/color"

	"github.com/locklab/locklab/checker"
)

// SafetyCell is the safety outcome of one lock in one result, summed over
// its runs (sweep points).
type SafetyCell struct {
	Runs   int
	Failed int // runs that produced no measurement
	// SafetyFigures sum the runs'.
	checker.SafetyFigures
	// ExpectMissed is true when a run of this lock did not meet its
	// expectations.
	ExpectMissed bool
	// Inconclusive is true when a run's verdict was inconclusive (and
	// none failed); Reason is the first such run's reason.
	Inconclusive bool
	Reason       string
}

// Unsafe reports whether the cell saw damage: an update lost, a stale write
// accepted by the resource, or a violation that fencing did not answer.
// A violation that fencing answered (every stale write rejected, nothing
// lost) is not damage: that cell is yellow, "only fencing kept the resource
// safe".
func (c *SafetyCell) Unsafe() bool {
	damage := c.LostUpdates > 0 || c.StaleAccepted > 0
	return damage || (c.Violations > 0 && c.StaleRejected == 0)
}

// String is the cell as "violations / stale accepted / stale rejected",
// with lost updates appended when there are any.
func (c *SafetyCell) String() string {
	if c == nil || c.Runs == 0 {
		return "not run"
	}
	if c.Failed == c.Runs {
		return "failed"
	}
	s := fmt.Sprintf("%d inc (%d lock, %d client) · %d / %d / %d", c.Incidents, c.LockFaults, c.ClientFaults,
		c.Violations, c.StaleAccepted, c.StaleRejected)
	if c.Inconclusive && !c.ExpectMissed {
		s += " ?"
	}
	if c.LostUpdates > 0 {
		s += fmt.Sprintf(" +%d lost", c.LostUpdates)
	}
	if c.ExpectMissed {
		s += " !"
	}
	return s
}

// SafetyMatrix is lock x scenario: one row per lock configuration, one
// column per result.
type SafetyMatrix struct {
	Rows  []string
	Cols  []string
	Cells [][]*SafetyCell // [row][col]; nil when the lock did not run there
}

// Safety builds the matrix of results, one column each, named by cols.
func Safety(results []*Result, cols []string) *SafetyMatrix {
	m := &SafetyMatrix{Cols: cols}
	rowOf := map[string]int{}
	for ci, r := range results {
		for i := range r.Runs {
			run := &r.Runs[i]
			k := seriesKey(run)
			ri, ok := rowOf[k]
			if !ok {
				ri = len(m.Rows)
				rowOf[k] = ri
				m.Rows = append(m.Rows, k)
				m.Cells = append(m.Cells, make([]*SafetyCell, len(results)))
			}
			cell := m.Cells[ri][ci]
			if cell == nil {
				cell = &SafetyCell{}
				m.Cells[ri][ci] = cell
			}
			cell.Runs++
			if !measured(run) {
				cell.Failed++
			}
			cell.SafetyFigures.Add(run.SafetyFigures)
			switch run.Verdict {
			case checker.VerdictInconclusive:
				if !cell.Inconclusive {
					cell.Reason = run.VerdictReason
				}
				cell.Inconclusive = true
			case checker.VerdictMet:
			default:
				if run.ExpectMet != nil && !*run.ExpectMet {
					cell.ExpectMissed = true
				}
			}
		}
	}
	return m
}

// safetyFigure draws m as a coloured table: red where the lock let damage
// through, yellow where only fencing saved the resource, green where
// nothing happened.
func safetyFigure(m *SafetyMatrix, name, title string) (figure, bool) {
	if len(m.Rows) == 0 {
		return figure{}, false
	}
	t := colourTable{
		name: name, title: title, rows: m.Rows, cols: m.Cols, minColW: 110,
		notes: []string{
			"cell: incidents (lock faults, client faults) · violations / stale writes accepted / stale writes rejected by fencing (+ lost updates); ! = expectations failed; ? = inconclusive",
			"lock fault: granted twice within the lock's own promise, nothing on the client side repairs it   client fault: holder inside past its promise, fencing repairs it",
			"red: mutual exclusion broken or damage accepted   yellow: only fencing kept the resource safe   green: no violation   blue: inconclusive (no evidence)   grey: not run or failed",
		},
	}
	for ri, row := range m.Rows {
		cells := make([]tableCell, len(m.Cols))
		for ci, col := range m.Cols {
			cell := m.Cells[ri][ci]
			fill := color.Color(colorNone)
			switch {
			case cell == nil || cell.Failed == cell.Runs:
			case cell.Unsafe():
				fill = colorBad
			case cell.Inconclusive && !cell.ExpectMissed:
				fill = colorInconclusive
			case cell.StaleRejected > 0:
				fill = colorWarn
			default:
				fill = colorOK
			}
			cells[ci] = tableCell{label: cell.String(), fill: fill}
			if cell != nil && cell.Inconclusive && cell.Reason != "" {
				t.notes = append(t.notes, fmt.Sprintf("? %s / %s: %s", row, col, cell.Reason))
			}
		}
		t.cells = append(t.cells, cells)
	}
	return t.figure(), true
}

// colorInconclusive fills cells whose safety claim had no evidence.
var colorInconclusive = rgb(0xb9c6ea)
