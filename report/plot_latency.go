package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The percentile axis is in "nines": x = -log10(1 - p/100), so p90 is 1,
// p99 is 2, p99.9 is 3; the tail gets as much room as the body. The
// maximum (p100, infinitely far on that axis) is drawn at maxNines.
const maxNines = 6

func nines(p float64) float64 {
	if p >= 100 {
		return maxNines
	}
	return -math.Log10(1 - p/100)
}

var ninesTicks = plot.ConstantTicks{
	{Value: 0, Label: "p0"}, {Value: 1, Label: "p90"}, {Value: 2, Label: "p99"},
	{Value: 3, Label: "p99.9"}, {Value: 4, Label: "p99.99"}, {Value: 5, Label: "p99.999"},
	{Value: maxNines, Label: "max"},
}

// minLatencyMs is the floor of the log latency axis: HDR histograms record
// microseconds, and a zero would break the log scale.
const minLatencyMs = 0.001

// latencyFigure draws the percentile curves of one latency (acquire or
// hand-off) with one line per lock; a clients sweep gets one panel per
// client count.
func latencyFigure(r *Result, name, what string, pick func(*Run) *Latency) (figure, bool) {
	ss := groupSeries(r.Runs)
	var panels []latPanel
	if isSweep(ss) {
		for _, n := range clientValues(r.Runs) {
			pn := latPanel{title: fmt.Sprintf("%d clients", n)}
			for i := range r.Runs {
				if r.Runs[i].Clients == n {
					pn.runs = append(pn.runs, &r.Runs[i])
				}
			}
			panels = append(panels, pn)
		}
	} else {
		pn := latPanel{}
		for i := range r.Runs {
			pn.runs = append(pn.runs, &r.Runs[i])
		}
		panels = append(panels, pn)
	}
	return latencyPanels(name, what, fmt.Sprintf("%s latency percentiles: %s", what, r.Scenario), panels, seriesKey, pick)
}

// latPanel is one panel of a latency figure.
type latPanel struct {
	title string
	runs  []*Run
}

// latencyPanels draws one panel per entry of panels, one line per run
// named by key (a key keeps its style across panels), all panels sharing
// the y axis so they compare at a glance.
func latencyPanels(name, what, title string, panels []latPanel, key func(*Run) string, pick func(*Run) *Latency) (figure, bool) {
	// Styles follow the order of first appearance of every run, measured
	// or not, so a lock has the colour it has in the other plots.
	styles := map[string]seriesStyle{}
	var keys []string
	for _, pn := range panels {
		for _, run := range pn.runs {
			if k := key(run); !hasKey(styles, k) {
				styles[k] = styleOf(len(styles))
				keys = append(keys, k)
			}
		}
	}
	l := newLegend()
	lo, hi := math.Inf(1), 0.0
	inLegend := map[string]bool{}
	for _, pn := range panels {
		for _, run := range pn.runs {
			lat := pick(run)
			if lat.Count == 0 || len(lat.Curve) == 0 {
				continue
			}
			for _, pt := range lat.Curve {
				lo = math.Min(lo, math.Max(pt[1], minLatencyMs))
				hi = math.Max(hi, pt[1])
			}
			inLegend[key(run)] = true
		}
	}
	for _, k := range keys {
		if inLegend[k] {
			st := styles[k]
			l.add(k, &plotter.Line{LineStyle: st.line()}, &plotter.Scatter{GlyphStyle: st.glyph()})
		}
	}
	if l.n == 0 {
		return figure{}, false
	}
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(math.Max(hi, lo*10))))

	multi := len(panels) > 1
	cols := min(len(panels), 3)
	rows := (len(panels) + cols - 1) / cols
	_, lh := l.size()
	panelH := 330.0
	if rows > 1 {
		panelH = 260
	}
	h := math.Max(float64(rows)*panelH+30, lh.Points()+40)
	w := 792.0
	if cols > 1 {
		w = 1008
	}
	return figure{
		name: name, title: what + " latency percentiles (ms)", run: -1,
		w: vg.Points(w), h: vg.Points(h),
		draw: func(c draw.Canvas) {
			withLegend(c, l, "lock", func(c draw.Canvas) {
				if multi {
					sty := textStyle(sansBold(13), color.Black)
					sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
					c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y - vg.Points(4)}, title)
					c = draw.Crop(c, 0, 0, 0, -vg.Points(26))
				}
				tiles := draw.Tiles{Cols: cols, Rows: rows, PadX: vg.Points(10), PadY: vg.Points(10), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4)}
				for i, pn := range panels {
					pt := title
					if multi {
						pt = pn.title
					}
					// A short y label: gonum pads the top of the plot by the
					// length of a rotated label.
					p := newPlot(pt, "percentile (nines: p90, p99, p99.9, ...)", strings.ToLower(what)+", ms (log)")
					if multi {
						p.Title.TextStyle.Font = sansBold(11)
						p.X.Tick.Label.Font = sans(8.5)
					}
					for _, run := range pn.runs {
						lat := pick(run)
						if lat.Count == 0 {
							continue
						}
						var xys plotter.XYs
						for _, pt := range lat.Curve {
							xys = append(xys, plotter.XY{X: nines(pt[0]), Y: math.Log10(math.Max(pt[1], minLatencyMs))})
						}
						lineSeries(p, nil, "", styles[key(run)], xys)
					}
					p.X.Tick.Marker = ninesTicks
					p.X.Min, p.X.Max = 0, maxNines
					// y is log10(ms) on a linear axis: gonum's LogScale
					// misplaces the axis label (it centres it on the
					// arithmetic mean) and pads the plot by it.
					p.Y.Tick.Marker = log10Ticks{}
					p.Y.Min, p.Y.Max = math.Log10(lo), math.Log10(hi)
					p.Draw(tiles.At(c, i%cols, i/cols))
				}
			})
		},
	}, true
}

// log10Ticks labels an axis whose values are log10(v) with v in plain
// numbers ("0.01", "100") at powers of ten, unlabelled minor ticks at 2..9.
type log10Ticks struct{}

func (log10Ticks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(lo); e <= math.Ceil(hi); e++ {
		if e >= lo-1e-9 && e <= hi+1e-9 {
			ticks = append(ticks, plot.Tick{Value: e, Label: fmtNum(math.Pow(10, e))})
		}
		for m := 2.0; m < 10; m++ {
			if v := e + math.Log10(m); v > lo && v < hi {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}
