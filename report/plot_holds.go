package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// maxHoldBars bounds the visits read per run: a long run's holds plot
// shows its first maxHoldBars visits (the file says so in its title).
const maxHoldBars = 20000

// holdsAggregateAbove is the most visits drawn one bar each: beyond it the
// bars are thinner than a pixel and the plot is a barcode, so each
// client's lane shows its completions per time bucket instead (holdHeat),
// with the violations per bucket marked above.
const holdsAggregateAbove = 400

// holdsBuckets is about how many time buckets an aggregated holds plot
// has across the run.
const holdsBuckets = 200

// holdBar is one visit as history.jsonl tells it, in seconds.
type holdBar struct {
	client              int
	acquired, validTill float64 // the promise: from the grant to its end
	enter, exit         float64
	unbounded, open     bool
}

// historyLine is what the holds plot reads of a history.jsonl line (the
// checker's Op; report does not import the checker).
type historyLine struct {
	Run        int    `json:"run"`
	Client     int    `json:"client"`
	Op         string `json:"op"`
	Visit      uint64 `json:"visit"`
	Return     int64  `json:"return_ns"`
	ValidUntil int64  `json:"valid_until_ns"`
	Unbounded  bool   `json:"unbounded"`
}

// readHolds reads the visits of every run from dir's history, streaming, keeping at
// most maxHoldBars per run; nil when there is no history.
func readHolds(dir string) map[int][]holdBar {
	f, err := OpenHistory(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[int][]holdBar{}
	open := map[[2]uint64]int{} // (run, visit) -> index in out[run]
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l historyLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		k := [2]uint64{uint64(l.Run), l.Visit}
		t := float64(l.Return) / 1e9
		switch l.Op {
		case "acquire":
			if len(out[l.Run]) >= maxHoldBars {
				continue
			}
			out[l.Run] = append(out[l.Run], holdBar{client: l.Client, acquired: t, validTill: float64(l.ValidUntil) / 1e9,
				unbounded: l.Unbounded, open: true})
			open[k] = len(out[l.Run]) - 1
		case "enter", "exit", "renew":
			i, ok := open[k]
			if !ok {
				continue
			}
			b := &out[l.Run][i]
			switch l.Op {
			case "enter":
				b.enter, b.exit = t, t
			case "exit":
				b.exit, b.open = t, false
				delete(open, k)
			case "renew":
				b.validTill = math.Max(b.validTill, float64(l.ValidUntil)/1e9)
			}
		}
	}
	return out
}

// holdsFigure is one run's per-client timeline: a lane per client, a bar
// per visit, a thinner bar under it for the promise the holder had, fault
// windows shaded and incidents marked (red: lock fault, orange: client
// fault), so a reader sees the overlap and whose promise it broke.
func holdsFigure(r *Result, i int, name string, bars []holdBar) (figure, bool) {
	run := &r.Runs[i]
	if len(bars) == 0 {
		return figure{}, false
	}
	clients := max(run.Clients, 1)
	end := run.DurationS
	for _, b := range bars {
		if b.open {
			b.exit = end
		}
		end = math.Max(end, b.exit)
	}
	title := fmt.Sprintf("%s: who held the lock when (bar: inside; thin bar: promised validity)", seriesKey(run))
	aggregate := len(bars) > holdsAggregateAbove
	var heat *holdHeat
	if aggregate {
		heat = newHoldHeat(bars, run, clients, end)
		title = fmt.Sprintf("%s: completions per client per %s ms (%d visits, too many for one bar each)", seriesKey(run), fmtNum(heat.bucketS*1000), len(bars))
	}
	if len(bars) >= maxHoldBars {
		title += fmt.Sprintf(" — first %d visits", maxHoldBars)
	}
	h := vg.Points(math.Max(220, 60+28*float64(clients)))
	return figure{
		name: strings.Replace(name, "timeline-", "holds-", 1), title: "Holds of " + seriesKey(run), run: i,
		w: vg.Points(864), h: h,
		draw: func(c draw.Canvas) {
			p := newPlot(title, "time since workload start (s)", "client")
			l := newLegend()
			p.Add(&faultBands{faults: run.Faults})
			if aggregate {
				p.Add(heat, &violationMarks{buckets: heat.violations})
				l.add(fmt.Sprintf("completions per bucket: 1 to %d", heat.max), heatThumb{})
				if len(heat.violations) > 0 {
					l.add("violations in the bucket", violationThumb{})
				}
			} else {
				p.Add(&holdLanes{bars: bars, end: end, incidents: run.IncidentEvents})
				l.add("inside the resource", faultThumb{colorHold})
				l.add("promised validity", faultThumb{colorPromise})
			}
			p.Add(&faultBands{faults: run.Faults, labels: true})
			l.add("lock fault", faultThumb{colorViolation})
			l.add("client fault", faultThumb{colorClientFault})
			p.X.Min, p.X.Max = 0, end
			p.Y.Min, p.Y.Max = -0.7, float64(clients)-0.3+0.9
			p.Y.Tick.Marker = laneTicks(clients)
			p.X.Tick.Marker = linearTicks{}
			withLegend(c, l, "", p.Draw)
		},
	}, true
}

var (
	colorHold        = rgb(0x4c78a8)
	colorPromise     = rgb(0x9ecae9)
	colorClientFault = rgb(0xf58518)
)

type laneTicks int

func (n laneTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for i := 0; i < int(n); i++ {
		ts = append(ts, plot.Tick{Value: float64(i), Label: fmt.Sprintf("client-%d", i)})
	}
	return ts
}

// holdLanes draws the bars and the incident marks.
type holdLanes struct {
	bars      []holdBar
	end       float64
	incidents []IncidentEvent
}

// plotIncidents shades each incident's span (at least 1.5 pt wide) over
// the whole height of c, in its fault's colour; with edge, a line marks
// its start.
func plotIncidents(c draw.Canvas, trX func(float64) vg.Length, incidents []IncidentEvent, edge bool) {
	clip := func(x vg.Length) vg.Length { return min(max(x, c.Min.X), c.Max.X) }
	for _, in := range incidents {
		col := colorViolation
		if in.Fault == "client" {
			col = colorClientFault
		}
		x0, x1 := clip(trX(in.StartS)), clip(trX(in.EndS))
		c.FillPolygon(withAlpha(col, 0x50), rectPts(x0, c.Min.Y, max(x1, x0+vg.Points(1.5)), c.Max.Y))
		if edge {
			c.StrokeLine2(draw.LineStyle{Color: col, Width: vg.Points(1.2)}, x0, c.Min.Y, x0, c.Max.Y)
		}
	}
}

func (h *holdLanes) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	clip := func(x vg.Length) vg.Length { return min(max(x, c.Min.X), c.Max.X) }
	plotIncidents(c, trX, h.incidents, true)
	sort.SliceStable(h.bars, func(i, j int) bool { return h.bars[i].enter < h.bars[j].enter })
	for _, b := range h.bars {
		y := float64(b.client)
		till := b.validTill
		if b.unbounded {
			till = h.end
		}
		if till > b.acquired {
			c.FillPolygon(colorPromise, rectPts(clip(trX(b.acquired)), trY(y-0.42), clip(trX(till)), trY(y-0.30)))
		}
		exit := b.exit
		if b.open {
			exit = h.end
		}
		x0, x1 := clip(trX(b.enter)), clip(trX(exit))
		x1 = max(x1, x0+vg.Points(0.8))
		c.FillPolygon(colorHold, rectPts(x0, trY(y-0.25), x1, trY(y+0.25)))
	}
	sty := textStyle(sansBold(8), color.Black)
	sty.YAlign = draw.YTop
	for _, in := range h.incidents {
		c.FillText(sty, vg.Point{X: clip(trX(in.StartS)) + vg.Points(2), Y: c.Max.Y - vg.Points(2)}, in.Fault+" fault")
	}
}

// holdHeat is the aggregated holds plot: per client lane and time bucket
// a cell whose darkness is the client's completions in the bucket, the
// incidents shaded across the lanes, and the violations per bucket (from
// the run's timeline) marked above.
type holdHeat struct {
	bucketS    float64
	counts     [][]int // [client][bucket] completions
	max        int
	violations plotter.XYs
	incidents  []IncidentEvent
}

func newHoldHeat(bars []holdBar, run *Run, clients int, end float64) *holdHeat {
	tl := float64(run.TimelineBucketMs) / 1000
	if tl <= 0 {
		tl = 0.1
	}
	// A multiple of the timeline's bucket, so violations line up.
	k := max(1, int(math.Ceil(end/tl/holdsBuckets)))
	h := &holdHeat{bucketS: tl * float64(k), incidents: run.IncidentEvents}
	n := int(math.Ceil(end/h.bucketS)) + 1
	h.counts = make([][]int, clients)
	for i := range h.counts {
		h.counts[i] = make([]int, n)
	}
	for _, b := range bars {
		if b.open || b.client < 0 || b.client >= clients {
			continue
		}
		j := min(n-1, int(b.exit/h.bucketS))
		h.counts[b.client][j]++
		h.max = max(h.max, h.counts[b.client][j])
	}
	viol := make([]int64, n)
	for j, tb := range run.Timeline {
		viol[min(n-1, j/k)] += tb.Violations
	}
	for j, v := range viol {
		if v > 0 {
			h.violations = append(h.violations, plotter.XY{X: (float64(j) + 0.5) * h.bucketS, Y: float64(v)})
		}
	}
	return h
}

func (h *holdHeat) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	clip := func(x vg.Length) vg.Length { return min(max(x, c.Min.X), c.Max.X) }
	plotIncidents(c, trX, h.incidents, false)
	if h.max == 0 {
		return
	}
	for client, row := range h.counts {
		y := float64(client)
		for j, n := range row {
			if n == 0 {
				continue
			}
			a := uint8(0x30 + (0xff-0x30)*n/h.max)
			x0, x1 := clip(trX(float64(j)*h.bucketS)), clip(trX(float64(j+1)*h.bucketS))
			c.FillPolygon(withAlpha(colorHold, a), rectPts(x0, trY(y-0.3), x1, trY(y+0.3)))
		}
	}
}

// heatThumb is the legend of holdHeat: its shades from one completion to
// the most.
type heatThumb struct{}

func (heatThumb) Thumbnail(c *draw.Canvas) {
	const steps = 5
	w := (c.Max.X - c.Min.X) / steps
	for i := 0; i < steps; i++ {
		a := uint8(0x30 + (0xff-0x30)*i/(steps-1))
		x := c.Min.X + vg.Length(i)*w
		c.FillPolygon(withAlpha(colorHold, a), rectPts(x, c.Min.Y, x+w, c.Max.Y))
	}
}
