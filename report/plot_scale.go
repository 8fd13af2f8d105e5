package report

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// scaleFigure shows what the harness and the locks cost as clients grow:
// the harness's peak RSS and acquire latency (p50, p99) against clients,
// one line per lock. Drawn for results sweeping clients whose runs
// recorded their peak RSS (the throughput plot shows ops/s).
func scaleFigure(r *Result) (figure, bool) {
	ss := groupSeries(r.Runs)
	if len(ss) == 0 || !isSweep(ss) || !hasRSS(r.Runs) {
		return figure{}, false
	}
	clients := clientValues(r.Runs)
	_, lh := legendFor(ss).size()
	panelH := math.Max(300, float64(lh.Points())+60)
	panels := []struct {
		title, y string
		value    func(*Run) float64
	}{
		{"Harness peak RSS against clients", "peak RSS of the harness process (MB)", func(run *Run) float64 { return run.PeakRSSMB }},
		{"Acquire p50 against clients", "acquire p50 (ms)", func(run *Run) float64 { return run.Acquire.P50Ms }},
		{"Acquire p99 against clients", "acquire p99 (ms)", func(run *Run) float64 { return run.Acquire.P99Ms }},
	}
	return figure{
		name: "scale", title: "Peak RSS and acquire latency against clients", run: -1,
		w: vg.Points(792), h: vg.Points(panelH * float64(len(panels))),
		draw: func(c draw.Canvas) {
			h := (c.Max.Y - c.Min.Y) / vg.Length(len(panels))
			for i, pn := range panels {
				top := c.Max.Y - vg.Length(i)*h
				pc := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
					Min: vg.Point{X: c.Min.X, Y: top - h + vg.Points(6)}, Max: vg.Point{X: c.Max.X, Y: top},
				}}
				againstClients(pc, fmt.Sprintf("%s: %s", pn.title, r.Scenario), pn.y, ss, clients, pn.value)
			}
		},
	}, true
}

// againstClients draws value(run) against clients, one line per series.
func againstClients(c draw.Canvas, title, yLabel string, ss []*series, clients []int, value func(*Run) float64) {
	l := newLegend()
	logX := len(clients) > 1 && clients[0] > 0 && clients[len(clients)-1] >= 4*clients[0]
	xl := "clients"
	if logX {
		xl = "clients (log scale)"
	}
	p := newPlot(title, xl, yLabel)
	maxV := 0.0
	for _, s := range ss {
		var xys plotter.XYs
		for _, run := range s.Runs {
			if v := value(run); measured(run) && v > 0 {
				xys = append(xys, plotter.XY{X: float64(run.Clients), Y: v})
				maxV = math.Max(maxV, v)
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
}

func hasRSS(runs []Run) bool {
	for _, r := range runs {
		if r.PeakRSSMB > 0 {
			return true
		}
	}
	return false
}

// scaleTable lists, for results sweeping clients, each run's throughput,
// acquire latency, the harness's peak RSS and, in open-loop runs, the
// achieved against the requested rate.
func scaleTable(r *Result) *docTable {
	t := &docTable{
		head: []string{"lock", "clients", "ops/s", "acq p50 ms", "acq p99 ms", "peak RSS MB", "rate achieved / requested", "warning"},
		num:  []bool{false, true, true, true, true, true, false, false},
	}
	if !isSweep(groupSeries(r.Runs)) || !hasRSS(r.Runs) {
		return t
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		rate := "-"
		if run.RateRequested > 0 {
			rate = fmtNum(run.RateAchieved) + " / " + fmtNum(run.RateRequested)
		}
		warn := "-"
		if run.RateWarning != "" {
			warn = "behind schedule"
		}
		t.add(run.RateWarning != "", seriesKey(run), fmt.Sprint(run.Clients), fmtNum(run.Throughput),
			latMs(run.Acquire, run.Acquire.P50Ms), latMs(run.Acquire, run.Acquire.P99Ms),
			fmtNum(run.PeakRSSMB), rate, warn)
	}
	return t
}
