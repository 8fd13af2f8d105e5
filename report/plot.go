package report

import (
	"bufio"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot is one image written by WritePlots: Name.png and Name.svg in the
// results folder.
type Plot struct {
	// Name is the file name without extension ("throughput",
	// "timeline-redis-cad").
	Name string
	// Title says what the plot shows, for reports and alt text.
	Title string
	// Run is the index in Result.Runs of the run a per-run plot (timeline)
	// belongs to; -1 for plots of the whole result.
	Run int
}

// PNG is the plot's PNG file name.
func (p Plot) PNG() string { return p.Name + ".png" }

// plotDPI is the resolution of the PNG files: sizes below are in points
// (1/72 in), so an 11 in wide figure is 1056 pixels.
const plotDPI = 96

// figure is one drawing of a fixed size; save renders it to PNG and SVG.
type figure struct {
	name, title string
	run         int
	w, h        vg.Length
	draw        func(c draw.Canvas)
}

// save writes dir/name.png and dir/name.svg. A panic inside gonum/plot
// (it panics on some degenerate data) becomes an error: a plot that cannot
// be drawn must not cost the rest of the report.
func (f figure) save(dir string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("plot %s: %v", f.name, p)
		}
	}()
	img := vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))
	f.draw(margin(draw.New(img)))
	rgba, ok := img.Image().(*image.RGBA)
	if !ok {
		return fmt.Errorf("plot %s: canvas is %T, want *image.RGBA", f.name, img.Image())
	}
	if err := writeFile(filepath.Join(dir, f.name+".png"), func(w *bufio.Writer) error {
		return encodePNG(w, rgba)
	}); err != nil {
		return err
	}
	svg := vgsvg.New(f.w, f.h)
	dc := draw.New(svg)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	f.draw(margin(dc))
	return writeFile(filepath.Join(dir, f.name+".svg"), func(w *bufio.Writer) error {
		_, err := svg.WriteTo(w)
		return err
	})
}

// margin keeps drawings off the image's edges.
func margin(c draw.Canvas) draw.Canvas {
	m := vg.Points(6)
	return draw.Crop(c, m, -m, m, -m)
}

// writeFile writes path through a temporary file and a rename, so a reader
// (a browser refreshing report.html) never sees half a file.
func writeFile(path string, write func(w *bufio.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	bw := bufio.NewWriterSize(tmp, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// saveAll renders figs concurrently (one worker per CPU) and returns the
// plots written, in figs' order, and every error joined.
func saveAll(dir string, figs []figure) ([]Plot, error) {
	errs := make([]error, len(figs))
	work := make(chan int)
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), len(figs))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				errs[i] = figs[i].save(dir)
			}
		}()
	}
	for i := range figs {
		work <- i
	}
	close(work)
	wg.Wait()
	var plots []Plot
	for i, f := range figs {
		if errs[i] == nil {
			plots = append(plots, Plot{Name: f.name, Title: f.title, Run: f.run})
		}
	}
	return plots, errors.Join(errs...)
}

// Styles: every lock keeps one colour, dash pattern and glyph in every plot
// of a report. Ten colours (matplotlib's tab10, told apart by most colour
// vision deficiencies together with the dashes) times four dash patterns
// times seven glyphs never repeat within 140 series; the dash period (4) is
// coprime with neither 10 nor 7 in a way that would make series i and i+10
// look alike.
var (
	palette = []color.Color{
		rgb(0x1f77b4), rgb(0xff7f0e), rgb(0x2ca02c), rgb(0xd62728), rgb(0x9467bd),
		rgb(0x8c564b), rgb(0xe377c2), rgb(0x7f7f7f), rgb(0xbcbd22), rgb(0x17becf),
	}
	dashes = [][]vg.Length{
		nil,
		{vg.Points(7), vg.Points(3)},
		{vg.Points(2), vg.Points(2)},
		{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)},
	}
	glyphs = []draw.GlyphDrawer{
		draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{},
		draw.PyramidGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{},
	}
)

func rgb(v uint32) color.NRGBA {
	return color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

func withAlpha(c color.Color, a uint8) color.NRGBA {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	n.A = a
	return n
}

// seriesStyle is how series i is drawn.
type seriesStyle struct {
	Color color.Color
	Dash  []vg.Length
	Glyph draw.GlyphDrawer
}

func styleOf(i int) seriesStyle {
	return seriesStyle{
		Color: palette[i%len(palette)],
		Dash:  dashes[(i+i/len(palette))%len(dashes)],
		Glyph: glyphs[i%len(glyphs)],
	}
}

func (s seriesStyle) line() draw.LineStyle {
	return draw.LineStyle{Color: s.Color, Width: vg.Points(1.8), Dashes: s.Dash}
}

func (s seriesStyle) glyph() draw.GlyphStyle {
	return draw.GlyphStyle{Color: s.Color, Radius: vg.Points(3), Shape: s.Glyph}
}

// Fonts: Liberation Sans (embedded in gonum/plot), so plots look the same
// on every machine.
func sans(size float64) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: vg.Points(size)}
}

func sansBold(size float64) font.Font {
	f := sans(size)
	f.Weight = xfont.WeightBold
	return f
}

func textStyle(f font.Font, c color.Color) text.Style {
	return text.Style{Color: c, Font: f, Handler: plot.DefaultTextHandler}
}

// newPlot returns a plot with locklab's fonts, grid-friendly axes, and no
// legend of its own (legends are drawn beside the plot by withLegend).
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	// The canvas is white already: a second fill of the whole plot area
	// costs a tenth of the rendering time.
	p.BackgroundColor = nil
	p.Title.Text = title
	p.Title.TextStyle.Font = sansBold(13)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(11)
		a.Tick.Label.Font = sans(9.5)
		a.Padding = vg.Points(2)
	}
	p.Add(gridLines())
	return p
}

func gridLines() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 0xe4}
	g.Horizontal.Color = color.Gray{Y: 0xe4}
	g.Vertical.Width = vg.Points(0.5)
	g.Horizontal.Width = vg.Points(0.5)
	return g
}

// legend is a plot.Legend that knows its number of entries.
type legend struct {
	plot.Legend
	n int
}

func newLegend() *legend {
	l := &legend{Legend: plot.NewLegend()}
	l.TextStyle.Font = sans(10)
	l.Top, l.Left = true, true
	l.Padding = vg.Points(3)
	l.ThumbnailWidth = vg.Points(28)
	return l
}

func (l *legend) add(name string, thumbs ...plot.Thumbnailer) {
	l.Add(name, thumbs...)
	l.n++
}

// size is the room l needs beside a plot, heading included.
func (l *legend) size() (w, h vg.Length) {
	if l == nil || l.n == 0 {
		return 0, 0
	}
	c := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: 10000, Y: 10000}}}
	r := l.Rectangle(c)
	return r.Size().X + vg.Points(16), r.Size().Y + vg.Points(48)
}

// withLegend draws body in c less a strip on the right, where it draws l
// (top-aligned, under an optional heading): legends outside the data area
// stay readable with many series.
func withLegend(c draw.Canvas, l *legend, heading string, body func(draw.Canvas)) {
	lw, _ := l.size()
	if lw == 0 {
		body(c)
		return
	}
	body(draw.Crop(c, 0, -lw, 0, 0))
	lc := draw.Crop(c, c.Size().X-lw+vg.Points(8), -vg.Points(4), vg.Points(4), -vg.Points(28))
	if heading != "" {
		sty := textStyle(sansBold(10), color.Black)
		sty.YAlign = draw.YTop
		lc.FillText(sty, vg.Point{X: lc.Min.X, Y: lc.Max.Y + vg.Points(2)}, heading)
		lc = draw.Crop(lc, 0, 0, 0, -vg.Points(16))
	}
	l.Draw(lc)
}

// lineSeries adds one line with glyphs to p and its entry to l.
func lineSeries(p *plot.Plot, l *legend, name string, st seriesStyle, xys plotter.XYs) {
	if len(xys) == 0 {
		return
	}
	line, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return
	}
	line.LineStyle = st.line()
	pts.GlyphStyle = st.glyph()
	p.Add(line, pts)
	if l != nil {
		l.add(name, line, pts)
	}
}

// series is the runs of one lock configuration: a lock label plus every
// sweep parameter except clients, its runs ordered by clients.
type series struct {
	Key   string
	Lock  string
	Runs  []*Run
	Style seriesStyle
}

// runLabel names one run: its series and, within a sweep, its clients.
func runLabel(run *Run, sweep bool) string {
	if sweep {
		return fmt.Sprintf("%s, %d clients", seriesKey(run), run.Clients)
	}
	return seriesKey(run)
}

// groupSeries groups runs by series in order of first appearance; the
// styles follow that order, so a lock looks the same in every plot.
func groupSeries(runs []Run) []*series {
	var out []*series
	idx := map[string]*series{}
	for i := range runs {
		run := &runs[i]
		k := seriesKey(run)
		s := idx[k]
		if s == nil {
			s = &series{Key: k, Lock: run.Lock, Style: styleOf(len(out))}
			idx[k] = s
			out = append(out, s)
		}
		s.Runs = append(s.Runs, run)
	}
	for _, s := range out {
		sort.SliceStable(s.Runs, func(i, j int) bool { return s.Runs[i].Clients < s.Runs[j].Clients })
	}
	return out
}

// isSweep reports whether some series ran at more than one client count.
func isSweep(ss []*series) bool {
	for _, s := range ss {
		for _, r := range s.Runs[1:] {
			if r.Clients != s.Runs[0].Clients {
				return true
			}
		}
	}
	return false
}

// clientValues lists the distinct client counts of runs, ascending.
func clientValues(runs []Run) []int {
	seen := map[int]bool{}
	var out []int
	for _, r := range runs {
		if !seen[r.Clients] {
			seen[r.Clients] = true
			out = append(out, r.Clients)
		}
	}
	sort.Ints(out)
	return out
}

// measured reports whether run has numbers to plot.
func measured(run *Run) bool { return run.Error == "" || run.Ops > 0 }

var unsafeFile = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeName turns a label into a file-name part: letters, digits, '.', '_'
// and '-' only ("redis-watchdog ttl=5s" -> "redis-watchdog_ttl_5s").
func safeName(s string) string {
	s = strings.Trim(unsafeFile.ReplaceAllString(s, "_"), "_.")
	if s == "" {
		s = "run"
	}
	return s
}

// timelineNames gives each run its timeline file name,
// timeline-<lock>[-<param>-<value>...], unique within the result.
func timelineNames(runs []Run) []string {
	sweep := isSweep(groupSeries(runs))
	used := map[string]bool{}
	names := make([]string, len(runs))
	for i := range runs {
		run := &runs[i]
		name := "timeline-" + safeName(seriesKey(run))
		if sweep {
			name += "-clients-" + strconv.Itoa(run.Clients)
		}
		base := name
		for n := 2; used[name]; n++ {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		used[name] = true
		names[i] = name
	}
	return names
}

// niceMax rounds v up to a round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6,
// 8 times a power of ten), for axis tops with a little headroom.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// linearTicks labels 4 to 10 round values (steps of 1, 2 or 5 times a power
// of ten) with unlabelled minor ticks halfway: gonum's default gives as few
// as two labels.
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: fmtNum(lo)}}
	}
	raw := (hi - lo) / 6
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * p
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*p {
			step = m * p
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: fmtNum(v)})
		if m := v + step/2; m < hi {
			ticks = append(ticks, plot.Tick{Value: m})
		}
	}
	return ticks
}

// fmtNum formats a measurement with sensible precision for labels and
// tables: three significant decimals below 1, fewer above, no trailing
// zeros ("1", "0.359", "12.5", "2317").
func fmtNum(v float64) string {
	var s string
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a < 0.01:
		return strconv.FormatFloat(v, 'g', 2, 64)
	case a < 1:
		s = strconv.FormatFloat(v, 'f', 3, 64)
	case a < 10:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	case a < 100:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
