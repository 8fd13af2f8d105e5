package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// faultColors shade fault windows by type, so a reader tells a partition
// from a pause without reading the label.
var faultColors = map[string]color.Color{
	"latency":      rgb(0xf6c667),
	"bandwidth":    rgb(0xf6c667),
	"partition":    rgb(0x9ecae1),
	"reset":        rgb(0xc6dbef),
	"pause":        rgb(0xbcbddc),
	"pause-client": rgb(0xd4b9da),
	"kill":         rgb(0xfdae6b),
	"restart":      rgb(0xfdd0a2),
	"failover":     rgb(0xfc9272),
	"clock-jump":   rgb(0xa1d99b),
}

func faultColor(typ string) color.Color {
	if c, ok := faultColors[typ]; ok {
		return c
	}
	return colorFault
}

// timelineFigure is one run over time: completions and errors per bucket,
// fault windows shaded and labelled with type and target, and every
// violation marked where it happened, so a fault and its damage are in one
// picture.
func timelineFigure(r *Result, i int, name string, sweep bool) (figure, bool) {
	run := &r.Runs[i]
	if len(run.Timeline) == 0 && len(run.Faults) == 0 {
		return figure{}, false
	}
	bucketS := float64(run.TimelineBucketMs) / 1000
	if bucketS <= 0 {
		bucketS = 0.1
	}
	end := math.Max(run.DurationS, float64(len(run.Timeline))*bucketS)
	for _, f := range run.Faults {
		end = math.Max(end, f.EndS)
	}
	if end <= 0 {
		end = 1
	}
	var compl, errs plotter.XYs
	maxY := 0.0
	var violBuckets plotter.XYs
	totalViol := int64(0)
	for j, b := range run.Timeline {
		x := float64(j) * bucketS
		compl = append(compl, plotter.XY{X: x, Y: float64(b.Completions)})
		errs = append(errs, plotter.XY{X: x, Y: float64(b.Errors)})
		maxY = math.Max(maxY, math.Max(float64(b.Completions), float64(b.Errors)))
		if b.Violations > 0 {
			violBuckets = append(violBuckets, plotter.XY{X: x + bucketS/2, Y: float64(b.Violations)})
			totalViol += b.Violations
		}
	}
	if n := len(run.Timeline); n > 0 {
		// Close the last step at the end of its bucket.
		x := float64(n) * bucketS
		compl = append(compl, plotter.XY{X: x, Y: compl[n-1].Y})
		errs = append(errs, plotter.XY{X: x, Y: errs[n-1].Y})
	}
	hasErrs := false
	for _, e := range errs {
		hasErrs = hasErrs || e.Y > 0
	}
	if int64(run.Violations) > totalViol {
		totalViol = int64(run.Violations)
	}

	label := runLabel(run, sweep)
	title := fmt.Sprintf("%s: completions, faults and violations over time", label)
	if !run.Complete {
		title += " (partial)"
	}
	bucketMs := run.TimelineBucketMs
	if bucketMs <= 0 {
		bucketMs = 100
	}
	return figure{
		name: name, title: "Timeline of " + label, run: i,
		w: vg.Points(864), h: vg.Points(340),
		draw: func(c draw.Canvas) {
			p := newPlot(title, "time since workload start (s)", fmt.Sprintf("count per %d ms", bucketMs))
			l := newLegend()
			p.Add(&faultBands{faults: run.Faults})
			if len(compl) > 0 {
				line, err := plotter.NewLine(compl)
				if err == nil {
					line.StepStyle = plotter.PostStep
					line.LineStyle = draw.LineStyle{Color: rgb(0x1f77b4), Width: vg.Points(1.2)}
					line.FillColor = withAlpha(rgb(0x1f77b4), 0x40)
					p.Add(line)
					l.add("completions", line)
				}
			}
			if hasErrs {
				line, err := plotter.NewLine(errs)
				if err == nil {
					line.StepStyle = plotter.PostStep
					line.LineStyle = draw.LineStyle{Color: colorErrors, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
					p.Add(line)
					l.add("errors", line)
				}
			}
			// Labels last, on a light box, so lines never hide them.
			p.Add(&violationMarks{events: run.ViolationEvents, buckets: violBuckets}, &faultBands{faults: run.Faults, labels: true})
			if totalViol > 0 {
				l.add(fmt.Sprintf("violation (%d)", totalViol), violationThumb{})
			}
			seen := map[string]bool{}
			for _, f := range run.Faults {
				if !seen[f.Type] {
					seen[f.Type] = true
					l.add("fault: "+f.Type, faultThumb{faultColor(f.Type)})
				}
			}
			p.X.Min, p.X.Max = 0, end
			// Headroom above the data for fault labels and violation marks.
			p.Y.Min, p.Y.Max = 0, niceMax(maxY*1.4+1)
			p.Y.Tick.Marker = linearTicks{}
			p.X.Tick.Marker = linearTicks{}
			withLegend(c, l, "", p.Draw)
		},
	}, true
}

// faultBands shades each fault window over the full height of the data
// area or, with labels set, writes "type target" near its top, stacking
// labels that would overlap. Instantaneous faults (kill) are a thin band.
type faultBands struct {
	faults []FaultWindow
	labels bool
}

// violationRow is the room at the top of the data area kept for violation
// markers, above the fault labels.
const violationRow = 14

func (b *faultBands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := textStyle(sans(9), color.Black)
	sty.YAlign = draw.YTop
	lineH := sty.Rectangle("Xg").Size().Y + vg.Points(3)
	var rowEnds []vg.Length // right end of the last label in each row
	faults := append([]FaultWindow(nil), b.faults...)
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].StartS < faults[j].StartS })
	for _, f := range faults {
		x0, x1 := trX(f.StartS), trX(f.EndS)
		if x1-x0 < vg.Points(2) {
			x1 = x0 + vg.Points(2)
		}
		x0, x1 = max(x0, c.Min.X), min(x1, c.Max.X)
		if !b.labels {
			fill := withAlpha(faultColor(f.Type), 0x90)
			c.FillPolygon(fill, rectPts(x0, c.Min.Y, x1, c.Max.Y))
			c.StrokeLine2(draw.LineStyle{Color: faultColor(f.Type), Width: vg.Points(1)}, x0, c.Min.Y, x0, c.Max.Y)
			continue
		}
		txt := f.Type + " " + f.Target
		if f.Error != "" {
			txt += " (failed)"
		} else if f.Method != "" {
			txt += " (" + f.Method + ")"
		}
		w := sty.Rectangle(txt).Size().X
		tx := x0 + vg.Points(3)
		if tx+w > c.Max.X {
			tx = max(c.Min.X, c.Max.X-w-vg.Points(2))
		}
		row := 0
		for row < len(rowEnds) && rowEnds[row] > tx {
			row++
		}
		if row == len(rowEnds) {
			rowEnds = append(rowEnds, 0)
		}
		rowEnds[row] = tx + w + vg.Points(6)
		top := c.Max.Y - vg.Points(violationRow) - vg.Length(row)*lineH
		c.FillPolygon(color.NRGBA{R: 255, G: 255, B: 255, A: 0xd8}, rectPts(tx-vg.Points(2), top-lineH+vg.Points(2), tx+w+vg.Points(2), top+vg.Points(1)))
		c.FillText(sty, vg.Point{X: tx, Y: top}, txt)
	}
}

func rectPts(x0, y0, x1, y1 vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}, {X: x1, Y: y0}}
}

// violationMarks draws a red line at each recorded violation's time and a
// red marker with the count above each bucket that had violations (events
// beyond the kept maximum still show through their buckets).
type violationMarks struct {
	events  []ViolationEvent
	buckets plotter.XYs
}

func (m *violationMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	ls := draw.LineStyle{Color: withAlpha(colorViolation, 0xa0), Width: vg.Points(0.8)}
	for _, ev := range m.events {
		x := trX(ev.AtS)
		if c.ContainsX(x) {
			c.StrokeLine2(ls, x, c.Min.Y, x, c.Max.Y-vg.Points(4))
		}
	}
	gs := draw.GlyphStyle{Color: colorViolation, Radius: vg.Points(4), Shape: downTriangle{}}
	sty := textStyle(sansBold(8), colorViolation)
	sty.YAlign = draw.YCenter
	y := c.Max.Y - vg.Points(violationRow/2)
	for _, b := range m.buckets {
		x := trX(b.X)
		if !c.ContainsX(x) {
			continue
		}
		c.DrawGlyph(gs, vg.Point{X: x, Y: y})
		if b.Y > 1 {
			c.FillText(sty, vg.Point{X: x + vg.Points(5), Y: y}, fmt.Sprint(b.Y))
		}
	}
}

type violationThumb struct{}

func (violationThumb) Thumbnail(c *draw.Canvas) {
	x := c.Center().X
	c.StrokeLine2(draw.LineStyle{Color: colorViolation, Width: vg.Points(1)}, x, c.Min.Y, x, c.Max.Y)
	c.DrawGlyph(draw.GlyphStyle{Color: colorViolation, Radius: vg.Points(3.5), Shape: downTriangle{}}, vg.Point{X: x - vg.Points(8), Y: c.Center().Y})
}

type faultThumb struct{ color color.Color }

func (t faultThumb) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(withAlpha(t.color, 0x90), []vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y},
	})
}

// downTriangle is a filled triangle pointing down, at the point it marks.
type downTriangle struct{}

func (downTriangle) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	c.FillPolygon(sty.Color, []vg.Point{
		{X: pt.X - r, Y: pt.Y + r}, {X: pt.X + r, Y: pt.Y + r}, {X: pt.X, Y: pt.Y - r*0.8},
	})
}
