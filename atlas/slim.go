package atlas

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Slim reduces one run's folder to what the atlas and `bench check` read,
// plus its Markdown report: result.json, history.jsonl (gzipped) and
// report.md stay; everything else (plots, HTML pages, the servers' and
// clients' logs) goes. A full run folder is about 0.6 MB, a slim one about
// 30 kB.
func Slim(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("slim %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		switch e.Name() {
		case "result.json", "report.md", "history.jsonl.gz":
		case "history.jsonl":
			errs = append(errs, gzipFile(path))
		default:
			errs = append(errs, os.RemoveAll(path))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("slim %s: %w", dir, err)
	}
	return nil
}

// gzipFile replaces path by path.gz.
func gzipFile(path string) (err error) {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(path + ".gz")
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestCompression)
	_, err = io.Copy(zw, in)
	err = errors.Join(err, zw.Close(), out.Close())
	if err != nil {
		os.Remove(path + ".gz")
		return err
	}
	return os.Remove(path)
}
