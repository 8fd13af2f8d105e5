package report

import (
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// AtlasGrid is the safety atlas as a table of verdicts: one row per lock,
// one column per fault family (the atlas package fills it; report draws it
// without knowing the atlas's types).
type AtlasGrid struct {
	Rows, Cols []string
	Cells      [][]AtlasCell // [row][col]
}

// AtlasCell is one cell: its verdict ("safe", "unsafe",
// "unsafe-without-fencing", "inconclusive", "not-applicable") and the text
// shown in it (runs with incidents / runs).
type AtlasCell struct {
	Verdict string
	Label   string
}

var atlasColours = map[string]color.Color{
	"safe": colorOK, "unsafe": colorBad, "unsafe-without-fencing": colorWarn,
	"inconclusive": colorInconclusive, "not-applicable": colorNone,
}

// WriteAtlasPNG draws g into path (a .png; an .svg is written beside it).
func WriteAtlasPNG(path string, g AtlasGrid) error {
	headSty := textStyle(sansBold(9), color.Black)
	headSty.XAlign, headSty.YAlign = draw.XCenter, draw.YCenter
	cellSty := textStyle(sans(9), color.Black)
	cellSty.XAlign, cellSty.YAlign = draw.XCenter, draw.YCenter
	rowSty := textStyle(sans(10), color.Black)
	rowSty.XAlign, rowSty.YAlign = draw.XRight, draw.YCenter
	titleSty := textStyle(sansBold(13), color.Black)
	titleSty.YAlign = draw.YTop
	noteSty := textStyle(sans(9), color.Gray{Y: 0x40})
	noteSty.YAlign = draw.YTop
	width := func(sty interface{ Rectangle(string) vg.Rectangle }, s string) vg.Length {
		return sty.Rectangle(s).Size().X
	}

	title := "Safety atlas: every lock against every fault family (runs with >= 1 incident / runs)"
	note := "green safe   red unsafe (the lock broke its promise)   yellow unsafe without fencing (client faults, lost updates)   blue inconclusive   grey not applicable"
	rowW := vg.Points(60)
	for _, r := range g.Rows {
		rowW = max(rowW, width(rowSty, r)+vg.Points(14))
	}
	colW := make([]vg.Length, len(g.Cols))
	for ci, c := range g.Cols {
		colW[ci] = vg.Points(46)
		for _, part := range strings.Split(c, "-") {
			colW[ci] = max(colW[ci], width(headSty, part)+vg.Points(10))
		}
	}
	const rowH, headH, titleH, left, top = 20.0, 48.0, 26.0, 10.0, 10.0
	tableW := rowW
	for _, w := range colW {
		tableW += w
	}
	w := max(tableW, width(titleSty, title), width(noteSty, note)) + vg.Points(2*left)
	h := vg.Points(top + titleH + headH + rowH*float64(len(g.Rows)) + 30)
	fig := figure{
		name: strings.TrimSuffix(filepath.Base(path), ".png"), title: title, run: -1, w: w, h: h,
		draw: func(c draw.Canvas) {
			y := c.Max.Y - vg.Points(top)
			c.FillText(titleSty, vg.Point{X: c.Min.X + vg.Points(left), Y: y}, title)
			y -= vg.Points(titleH)
			x := c.Min.X + vg.Points(left) + rowW
			for ci, col := range g.Cols {
				// Family names break at their dashes, one word per line.
				parts := strings.Split(col, "-")
				for pi, part := range parts {
					dy := (float64(pi) - float64(len(parts)-1)/2) * 11
					c.FillText(headSty, vg.Point{X: x + colW[ci]/2, Y: y - vg.Points(headH/2+dy)}, part)
				}
				x += colW[ci]
			}
			y -= vg.Points(headH)
			line := draw.LineStyle{Color: color.White, Width: vg.Points(2)}
			for ri, row := range g.Rows {
				c.FillText(rowSty, vg.Point{X: c.Min.X + vg.Points(left) + rowW - vg.Points(6), Y: y - vg.Points(rowH/2)}, row)
				x := c.Min.X + vg.Points(left) + rowW
				for ci := range g.Cols {
					cell := g.Cells[ri][ci]
					fill, ok := atlasColours[cell.Verdict]
					if !ok {
						fill = colorNone
					}
					rect := []vg.Point{{X: x, Y: y}, {X: x + colW[ci], Y: y}, {X: x + colW[ci], Y: y - vg.Points(rowH)}, {X: x, Y: y - vg.Points(rowH)}}
					c.FillPolygon(fill, rect)
					c.StrokeLines(line, append(rect, rect[0]))
					c.FillText(cellSty, vg.Point{X: x + colW[ci]/2, Y: y - vg.Points(rowH/2)}, cell.Label)
					x += colW[ci]
				}
				y -= vg.Points(rowH)
			}
			c.FillText(noteSty, vg.Point{X: c.Min.X + vg.Points(left), Y: y - vg.Points(8)}, note)
		},
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return fig.save(filepath.Dir(path))
}
