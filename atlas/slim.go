package atlas

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Slim reduces one run's folder to what the atlas and `bench check` read,
// plus its Markdown report: result.json, history.jsonl (gzipped) and
// report.md stay; plots, report.html and the servers' and clients' logs
// go. A full run folder is about 0.6 MB, a slim one about 30 kB.
func Slim(dir string) error {
	var errs []error
	if err := os.RemoveAll(filepath.Join(dir, "logs")); err != nil {
		errs = append(errs, err)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		switch {
		case name == "report.html", strings.HasSuffix(name, ".png"), strings.HasSuffix(name, ".svg"):
			return os.Remove(path)
		case name == "history.jsonl":
			return gzipFile(path)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
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
