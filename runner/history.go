package runner

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/report"
)

// tokenOrderTimeout bounds porcupine's search per run.
const tokenOrderTimeout = 30 * time.Second

// secondOpinion asks porcupine whether each run's fencing tokens fit a
// strictly increasing counter in real-time order (checker.CheckTokenOrder,
// from dir/history.jsonl), records its verdict in the run, and writes
// porcupine's visualisation beside the report, token-order-<run>.html,
// for a run where it found a violation.
func secondOpinion(dir string, res *report.Result) error {
	f, err := os.Open(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return fmt.Errorf("token order: %w", err)
	}
	defer f.Close()
	orders, err := checker.CheckTokenOrder(bufio.NewReader(f), tokenOrderTimeout)
	if err != nil {
		return fmt.Errorf("token order: %w", err)
	}
	for i := range res.Runs {
		o, ok := orders[i]
		if !ok {
			continue // no fencing tokens
		}
		run := &res.Runs[i]
		run.TokenOrder = o.Verdict
		if o.Visualize == nil {
			continue
		}
		name := fmt.Sprintf("token-order-%d.html", i)
		if err := writeWith(filepath.Join(dir, name), o.Visualize); err != nil {
			return err
		}
		run.TokenOrderHTML = name
	}
	return nil
}

func writeWith(path string, write func(w io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("token order: %w", err)
	}
	w := bufio.NewWriter(f)
	err = write(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("token order %s: %w", path, err)
	}
	return nil
}

// recordHistory streams resource's operations into the result folder's
// history.jsonl as run r.index; the returned function flushes them.
func (r *run) recordHistory(resource *checker.Shared) func() {
	hist := checker.NewHistory(r.history, r.index)
	resource.SetHistory(hist)
	return func() {
		if err := hist.Flush(); err != nil {
			r.log.Warn("history", "err", err)
		}
	}
}
