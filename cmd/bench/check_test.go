package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/testenv"
	"github.com/locklab/locklab/workload"
)

func TestMain(m *testing.M) {
	workload.MaybeWorker() // this test binary is also the client process
	os.Exit(m.Run())
}

// TestCheck: bench check reproduces every safety figure of a run with
// overlaps (in-process and process-per-client clients) from its history,
// by the replay and by the independent re-check, and names result.json as
// the odd one out when it is tampered with.
func TestCheck(t *testing.T) {
	testenv.RequireBinaries(t, "redis-server")
	for _, ppc := range []string{"false", "true"} {
		t.Run("process_per_client="+ppc, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "s.yaml")
			src := "name: check\ncluster: {redis: {primaries: 1}}\nlocks: [redis-cad, redis-set-del]\nresource: {fencing: enforce}\n" +
				"workload: {clients: 3, duration: 2s, ttl: 200ms, critical_section: 300ms, process_per_client: " + ppc + "}\n"
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), []string{"run", "-q", "--out", out, file}, &stdout, &stderr); err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			stdout.Reset()
			if code := cli.Code(run(context.Background(), []string{"check", out}, &stdout, &stderr), &stderr); code != 0 {
				t.Fatalf("check exit %d:\n%s%s", code, stdout.String(), stderr.String())
			}
			for _, want := range []string{"result.json  replay", "recheck", "client_faults", "max_overlap_ms", "token_order", "zombie_ms_p50"} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("no %q in the output:\n%s", want, stdout.String())
				}
			}
			// tamper: one incident more than the history shows
			path := filepath.Join(out, "result.json")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}
			runs := raw["runs"].([]any)
			r0 := runs[0].(map[string]any)
			if r0["violations"].(float64) == 0 {
				t.Fatalf("no violations with ttl < critical section: nothing to check\n%s", data)
			}
			// every holder stays past its 200 ms lease: a lost lease each
			if n, _ := r0["lost_leases"].(float64); n == 0 || r0["zombie_ms_max"] == nil {
				t.Errorf("lost_leases %v, zombie_ms_max %v: a holder inside past its lease is a lost lease", r0["lost_leases"], r0["zombie_ms_max"])
			}
			r0["incidents"] = r0["incidents"].(float64) + 1
			data, _ = json.Marshal(raw)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			stdout.Reset()
			if code := cli.Code(run(context.Background(), []string{"check", out}, &stdout, &stderr), &stderr); code != cli.ExitFailed {
				t.Fatalf("check of a tampered result: exit %d, want 1\n%s", code, stdout.String())
			}
			if !strings.Contains(stdout.String(), "DISAGREE: result.json") {
				t.Errorf("the tampered result.json is not named the odd one out:\n%s", stdout.String())
			}
		})
	}
}
