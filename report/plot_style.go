package report

import (
	"image/color"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Styles: every lock keeps one colour, dash pattern and glyph in every plot
// of a report. 25 colours stay distinct (no two closer than CIE76 ΔE 15,
// TestPaletteDistinct): matplotlib's tab10, tab20's lighter shade of each,
// and five dark tones (tab20b's indigo, olive, ochre and plum, and a
// raspberry). With seven glyphs no two of the first 175 series (25 x 7)
// look alike; four dash patterns tell series i and i+25 apart too.
var (
	palette = []color.Color{
		rgb(0x1f77b4), rgb(0xff7f0e), rgb(0x2ca02c), rgb(0xd62728), rgb(0x9467bd),
		rgb(0x8c564b), rgb(0xe377c2), rgb(0x7f7f7f), rgb(0xbcbd22), rgb(0x17becf),
		rgb(0xaec7e8), rgb(0xffbb78), rgb(0x98df8a), rgb(0xff9896), rgb(0xc5b0d5),
		rgb(0xc49c94), rgb(0xf7b6d2), rgb(0xc7c7c7), rgb(0xdbdb8d), rgb(0x9edae5),
		rgb(0x393b79), rgb(0x637939), rgb(0x8c6d31), rgb(0x7b4173), rgb(0xb30059),
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
