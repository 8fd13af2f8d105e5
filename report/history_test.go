package report

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenHistory reads a folder's history plain and gzip-compressed, and
// names the plain file when neither is there.
func TestOpenHistory(t *testing.T) {
	const body = "{\"op\":\"enter\"}\n"
	plain, gz, none := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(plain, HistoryFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(gz, HistoryFile+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := io.WriteString(zw, body); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, dir := range []string{plain, gz} {
		r, err := OpenHistory(dir)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(b) != body {
			t.Errorf("%s: read %q, %v; want %q", dir, b, err, body)
		}
	}
	if _, err := OpenHistory(none); err == nil || !os.IsNotExist(err) {
		t.Errorf("no history: err %v, want not exist", err)
	}
}
