package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/recheck"
)

// validRun is a real run (reference fault scenario pause-holder): its
// history starts, for run 0, with client 2's visits 1 to 3 —
// acquire, enter, read, write, exit, release each (lines 1-6, 7-12, 13-).
const validRun = "../../results/reference/faults/pause-holder"

// TestCheckMalformedHistory: each history below is the real one with one
// edit that no resource could have written. bench check exits 1 naming
// the line, and both implementations (the checker's replay and the
// independent re-check) reject it on their own, naming the same line.
// The unedited history passes, so each failure is the edit's.
func TestCheckMalformedHistory(t *testing.T) {
	lines := readLines(t, filepath.Join(validRun, "history.jsonl.gz"))
	set := func(line int, field string, v any) func([]map[string]any) []map[string]any {
		return func(ls []map[string]any) []map[string]any {
			ls[line-1][field] = v
			return ls
		}
	}
	stamp := func(line int, t int64) func([]map[string]any) []map[string]any {
		return func(ls []map[string]any) []map[string]any {
			ls[line-1]["invoke_ns"], ls[line-1]["return_ns"] = t, t
			return ls
		}
	}
	for _, c := range []struct {
		name string
		edit func([]map[string]any) []map[string]any
		line int // the line both must name; 0: valid
	}{
		{"unedited", func(ls []map[string]any) []map[string]any { return ls }, 0},
		{"seq repeats the line before's", set(10, "seq", 9), 10},
		{"two lines swapped against their seq", func(ls []map[string]any) []map[string]any {
			ls[8], ls[9] = ls[9], ls[8]
			return ls
		}, 10},
		{"unknown op", set(9, "op", "peek"), 9},
		{"exit stamped before its enter", stamp(5, 3000000), 5},
		{"exit of a visit already exited", set(11, "visit", 1), 11},
		{"write of a visit never entered", set(10, "visit", 77), 10},
		{"resource time moves backward (enter before the previous exit)", stamp(8, 304000000), 8},
		{"a request sent before the client's previous grant returned", set(13, "invoke_ns", 306000000), 13},
		{"acquire returned before it was sent", set(7, "invoke_ns", 307000000), 7},
		{"an acquire not followed by its enter (enter deleted)", func(ls []map[string]any) []map[string]any {
			return append(ls[:7:7], ls[8:]...)
		}, 8},
		{"release of a visit never entered", set(6, "visit", 50), 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			for _, l := range c.edit(clone(lines)) {
				b, err := json.Marshal(l)
				if err != nil {
					t.Fatal(err)
				}
				buf.Write(append(b, '\n'))
			}
			want := "history line " + strconv.Itoa(c.line) + ":"
			_, rerr := checker.Replay(bytes.NewReader(buf.Bytes()), checker.FencingOff)
			_, cerr := recheck.Check(bytes.NewReader(buf.Bytes()), time.Second)
			for name, err := range map[string]error{"replay": rerr, "recheck": cerr} {
				switch {
				case c.line == 0 && err != nil:
					t.Errorf("%s of the unedited history: %v", name, err)
				case c.line != 0 && (err == nil || !strings.Contains(err.Error(), want)):
					t.Errorf("%s: error %v, want one naming %q", name, err, want)
				}
			}
			dir := t.TempDir()
			data, err := os.ReadFile(filepath.Join(validRun, "result.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "result.json"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := cli.Code(run(context.Background(), []string{"check", dir}, &stdout, &stderr), &stderr)
			switch {
			case c.line == 0 && code != 0:
				t.Errorf("bench check of the unedited history: exit %d\n%s%s", code, stdout.String(), stderr.String())
			case c.line != 0 && (code != cli.ExitFailed || !strings.Contains(stderr.String(), want)):
				t.Errorf("bench check: exit %d, want 1 naming %q\n%s%s", code, want, stdout.String(), stderr.String())
			}
			if c.line != 0 {
				t.Log(strings.TrimSpace(stderr.String()))
			}
		})
	}
}

// readLines reads a gzipped history as one map per line (numbers kept
// exact).
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// clone deep-copies lines so each case edits its own.
func clone(lines []map[string]any) []map[string]any {
	out := make([]map[string]any, len(lines))
	for i, l := range lines {
		out[i] = make(map[string]any, len(l))
		for k, v := range l {
			out[i][k] = v
		}
	}
	return out
}
