package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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
			case VerdictInconclusive:
				if !cell.Inconclusive {
					cell.Reason = run.VerdictReason
				}
				cell.Inconclusive = true
			case VerdictMet:
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
	cellSty := textStyle(sans(10), color.Black)
	cellSty.XAlign, cellSty.YAlign = draw.XCenter, draw.YCenter
	headSty := textStyle(sansBold(10), color.Black)
	headSty.XAlign, headSty.YAlign = draw.XCenter, draw.YCenter
	rowSty := textStyle(sans(10), color.Black)
	rowSty.XAlign, rowSty.YAlign = draw.XRight, draw.YCenter
	titleSty := textStyle(sansBold(13), color.Black)
	titleSty.YAlign = draw.YTop
	noteSty := textStyle(sans(9), color.Gray{Y: 0x40})
	noteSty.YAlign = draw.YTop

	width := func(sty interface{ Rectangle(string) vg.Rectangle }, s string) vg.Length {
		return sty.Rectangle(s).Size().X
	}
	rowW := vg.Points(60)
	for _, r := range m.Rows {
		rowW = max(rowW, width(rowSty, r)+vg.Points(16))
	}
	colW := make([]vg.Length, len(m.Cols))
	for ci, c := range m.Cols {
		colW[ci] = max(vg.Points(110), width(headSty, c)+vg.Points(20))
		for ri := range m.Rows {
			colW[ci] = max(colW[ci], width(cellSty, m.Cells[ri][ci].String())+vg.Points(20))
		}
	}
	notes := []string{
		"cell: incidents (lock faults, client faults) · violations / stale writes accepted / stale writes rejected by fencing (+ lost updates); ! = expectations failed; ? = inconclusive",
		"lock fault: granted twice within the lock's own promise, nothing on the client side repairs it   client fault: holder inside past its promise, fencing repairs it",
		"red: mutual exclusion broken or damage accepted   yellow: only fencing kept the resource safe   green: no violation   blue: inconclusive (no evidence)   grey: not run or failed",
	}
	for ri, row := range m.Rows {
		for ci, col := range m.Cols {
			if c := m.Cells[ri][ci]; c != nil && c.Inconclusive && c.Reason != "" {
				notes = append(notes, fmt.Sprintf("? %s / %s: %s", row, col, c.Reason))
			}
		}
	}
	const rowH, headH, titleH, left, top = 22.0, 26.0, 30.0, 10.0, 10.0
	tableW := rowW
	for _, w := range colW {
		tableW += w
	}
	w := max(tableW+vg.Points(2*left), width(titleSty, title)+vg.Points(2*left))
	for _, n := range notes {
		w = max(w, width(noteSty, n)+vg.Points(2*left))
	}
	noteH := float64(len(notes)) * 14
	h := vg.Points(top + titleH + headH + rowH*float64(len(m.Rows)) + noteH + 16)
	return figure{
		name: name, title: title, run: -1, w: w, h: h,
		draw: func(c draw.Canvas) {
			y := c.Max.Y - vg.Points(top)
			c.FillText(titleSty, vg.Point{X: c.Min.X + vg.Points(left), Y: y}, title)
			y -= vg.Points(titleH)
			x := c.Min.X + vg.Points(left) + rowW
			for ci, col := range m.Cols {
				c.FillText(headSty, vg.Point{X: x + colW[ci]/2, Y: y - vg.Points(headH/2)}, col)
				x += colW[ci]
			}
			y -= vg.Points(headH)
			grid := draw.LineStyle{Color: color.White, Width: vg.Points(2)}
			for ri, row := range m.Rows {
				c.FillText(rowSty, vg.Point{X: c.Min.X + vg.Points(left) + rowW - vg.Points(8), Y: y - vg.Points(rowH/2)}, row)
				x := c.Min.X + vg.Points(left) + rowW
				for ci := range m.Cols {
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
					rect := []vg.Point{{X: x, Y: y}, {X: x + colW[ci], Y: y}, {X: x + colW[ci], Y: y - vg.Points(rowH)}, {X: x, Y: y - vg.Points(rowH)}}
					c.FillPolygon(fill, rect)
					c.StrokeLines(grid, append(rect, rect[0]))
					c.FillText(cellSty, vg.Point{X: x + colW[ci]/2, Y: y - vg.Points(rowH/2)}, cell.String())
					x += colW[ci]
				}
				y -= vg.Points(rowH)
			}
			y -= vg.Points(8)
			for _, n := range notes {
				c.FillText(noteSty, vg.Point{X: c.Min.X + vg.Points(left), Y: y}, n)
				y -= vg.Points(14)
			}
		},
	}, true
}

// colorInconclusive fills cells whose safety claim had no evidence.
var colorInconclusive = rgb(0xb9c6ea)
