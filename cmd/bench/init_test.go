package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/testenv"
)

func benchInit(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), append([]string{"init"}, args...), &out, &errb)
	return out.String(), err
}

// TestInit: bench init --exec writes a scenario the validator accepts and
// a client that passes client-check against a real server as written, for
// every backend; a second init refuses to overwrite.
func TestInit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts servers and client programs")
	}
	for _, c := range []struct{ backend, server, module string }{
		{"redis", "redis-server", "redis"}, {"zookeeper", "java", "kazoo"}, {"etcd", "etcd", "etcd3"},
		{"postgres", "", "psycopg2"}, {"mariadb", "", "pymysql"}, {"memcached", "", "pymemcache"},
	} {
		t.Run(c.backend, func(t *testing.T) {
			testenv.RequireBinaries(t, "/usr/bin/python3")
			if c.server != "" {
				testenv.RequireBinaries(t, c.server)
			} else {
				tb, _ := cluster.LookupBackend(c.backend)
				testenv.RequireBinaries(t, tb.Binaries...)
			}
			requireModule(t, c.module)
			dir := t.TempDir()
			out, err := benchInit(t, "--exec", "--backend", c.backend, "--name", "team-lock", dir)
			if err != nil {
				t.Fatalf("init: %v\n%s", err, out)
			}
			for _, f := range []string{"team-lock.yaml", "team-lock_client.py", "locklab_client.py"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("init did not write %s: %v", f, err)
				}
			}
			for _, w := range []string{"bench client-check --backend " + c.backend, "chaos run " + filepath.Join(dir, "team-lock.yaml"), "chaos atlas --exec"} {
				if !strings.Contains(out, w) {
					t.Errorf("init's next commands lack %q:\n%s", w, out)
				}
			}
			sc, err := scenarios.Parse(filepath.Join(dir, "team-lock.yaml"), mustRead(t, filepath.Join(dir, "team-lock.yaml")))
			if err != nil {
				t.Fatalf("the starter scenario does not validate: %v", err)
			}
			if l := sc.Locks[0]; l.Name != "exec" || l.Label != "team-lock" || l.Options["backend"] != c.backend {
				t.Errorf("lock entry %+v", l)
			}
			check, err := clientCheck(t, "--backend", c.backend, "--duration", "2s", "--", external.Python(), filepath.Join(dir, "team-lock_client.py"))
			if err != nil || !strings.Contains(check, "client-check: PASS") {
				t.Errorf("the starter client as written does not pass client-check: %v", err)
			}
			_, err = benchInit(t, "--exec", "--backend", c.backend, "--name", "team-lock", dir)
			var ue *cli.UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "team-lock.yaml exists: not overwritten") {
				t.Errorf("second init: %v, want a refusal to overwrite", err)
			}
		})
	}
}

func TestInitBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "mysql", dir}, "--backend must be " + locks.ServerBackendList() + ` (got "mysql")`},
		{[]string{"--exec", "--backend", "nats", dir}, "--exec: no starter client for nats"},
		{[]string{"--name", "My Lock", dir}, `--name "My Lock"`},
		{[]string{dir, dir}, "one folder at most"},
	} {
		_, err := benchInit(t, c.args...)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("init %v: %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("bad input wrote %d files", len(entries))
	}
	// Without --exec: the scenario only, its command marked for editing.
	out, err := benchInit(t, "--name", "plain", dir)
	if err != nil {
		t.Fatal(err)
	}
	b := mustRead(t, filepath.Join(dir, "plain.yaml"))
	if !bytes.Contains(b, []byte("EDIT: command: your program")) || !strings.Contains(out, "edit the command") {
		t.Errorf("scenario without --exec:\n%s\n%s", b, out)
	}
	if _, err := scenarios.Parse("plain.yaml", b); err != nil {
		t.Errorf("the scenario without --exec does not validate: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "plain_client.py")); err == nil {
		t.Error("init without --exec wrote a client")
	}
	// nats without --exec: the scenario only, on a nats cluster.
	if _, err := benchInit(t, "--backend", "nats", "--name", "plain-nats", dir); err != nil {
		t.Fatal(err)
	}
	b = mustRead(t, filepath.Join(dir, "plain-nats.yaml"))
	if !bytes.Contains(b, []byte("\n  nats: {}")) || !bytes.Contains(b, []byte("backend: nats")) {
		t.Errorf("nats scenario:\n%s", b)
	}
	if _, err := scenarios.Parse("plain-nats.yaml", b); err != nil {
		t.Errorf("the nats scenario does not validate: %v", err)
	}
}

// requireModule skips (fails under CI=true) when /usr/bin/python3 cannot
// import module (make clients installs the Debian packages).
func requireModule(t *testing.T, module string) {
	t.Helper()
	if out, err := exec.Command("/usr/bin/python3", "-c", "import "+module).CombinedOutput(); err != nil {
		testenv.Unavailable(t, "python module %s missing (make clients): %s", module, strings.TrimSpace(string(out)))
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInitNextStepsRunAsPrinted: from the repository root, every next
// step bench init prints starts with a command that exists there (the
// built binary, one on PATH, or go run ./cmd/NAME) and names files init
// wrote, relative to where it was run.
func TestInitNextStepsRunAsPrinted(t *testing.T) {
	t.Chdir("../..")
	out, err := benchInit(t, "--exec", "--name", "next-steps", t.TempDir())
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	_, next, ok := strings.Cut(out, "\nnext:\n")
	if !ok {
		t.Fatalf("no next steps:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(next), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		words := strings.Fields(cmd)
		if len(words) < 2 {
			t.Fatalf("next step %q", line)
		}
		if words[0] == "go" {
			if words[1] != "run" || len(words) < 3 || !isDir(words[2]) {
				t.Errorf("%q: not go run of a command here", line)
			}
		} else if _, err := exec.LookPath(words[0]); err != nil {
			t.Errorf("%q: %s does not run from the repository root: %v", line, words[0], err)
		}
		for _, w := range words {
			w = strings.Trim(w, "'")
			if _, after, ok := strings.Cut(w, "="); ok {
				w = after
			}
			if strings.HasSuffix(w, ".yaml") || strings.HasSuffix(w, ".py") {
				if _, err := os.Stat(w); err != nil {
					t.Errorf("%q names %s, which is not there: %v", line, w, err)
				}
			}
		}
	}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// TestInitSessionStarter: on a backend of session locks the starter
// scenario and client, run as written, read safe with evidence: the paused
// holder's lock held (its session lives on), and the three waiters blocked
// in the server count as contenders because the lock entry says standing.
// Without standing the same run is inconclusive: nobody sent a request in
// the fault's window.
func TestInitSessionStarter(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts servers and client programs")
	}
	tb, _ := cluster.LookupBackend("postgres")
	testenv.RequireBinaries(t, append([]string{"/usr/bin/python3"}, tb.Binaries...)...)
	requireModule(t, "psycopg2")
	dir := t.TempDir()
	if out, err := benchInit(t, "--exec", "--backend", "postgres", "--name", "pg-lock", dir); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "pg-lock.yaml")
	text := mustRead(t, file)
	for _, standing := range []bool{true, false} {
		data := text
		if !standing {
			data = []byte(strings.Replace(string(text), "standing: true}", "standing: false}", 1))
		}
		sc, err := scenarios.Parse(file, data)
		if err != nil {
			t.Fatalf("the starter scenario does not validate: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		res, _, err := runner.Run(ctx, sc, runner.Options{OutDir: filepath.Join(dir, fmt.Sprint("out-", standing))})
		cancel()
		if err != nil {
			t.Fatalf("standing %v: run: %v", standing, err)
		}
		run := res.Runs[0]
		if len(run.Faults) != 1 {
			t.Fatalf("standing %v: %d faults in the result", standing, len(run.Faults))
		}
		f := run.Faults[0]
		t.Logf("standing %v: verdict %s, held %v, %d same-key requests", standing, run.Verdict, f.Held, f.ContendersInExposure)
		switch {
		case standing && (run.Verdict != "met" || !f.Held || f.ContendersInExposure < 3):
			t.Errorf("standing: verdict %s (%s), held %v, %d requests: want met, held, >= 3", run.Verdict, run.VerdictReason, f.Held, f.ContendersInExposure)
		case !standing && run.Verdict != "inconclusive":
			t.Errorf("not standing: verdict %s, want inconclusive (no waiter sent a request while the holder was paused)", run.Verdict)
		}
		if run.LockFaults != 0 || run.LostUpdates != 0 {
			t.Errorf("standing %v: %d lock faults, %d lost updates", standing, run.LockFaults, run.LostUpdates)
		}
	}
}
