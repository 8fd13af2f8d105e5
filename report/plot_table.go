package report

import (
	"image/color"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// colourTable is a table of coloured, labelled cells under a title, with
// notes below it: the safety matrix of a report and the atlas grid.
type colourTable struct {
	name, title string
	rows, cols  []string
	cells       [][]tableCell // [row][col]
	notes       []string
	// splitHeads breaks column heads at their dashes, one word a line
	// (fault family names); otherwise a head is one line.
	splitHeads bool
	// minColW is the narrowest a column may be, in points.
	minColW float64
}

// tableCell is one cell's text and fill.
type tableCell struct {
	label string
	fill  color.Color
}

// figure lays t out: each column as wide as its widest head word or label.
func (t colourTable) figure() figure {
	centred := func(size float64, bold bool) draw.TextStyle {
		font := sans(size)
		if bold {
			font = sansBold(size)
		}
		sty := textStyle(font, color.Black)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		return sty
	}
	headSty, cellSty := centred(10, true), centred(10, false)
	rowSty := textStyle(sans(10), color.Black)
	rowSty.XAlign, rowSty.YAlign = draw.XRight, draw.YCenter
	titleSty := textStyle(sansBold(13), color.Black)
	titleSty.YAlign = draw.YTop
	noteSty := textStyle(sans(9), color.Gray{Y: 0x40})
	noteSty.YAlign = draw.YTop
	width := func(sty draw.TextStyle, s string) vg.Length { return sty.Rectangle(s).Size().X }

	heads := make([][]string, len(t.cols))
	lines := 1
	for ci, c := range t.cols {
		heads[ci] = []string{c}
		if t.splitHeads {
			heads[ci] = strings.Split(c, "-")
		}
		lines = max(lines, len(heads[ci]))
	}
	rowW := vg.Points(60)
	for _, r := range t.rows {
		rowW = max(rowW, width(rowSty, r)+vg.Points(16))
	}
	colW := make([]vg.Length, len(t.cols))
	tableW := rowW
	for ci := range t.cols {
		colW[ci] = vg.Points(t.minColW)
		for _, part := range heads[ci] {
			colW[ci] = max(colW[ci], width(headSty, part)+vg.Points(12))
		}
		for ri := range t.rows {
			colW[ci] = max(colW[ci], width(cellSty, t.cells[ri][ci].label)+vg.Points(12))
		}
		tableW += colW[ci]
	}
	const rowH, lineH, titleH, noteH, left, top = 22.0, 12.0, 30.0, 14.0, 10.0, 10.0
	headH := float64(lines)*lineH + 14
	w := max(tableW, width(titleSty, t.title)) + vg.Points(2*left)
	for _, n := range t.notes {
		w = max(w, width(noteSty, n)+vg.Points(2*left))
	}
	h := vg.Points(top + titleH + headH + rowH*float64(len(t.rows)) + noteH*float64(len(t.notes)) + 16)
	return figure{
		name: t.name, title: t.title, run: -1, w: w, h: h,
		draw: func(c draw.Canvas) {
			y := c.Max.Y - vg.Points(top)
			c.FillText(titleSty, vg.Point{X: c.Min.X + vg.Points(left), Y: y}, t.title)
			y -= vg.Points(titleH)
			x := c.Min.X + vg.Points(left) + rowW
			for ci := range t.cols {
				for pi, part := range heads[ci] {
					dy := (float64(pi) - float64(len(heads[ci])-1)/2) * lineH
					c.FillText(headSty, vg.Point{X: x + colW[ci]/2, Y: y - vg.Points(headH/2+dy)}, part)
				}
				x += colW[ci]
			}
			y -= vg.Points(headH)
			grid := draw.LineStyle{Color: color.White, Width: vg.Points(2)}
			for ri, row := range t.rows {
				c.FillText(rowSty, vg.Point{X: c.Min.X + vg.Points(left) + rowW - vg.Points(8), Y: y - vg.Points(rowH/2)}, row)
				x := c.Min.X + vg.Points(left) + rowW
				for ci := range t.cols {
					cell := t.cells[ri][ci]
					rect := []vg.Point{{X: x, Y: y}, {X: x + colW[ci], Y: y}, {X: x + colW[ci], Y: y - vg.Points(rowH)}, {X: x, Y: y - vg.Points(rowH)}}
					c.FillPolygon(cell.fill, rect)
					c.StrokeLines(grid, append(rect, rect[0]))
					c.FillText(cellSty, vg.Point{X: x + colW[ci]/2, Y: y - vg.Points(rowH/2)}, cell.label)
					x += colW[ci]
				}
				y -= vg.Points(rowH)
			}
			y -= vg.Points(8)
			for _, n := range t.notes {
				c.FillText(noteSty, vg.Point{X: c.Min.X + vg.Points(left), Y: y}, n)
				y -= vg.Points(noteH)
			}
		},
	}
}
