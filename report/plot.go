package report

import (
	"bufio"
	"errors"
	"fmt"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"runtime"
	"sync"

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
