package scenarios

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
)

// malformedCorpus is every invalid file the error tests (checkBad) know,
// one JSON object a line, so that `bench validate`'s test runs each of them
// through the command: the error a user sees on the command line is the
// one these tests pin down. TestMain rewrites it with -update and fails
// when it is stale.
var malformedCorpus = filepath.Join("testdata", "malformed.jsonl")

var (
	badMu   sync.Mutex
	badSeen = map[string]badCase{}
)

// recordBad keeps tc for the corpus, under the test's full name.
func recordBad(t *testing.T, tc badCase) {
	badMu.Lock()
	defer badMu.Unlock()
	badSeen[t.Name()] = tc
}

// corpusLine is one case of the corpus.
type corpusLine struct {
	Name string `json:"name"`
	Src  string `json:"src"`
	Want string `json:"want"`
	Msg  string `json:"msg"`
}

// corpus renders the recorded cases, sorted by name.
func corpus() []byte {
	names := make([]string, 0, len(badSeen))
	for n := range badSeen {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, n := range names {
		tc := badSeen[n]
		_ = enc.Encode(corpusLine{Name: n, Src: tc.src, Want: tc.want, Msg: tc.msg})
	}
	return b.Bytes()
}

// TestMain runs the tests, then writes the corpus (-update) or checks that
// the committed one is what the error tests hold (only when every test ran:
// a -run filter records a part of them).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && runAll() {
		got := corpus()
		switch old, err := os.ReadFile(malformedCorpus); {
		case *update:
			if err := os.WriteFile(malformedCorpus, got, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, err)
				code = 1
			}
		case err != nil || !bytes.Equal(old, got):
			fmt.Fprintf(os.Stderr, "%s is stale (%v): go test ./scenarios -count=1 -update\n", malformedCorpus, err)
			code = 1
		}
	}
	os.Exit(code)
}

// runAll reports whether no -run filter narrowed the tests.
func runAll() bool {
	f := flag.Lookup("test.run")
	return f == nil || f.Value.String() == ""
}
