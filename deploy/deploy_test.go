package deploy

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/atlas"
	"github.com/locklab/locklab/testenv"
)

// TestManifests: every manifest in k8s/ is an Indexed Job the local run
// and the entry point understand, on the image `make image` builds.
func TestManifests(t *testing.T) {
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in k8s/: %v", err)
	}
	verbs := map[string]string{}
	for _, f := range files {
		j, err := ReadJob(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if j.Image != "locklab/locklab:dev" || len(j.Command) > 0 || j.Results != DefaultResults {
			t.Errorf("%s: image %q, command %q, results %q: want locklab/locklab:dev with its own entry point, results in %s",
				f, j.Image, j.Command, j.Results, DefaultResults)
		}
		verbs[j.Verb()] = f
		if j.SubPath != j.Verb() {
			t.Errorf("%s: the results volume's subPath is %q, want %q: two verbs on one volume must not share shard folders", f, j.SubPath, j.Verb())
		}
	}
	for _, v := range []string{"atlas", "explore"} {
		if verbs[v] == "" {
			t.Errorf("no manifest runs %s (verbs: %v)", v, verbs)
		}
	}
}

// TestReadJobErrors: a manifest the entry point cannot run is refused with
// its file, line and field.
func TestReadJobErrors(t *testing.T) {
	good, err := os.ReadFile("k8s/atlas-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"not indexed", "completionMode: Indexed", "completionMode: NonIndexed",
			fmt.Sprintf(`:%d: spec.completionMode: "NonIndexed", want Indexed`, 1+bytes.Count(good[:bytes.Index(good, []byte("completionMode:"))], []byte("\n")))},
		{"shards differ", `value: "2"`, `value: "3"`, `spec.template.spec.containers: env LOCKLAB_SHARDS is "3", want 2`},
		{"no completions", "completions: 2", "", "spec.completions: want the number of shards"},
		{"no results mount", "mountPath: /results", "mountPath: /data", "no volumeMounts entry at /results"},
		{"no image", "image: locklab/locklab:dev", "", `names no image`},
		{"not yaml", "kind: Job", "kind: [Job", "did not find expected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Replace(good, []byte(tc.old), []byte(tc.new), 1)
			if bytes.Equal(b, good) {
				t.Fatalf("%q is not in the manifest", tc.old)
			}
			f := filepath.Join(t.TempDir(), "job.yaml")
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadJob(f)
			if err == nil || !strings.HasPrefix(err.Error(), f+":") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %s:...%s", err, f, tc.want)
			}
		})
	}
}

// TestEntryPoint: the entry point maps the 0-based JOB_COMPLETION_INDEX (or
// --index) to chaos's 1-based --shard, passes the verb and its flags
// through, and refuses a missing or out-of-range index or count with exit 2
// before running anything. The program it runs is /bin/echo here (the
// docker test runs the real chaos through it).
func TestEntryPoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string // stdout (the command run) or stderr (code 2)
	}{
		{"first index", []string{"JOB_COMPLETION_INDEX=0", "LOCKLAB_SHARDS=3"}, []string{"atlas", "--runs", "1"}, 0,
			"atlas --shard 1/3 --out /results/shard-1 --runs 1"},
		{"last index, verb passed through", []string{"JOB_COMPLETION_INDEX=2", "LOCKLAB_SHARDS=3", "LOCKLAB_RESULTS=/r"}, []string{"explore", "--budget", "1m"}, 0,
			"explore --shard 3/3 --out /r/shard-3 --budget 1m"},
		{"flags", nil, []string{"--index", "1", "--shards=2", "atlas"}, 0, "atlas --shard 2/2 --out /results/shard-2"},
		{"flag over env", []string{"JOB_COMPLETION_INDEX=0", "LOCKLAB_SHARDS=2"}, []string{"--index=1", "atlas"}, 0, "atlas --shard 2/2"},
		{"index out of range", []string{"JOB_COMPLETION_INDEX=2", "LOCKLAB_SHARDS=2"}, []string{"atlas"}, 2, `shard index "2"`},
		{"no index", []string{"LOCKLAB_SHARDS=2"}, []string{"atlas"}, 2, "JOB_COMPLETION_INDEX is unset"},
		{"no count", []string{"JOB_COMPLETION_INDEX=0"}, []string{"atlas"}, 2, "no shard count: set LOCKLAB_SHARDS"},
		{"bad count", []string{"JOB_COMPLETION_INDEX=0", "LOCKLAB_SHARDS=two"}, []string{"atlas"}, 2, `shard count "two"`},
		{"no verb", []string{"JOB_COMPLETION_INDEX=0", "LOCKLAB_SHARDS=1"}, nil, 2, "no verb given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", append([]string{"entrypoint.sh"}, tc.args...)...)
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "LOCKLAB_CHAOS=echo"}, tc.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			if err != nil && code < 0 {
				t.Fatal(err)
			}
			got := stdout.String()
			if tc.code != 0 {
				got = stderr.String()
			}
			if code != tc.code || !strings.Contains(got, tc.want) {
				t.Fatalf("exit %d, want %d; output %q, want %q (stderr %q)", code, tc.code, got, tc.want, stderr.String())
			}
		})
	}
}

// TestIndexedJobOnDocker builds the locklab image (deploy/build.sh, as
// `make image`), runs k8s/atlas-job.yaml exactly as written on the local
// Docker engine (one container per index, JOB_COMPLETION_INDEX set), and
// merges the shards with the host's chaos: each shard folder holds its
// slice of the plan, the merged atlas is complete with a verdict in every
// cell, and no container is left. It needs a Docker engine (it fails in CI
// without one) and root when locklab/base must be built (a few minutes,
// once; about a minute for the rest).
func TestIndexedJobOnDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Docker engine; skipped under -short")
	}
	// The docker CLI is what the build and the run use: ask it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	b, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	cancel()
	if err != nil {
		testenv.Unavailable(t, "no Docker engine answers (docker version: %v: %s): the locklab image and its Indexed Job are untested on this machine",
			err, strings.TrimSpace(string(b)))
	}
	// A fresh machine builds locklab/base (or waits for the docker
	// provider's tests to finish building it) and then the image's layers:
	// up to about 25 minutes measured on a loaded 2-core machine.
	ctx, cancel = context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()

	t0 := time.Now()
	build := exec.CommandContext(ctx, "sh", "build.sh")
	build.Env = append(os.Environ(), "GO="+filepath.Join(runtime.GOROOT(), "bin", "go"))
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("deploy/build.sh: %v\n%s", err, b)
	} else {
		t.Logf("image built in %v:\n%s", time.Since(t0).Round(time.Second), b)
	}
	chaos := filepath.Join(t.TempDir(), "chaos")
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", chaos, "../cmd/chaos").CombinedOutput(); err != nil {
		t.Fatalf("go build chaos: %v\n%s", err, b)
	}

	j, err := ReadJob("k8s/atlas-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l := Local{Volume: t.TempDir(), Chaos: chaos, Logger: slog.New(slog.NewTextHandler(logWriter{t}, nil))}
	out, err := l.Run(ctx, j)
	if out != nil {
		for _, sh := range out.Shards {
			t.Logf("index %d: %v", sh.Index, sh.Wall.Round(time.Millisecond))
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d shards in %v; merge:\n%s", j.Completions, out.Wall.Round(time.Millisecond), out.Output)

	if left, err := Leftovers(context.Background(), ""); err != nil || len(left) > 0 {
		t.Errorf("containers left: %v %v", left, err)
	}
	merged, err := atlas.Read(out.Merged)
	if err != nil {
		t.Fatal(err)
	}
	cells := len(merged.Locks) * len(merged.Families)
	if !merged.Complete || cells == 0 || len(merged.Cells) != cells {
		t.Fatalf("merged atlas: complete %v, %d cells, want %d (%d locks x %d families)",
			merged.Complete, len(merged.Cells), cells, len(merged.Locks), len(merged.Families))
	}
	total := 0
	for _, c := range merged.Cells {
		if c.Verdict == atlas.NotApplicable {
			continue
		}
		total += c.Runs
		if c.Runs != merged.Runs || !slices.Contains([]string{atlas.Safe, atlas.Unsafe, atlas.UnsafeWithoutFencing, atlas.Inconclusive}, c.Verdict) {
			t.Errorf("cell %s/%s: %d runs, verdict %q: want %d runs and a verdict", c.Family, c.Lock, c.Runs, c.Verdict, merged.Runs)
		}
		// Without a fault the lock itself must hold: no second grant
		// within a promise, no broken token. (Client faults can happen:
		// a loaded machine stalls a holder past its 1s lease.)
		if c.Family == "baseline" && (c.LockFaults != 0 || c.DuplicateTokens != 0 || c.TokenRegressions != 0) {
			t.Errorf("cell %s/%s: %s with %d lock faults, %d duplicate tokens, %d token regressions, want none without a fault",
				c.Family, c.Lock, c.Verdict, c.LockFaults, c.DuplicateTokens, c.TokenRegressions)
		}
	}
	// Each index ran its own slice: shard i+1/n, some runs, not all.
	for i := range j.Completions {
		a, err := atlas.Read(l.ShardDir(j, i))
		if err != nil {
			t.Fatalf("index %d: %v", i, err)
		}
		if want := strconv.Itoa(i+1) + "/" + strconv.Itoa(j.Completions); a.Shard != want {
			t.Errorf("index %d ran shard %q, want %s", i, a.Shard, want)
		}
		if ran := total - a.Missing; ran <= 0 || (j.Completions > 1 && ran >= total) {
			t.Errorf("index %d ran %d of the atlas's %d runs, want a slice", i, ran, total)
		}
	}
}

// logWriter sends a logger's lines to t.Log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
