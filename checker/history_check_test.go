package checker

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/recheck"
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

// TestZeroTokens: a grant without a token counts as a fencing defect only
// from a lock that reports fencing, and under enforce too (its write is
// never checked); the replay and the independent re-check count the same
// from the history alone.
func TestZeroTokens(t *testing.T) {
	for _, fences := range []bool{false, true} {
		var now time.Duration
		s := New(FencingEnforce, time.Time{})
		s.clock = func() time.Duration { return now }
		s.SetFences(fences)
		var buf bytes.Buffer
		h := NewHistory(&buf, 0)
		s.SetHistory(h)
		ctx := context.Background()
		for i, token := range []uint64{1, 0, 2, 0} {
			now = time.Duration(10*i+1) * time.Millisecond
			id, err := s.Enter(ctx, Visit{Lock: "L", Client: i, Token: token, Requested: now - time.Millisecond, Acquired: now, ValidUntil: now + time.Second})
			if err != nil {
				t.Fatal(err)
			}
			now += time.Millisecond
			if err := s.Write(ctx, id, int64(i+1)); err != nil {
				t.Fatalf("token %d: %v", token, err)
			}
			now += time.Millisecond
			if err := s.Exit(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Flush(); err != nil {
			t.Fatal(err)
		}
		want := 0
		if fences {
			want = 2
		}
		replayed, err := Replay(bytes.NewReader(buf.Bytes()), FencingEnforce)
		if err != nil {
			t.Fatal(err)
		}
		rechecked, err := recheck.Check(bytes.NewReader(buf.Bytes()), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if live := s.Summary().ZeroTokens; live != want || replayed[0].ZeroTokens != want || rechecked[0].ZeroTokens != want {
			t.Errorf("fences %v: zero tokens live %d, replayed %d, rechecked %d; want %d", fences, live, replayed[0].ZeroTokens, rechecked[0].ZeroTokens, want)
		}
	}
}
