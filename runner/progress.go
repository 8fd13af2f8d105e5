package runner

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/workload"
)

// isTerminal reports whether w is a terminal, where the progress line
// rewrites itself; elsewhere (CI logs) a line is printed every few seconds.
func (r *run) isTerminal() bool {
	f, ok := r.opts.Progress.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressf prints a progress line that the next one replaces on a
// terminal.
func (r *run) progressf(format string, args ...any) { r.progress("", format, args...) }

// progressDone prints a final line for a point that stays on screen.
func (r *run) progressDone(format string, args ...any) { r.progress("\n", format, args...) }

// progress prints a line over the previous one on a terminal (followed by
// end), a line of its own elsewhere.
func (r *run) progress(end, format string, args ...any) {
	if r.opts.Progress == nil {
		return
	}
	line := fmt.Sprintf(format, args...)
	if r.isTerminal() {
		fmt.Fprintf(r.opts.Progress, "\r\033[K%s%s", line, end)
		return
	}
	fmt.Fprintln(r.opts.Progress, line)
}

// watch prints the live progress line until ctx ends.
func (r *run) watch(ctx context.Context, lock string, cfg workload.Config, base time.Time, rec *workload.Recorder, res *checker.Shared) {
	if r.opts.Progress == nil {
		return
	}
	every := 500 * time.Millisecond
	if !r.isTerminal() {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		el := time.Since(base)
		ops, errs := rec.Counts()
		total := ""
		if cfg.Ops > 0 {
			total = fmt.Sprintf("/%d", cfg.Ops)
		} else if cfg.Duration > 0 {
			total = "/" + cfg.Duration.Round(time.Second).String()
		}
		viol := res.ViolationCount()
		var b strings.Builder
		fmt.Fprintf(&b, "[%d/%d] %s  %s%s  %d ops (%.0f/s)  errors %d  violations %d",
			r.index+1, r.total, lock, el.Round(100*time.Millisecond), total, ops,
			float64(ops)/el.Seconds(), errs, viol)
		r.progressf("%s", b.String())
	}
}
