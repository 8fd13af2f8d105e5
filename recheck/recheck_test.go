package recheck

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// history writes acquire+enter / exit lines for run 0 of lock L.
const example = `{"run":0,"seq":1,"client":3,"lock":"L","op":"acquire","visit":1,"invoke_ns":120,"return_ns":121,"token":2,"valid_until_ns":221,"outcome":"ok"}
{"run":0,"seq":2,"client":3,"lock":"L","op":"enter","visit":1,"invoke_ns":121,"return_ns":121,"token":2,"outcome":"ok"}
{"run":0,"seq":3,"client":1,"lock":"L","op":"acquire","visit":2,"invoke_ns":1,"return_ns":REPLY,"token":1,"valid_until_ns":PROMISE,"outcome":"ok"}
{"run":0,"seq":4,"client":1,"lock":"L","op":"enter","visit":2,"invoke_ns":150,"return_ns":150,"token":1,"outcome":"ok"}
{"run":0,"seq":5,"client":1,"lock":"L","op":"exit","visit":2,"invoke_ns":160,"return_ns":160,"token":1,"outcome":"ok"}
{"run":0,"seq":6,"client":3,"lock":"L","op":"exit","visit":1,"invoke_ns":200,"return_ns":200,"token":2,"outcome":"ok"}
`

// TestVerdictExample: docs/verdicts.md's example. B (client 1) sent at 1;
// D was granted at 121; B entered at 150.
func TestVerdictExample(t *testing.T) {
	for _, c := range []struct {
		name, reply, promise string
		lock                 bool
	}{
		{"B's reply at 150, promise to 100: B entered after it", "150", "100", false},
		{"B's reply at 150, promise to 300: D may have been first, within its own promise", "150", "300", true},
		{"B's reply at 90, promise to 100: D granted after B's promise", "90", "100", false},
		{"B's reply at 90, promise to 300: D granted within B's promise", "90", "300", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := strings.NewReplacer("REPLY", c.reply, "PROMISE", c.promise).Replace(example)
			fs, err := Check(strings.NewReader(h), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			f := fs[0]
			if f.Violations != 1 || f.Incidents != 1 || f.OverlapTotal != 10 || f.MaxOverlap != 10 {
				t.Fatalf("figures %+v", f)
			}
			if got := f.LockFaults == 1; got != c.lock || f.LockFaults+f.ClientFaults != 1 {
				t.Errorf("lock faults %d client faults %d, want a lock fault: %v", f.LockFaults, f.ClientFaults, c.lock)
			}
		})
	}
}

// TestAttemptLines: acquires that granted nothing (attempt lines, one
// past every other time of the run) change no figure, not even how long
// the visits still inside at the end are measured (to the release line's
// 250, the run's last time).
func TestAttemptLines(t *testing.T) {
	base := strings.NewReplacer("REPLY", "150", "PROMISE", "100").Replace(example)
	open := `{"run":0,"seq":7,"client":2,"lock":"L","op":"acquire","visit":3,"invoke_ns":190,"return_ns":205,"outcome":"ok"}
{"run":0,"seq":8,"client":2,"lock":"L","op":"enter","visit":3,"invoke_ns":205,"return_ns":205,"outcome":"ok"}
{"run":0,"seq":9,"client":6,"lock":"L","op":"acquire","visit":4,"invoke_ns":190,"return_ns":206,"outcome":"ok"}
{"run":0,"seq":10,"client":6,"lock":"L","op":"enter","visit":4,"invoke_ns":206,"return_ns":206,"outcome":"ok"}
{"run":0,"seq":11,"client":6,"lock":"L","op":"release","visit":4,"invoke_ns":250,"return_ns":250,"outcome":"ok"}
`
	attempts := `{"run":0,"seq":12,"client":4,"lock":"L","op":"attempt","invoke_ns":100,"return_ns":300,"outcome":"acquire_timeout"}
{"run":0,"seq":13,"client":5,"lock":"L","op":"attempt","invoke_ns":120,"return_ns":900,"outcome":"waiting"}
`
	without, err := Check(strings.NewReader(base+open), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	with, err := Check(strings.NewReader(base+open+attempts), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if with[0] != without[0] || without[0].OverlapTotal != 10+(250-206) {
		t.Errorf("with attempt lines %+v, without %+v", with[0], without[0])
	}
}

// TestMalformed: a bad line is an error naming the line and the field.
func TestMalformed(t *testing.T) {
	for _, c := range []struct{ history, want string }{
		{`{"run":0,"seq":1,"op":"enter","visit":4}`, "history line 1: field visit: enter of visit 4 without its acquire line"},
		{`{"run":0,"seq":1,"op":"acquire","visit":1}` + "\n" + `{"run":0,"seq":2,"op":"jump","visit":1}`, `history line 2: field op: jump where the enter of visit 1 must follow`},
		{`{"run":0,"seq":1,"op":"jump"}`, `history line 1: field op: unknown operation "jump"`},
		{`{"run":0,"seq":1,"op":"attempt"}` + "\n" + `{"run":0,"seq":1,"op":"attempt"}`, "history line 2: field seq: 1 does not follow 1"},
		{`{"run":0,"seq":1,"op":"read","visit":2}`, "history line 1: field visit: read of visit 2, which never entered"},
		{`{"run":"x"}`, "history line 1: json"},
	} {
		_, err := Check(strings.NewReader(c.history), time.Second)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.history, err, c.want)
		}
	}
}

// TestReference: the figures of the reference fault runs, recomputed from
// their histories, are those of their result.json (read here with
// encoding/json alone). Their lock and client faults were judged by the
// rule of their day and are not compared.
func TestReference(t *testing.T) {
	dirs, _ := filepath.Glob("../results/reference/faults/*/result.json")
	if len(dirs) == 0 {
		t.Fatal("no reference results")
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var res struct {
				Runs []struct {
					Lock             string  `json:"lock"`
					Visits           int     `json:"visits"`
					Violations       int     `json:"violations"`
					Incidents        int     `json:"incidents"`
					LostUpdates      int     `json:"lost_updates"`
					StaleTokens      int     `json:"stale_tokens"`
					StaleRejected    int     `json:"stale_rejected"`
					DuplicateTokens  int     `json:"duplicate_tokens"`
					TokenRegressions int     `json:"token_regressions"`
					TokenOrder       string  `json:"token_order"`
					OverlapMsTotal   float64 `json:"overlap_ms_total"`
				} `json:"runs"`
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &res); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(dir, "history.jsonl.gz"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			gz, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			figs, err := Check(gz, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res.Runs {
				g := figs[i]
				want := [8]int{r.Visits, r.Violations, r.Incidents, r.LostUpdates, r.StaleTokens, r.StaleRejected, r.DuplicateTokens, r.TokenRegressions}
				got := [8]int{g.Visits, g.Violations, g.Incidents, g.LostUpdates, g.StaleTokens, g.StaleRejected, g.DuplicateTokens, g.TokenRegressions}
				if got != want || g.TokenOrder != r.TokenOrder || abs(float64(g.OverlapTotal)/1e6-r.OverlapMsTotal) > 1 {
					t.Errorf("run %d (%s): recheck %v order %q overlap %v; result.json %v order %q overlap %.3fms",
						i, r.Lock, got, g.TokenOrder, g.OverlapTotal, want, r.TokenOrder, r.OverlapMsTotal)
				}
			}
		})
	}
}

func abs(x float64) float64 { return max(x, -x) }

// TestReferenceHistoriesValid: every history committed under
// results/reference passes the rules of a valid history.
func TestReferenceHistoriesValid(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../results/reference", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "history.jsonl.gz" {
			return err
		}
		n++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		if _, err := Check(gz, time.Second); err != nil {
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
}
