package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/cmd/internal/cli"
)

// realLocks maps the test-only lock names of the scenarios package's error
// tests to registered locks of the same backend and shape.
var realLocks = strings.NewReplacer(
	"test-redlock", "redlock", "test-lock", "redis-cad", "test-zk", "zk-recipe", "test-etcd", "etcd-recipe")

// stubOptionCheck is how the scenarios tests' test-lock refuses an option
// value; redis-cad refuses the same value at the same field in its words.
const stubOptionCheck = "want an integer >= 0"

// TestValidateMalformed runs every invalid file the scenarios package's
// error tests know (scenarios/testdata/malformed.jsonl, written from them)
// through `bench validate`: each must exit 2, start nothing, and print the
// same problem with the file's path, line and field.
func TestValidateMalformed(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "scenarios", "testdata", "malformed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var tc struct{ Name, Src, Want, Msg string }
		if err := json.Unmarshal(sc.Bytes(), &tc); err != nil {
			t.Fatal(err)
		}
		n++
		t.Run(tc.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.yaml")
			if err := os.WriteFile(path, []byte(realLocks.Replace(tc.Src)), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := cli.Code(run(context.Background(), []string{"validate", path}, &stdout, &stderr), &stderr)
			want := strings.Replace(realLocks.Replace(tc.Want), "x.yaml", path, 1)
			msg := realLocks.Replace(tc.Msg)
			if strings.Contains(msg, stubOptionCheck) {
				msg = "" // the test-only lock's own option check: the real lock words it its way
			}
			if code != cli.ExitBadInput || stdout.Len() != 0 || !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), msg) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and a problem starting %q containing %q", code, stdout.String(), stderr.String(), want, msg)
			}
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("%d malformed files in the corpus, want the error tests' (about 100)", n)
	}
}
