package report

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// HistoryFile is the name of a result folder's history (one JSON line per
// client operation); a folder may keep it compressed as HistoryFile+".gz"
// (committed reference results do).
const HistoryFile = "history.jsonl"

// OpenHistory opens dir's history, plain or gzip-compressed.
func OpenHistory(dir string) (io.ReadCloser, error) {
	path := filepath.Join(dir, HistoryFile)
	f, err := os.Open(path)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	gz, gerr := os.Open(path + ".gz")
	if gerr != nil {
		return nil, err // the plain file's error names what is missing
	}
	zr, err := gzip.NewReader(gz)
	if err != nil {
		gz.Close()
		return nil, fmt.Errorf("%s.gz: %w", path, err)
	}
	return gzipFile{zr, gz}, nil
}

// gzipFile closes both the decompressor and the file under it.
type gzipFile struct {
	*gzip.Reader
	f *os.File
}

func (g gzipFile) Close() error { return errors.Join(g.Reader.Close(), g.f.Close()) }
