package checker

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferenceHistoriesValid: every history committed under
// results/reference follows the rules the replay now enforces, so the
// rules describe what the resource writes, not an ideal of it.
func TestReferenceHistoriesValid(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../results/reference", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "history.jsonl") {
			return err
		}
		n++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		var r io.Reader = f
		if strings.HasSuffix(path, ".gz") {
			if r, err = gzip.NewReader(f); err != nil {
				return err
			}
		}
		if err := ValidateHistory(r); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("only %d histories under results/reference", n)
	}
	t.Logf("%d histories valid", n)
}
