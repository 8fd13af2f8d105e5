package report

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// throughputFigure is ops/s per lock as horizontal bars, or, when the
// result sweeps clients, ops/s against clients with one line per lock.
func throughputFigure(r *Result) (figure, bool) {
	ss := groupSeries(r.Runs)
	if len(ss) == 0 {
		return figure{}, false
	}
	if isSweep(ss) {
		return throughputSweep(r, ss), true
	}
	return throughputBars(r, ss), true
}

func throughputBars(r *Result, ss []*series) figure {
	type bar struct {
		label string
		value float64
		note  string
		style seriesStyle
	}
	var bars []bar
	maxV := 0.0
	for _, s := range ss {
		for _, run := range s.Runs {
			b := bar{label: runLabel(run, false), value: run.Throughput, style: s.Style}
			b.note = fmt.Sprintf("%s ops/s", fmtNum(run.Throughput))
			switch {
			case run.Error != "" && run.Ops == 0:
				b.note = "failed"
			case !run.Complete:
				b.note += " (partial)"
			}
			if run.Violations > 0 {
				b.note += fmt.Sprintf(", %d violations", run.Violations)
			}
			bars = append(bars, b)
			maxV = math.Max(maxV, run.Throughput)
		}
	}
	n := len(bars)
	title := fmt.Sprintf("Throughput per lock: %s (%d clients, %s ms critical section)",
		r.Scenario, r.Workload.Clients, fmtNum(r.Workload.CriticalMs))
	if !sameClients(r.Runs) {
		title = fmt.Sprintf("Throughput per lock: %s", r.Scenario)
	}
	h := vg.Points(110 + 24*float64(n))
	return figure{
		name: "throughput", title: "Throughput per lock (ops/s)", run: -1,
		w: vg.Points(792), h: h,
		draw: func(c draw.Canvas) {
			p := newPlot(title, "throughput (completed critical sections per second, all clients)", "")
			names := make([]string, n)
			var lx plotter.XYs
			var ltext []string
			for i, b := range bars {
				y := float64(n - 1 - i) // first lock on top
				names[n-1-i] = b.label
				bc, err := plotter.NewBarChart(plotter.Values{b.value}, vg.Points(16))
				if err != nil {
					continue
				}
				bc.Horizontal = true
				bc.XMin = y
				bc.Color = b.style.Color
				bc.LineStyle.Width = 0
				p.Add(bc)
				lx = append(lx, plotter.XY{X: b.value, Y: y})
				ltext = append(ltext, b.note)
			}
			if labels, err := plotter.NewLabels(plotter.XYLabels{XYs: lx, Labels: ltext}); err == nil {
				for i := range labels.TextStyle {
					labels.TextStyle[i].Font = sans(9.5)
					labels.TextStyle[i].YAlign = draw.YCenter
				}
				labels.Offset = vg.Point{X: vg.Points(4)}
				p.Add(labels)
			}
			p.NominalY(names...)
			p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
			p.Y.Tick.Label.Font = sans(10)
			p.X.Min = 0
			// Room on the right for the value labels.
			p.X.Max = niceMax(maxV * 1.3)
			p.X.Tick.Marker = linearTicks{}
			p.Draw(c)
		},
	}
}

func throughputSweep(r *Result, ss []*series) figure {
	l := newLegend()
	clients := clientValues(r.Runs)
	logX := len(clients) > 1 && clients[0] > 0 && clients[len(clients)-1] >= 4*clients[0]
	maxV := 0.0
	for _, s := range ss {
		for _, run := range s.Runs {
			maxV = math.Max(maxV, run.Throughput)
		}
	}
	_, lh := legendFor(ss).size()
	h := vg.Points(math.Max(400, float64(lh.Points())+60))
	return figure{
		name: "throughput", title: "Throughput against clients (ops/s)", run: -1,
		w: vg.Points(792), h: h,
		draw: func(c draw.Canvas) {
			xl := "clients"
			if logX {
				xl = "clients (log scale)"
			}
			p := newPlot(fmt.Sprintf("Throughput against clients: %s (%s ms critical section)", r.Scenario, fmtNum(r.Workload.CriticalMs)),
				xl, "throughput (ops/s)")
			for _, s := range ss {
				var xys plotter.XYs
				for _, run := range s.Runs {
					if measured(run) {
						xys = append(xys, plotter.XY{X: float64(run.Clients), Y: run.Throughput})
					}
				}
				lineSeries(p, l, s.Key, s.Style, xys)
			}
			var ticks []plot.Tick
			for _, n := range clients {
				ticks = append(ticks, plot.Tick{Value: float64(n), Label: strconv.Itoa(n)})
			}
			p.X.Tick.Marker = plot.ConstantTicks(ticks)
			if logX {
				p.X.Scale = plot.LogScale{}
			}
			p.X.Min, p.X.Max = float64(clients[0]), float64(clients[len(clients)-1])
			p.Y.Min, p.Y.Max = 0, niceMax(maxV*1.05)
			p.Y.Tick.Marker = linearTicks{}
			withLegend(c, l, "lock", p.Draw)
		},
	}
}

// legendFor is a legend with one line entry per series, for sizing.
func legendFor(ss []*series) *legend {
	l := newLegend()
	for _, s := range ss {
		line := &plotter.Line{LineStyle: s.Style.line()}
		l.add(s.Key, line)
	}
	return l
}

func sameClients(runs []Run) bool {
	for _, r := range runs {
		if r.Clients != runs[0].Clients {
			return false
		}
	}
	return true
}

var (
	colorFault     = rgb(0xf0a030)
	colorViolation = rgb(0xd00000)
	colorErrors    = rgb(0x888888)
	colorOK        = rgb(0xb7e1a1)
	colorWarn      = rgb(0xffe08a)
	colorBad       = rgb(0xf4a3a3)
	colorNone      = color.Gray{Y: 0xe8}
)
