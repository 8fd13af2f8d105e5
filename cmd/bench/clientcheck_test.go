package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
	"github.com/locklab/locklab/testenv"
)

// fakeClient is a tiny client program that grants every lock at once
// (no lock server behind it) and breaks the protocol as its first
// argument says: noflush (never flushes stdout), badtoken (tokens that go
// down), nostop (ignores stop).
const fakeClient = `import json, sys, time
mode = sys.argv[1]
if mode == "noflush":  # block-buffered whatever PYTHONUNBUFFERED says
    sys.stdout = open(1, "w", buffering=8192, closefd=False)
def send(**m):
    sys.stdout.write(json.dumps(m) + "\n")
    if mode != "noflush":
        sys.stdout.flush()
def read():
    return json.loads(sys.stdin.readline())
cfg = read()
send(op="ready", version=2, library="fake")
read()
n = 0
while True:
    send(op="next")
    w = read()
    if w["op"] == "stop":
        if mode == "nostop":
            print("ignoring stop", file=sys.stderr, flush=True)
            time.sleep(60)
        sys.exit(0)
    n += 1
    token = 1000 - 2 * n - cfg["client"] if mode == "badtoken" else 0
    send(op="acquired", token=token, validity_ms=5000)
    send(op="enter"); read()
    send(op="read"); v = read()["value"]
    send(op="write", value=v + 1); read()
    send(op="exit"); read()
    send(op="released", outcome="ok")
`

// retryClient is a tiny Redis lock program that retries SET NX PX inside
// acquire every 5 ms; with argument "sent" its acquired line says when the
// SET that won was sent (sent_us), with "nosent" it does not.
const retryClient = `import json, sys, time, uuid
import redis
def send(**m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
def read():
    return json.loads(sys.stdin.readline())
cfg = read()
host, port = cfg["endpoints"]["redis"][0].rsplit(":", 1)
r = redis.Redis(host=host, port=int(port))
send(op="ready", version=2)
read()
while True:
    send(op="next")
    w = read()
    if w["op"] == "stop":
        sys.exit(0)
    name, me = cfg["prefix"] + w["key"], uuid.uuid4().hex
    while True:
        sent = time.perf_counter()
        if r.set(name, me, nx=True, px=5000):
            break
        time.sleep(0.005)
    m = dict(op="acquired", token=0, validity_ms=5000)
    if sys.argv[1] == "sent":
        m["sent_us"] = (time.perf_counter() - sent) * 1e6
    send(**m)
    send(op="enter"); read()
    send(op="read"); v = read()["value"]
    time.sleep(0.01)
    send(op="write", value=v + 1); read()
    send(op="exit"); read()
    r.delete(name)
    send(op="released", outcome="ok")
`

// clientCheck runs bench client-check with args and returns its output and
// error.
func clientCheck(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	err := run(ctx, append([]string{"client-check"}, args...), &out, &errb)
	t.Logf("bench client-check %s:\n%s%s", strings.Join(args, " "), out.String(), errb.String())
	return out.String(), err
}

func TestClientCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server and client programs")
	}
	testenv.RequireBinaries(t, "redis-server", "/usr/bin/python3")
	fake := filepath.Join(t.TempDir(), "fake.py")
	if err := os.WriteFile(fake, []byte(fakeClient), 0o644); err != nil {
		t.Fatal(err)
	}
	retry := filepath.Join(t.TempDir(), "retry.py")
	if err := os.WriteFile(retry, []byte(retryClient), 0o644); err != nil {
		t.Fatal(err)
	}
	redisPy, _, err := external.Command("redis-py", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		args   []string
		want   []string // lines the output must contain
		refuse []string // ... and must not
	}{
		{"redis-py passes", append([]string{"--backend", "redis", "--duration", "2s", "--"}, redisPy...),
			[]string{"PASS  version     protocol version 2", "PASS  promise     validity_ms in", "PASS  sent_us     sent_us in", "PASS  stop", "client-check: PASS"}, nil},
		{"retries without sent_us", []string{"--duration", "2s", "--", "/usr/bin/python3", retry, "nosent"},
			[]string{"WARN  sent_us     contended acquires took a median of", "no acquired line carried sent_us", "client-check: PASS"}, nil},
		{"retries with sent_us", []string{"--duration", "2s", "--", "/usr/bin/python3", retry, "sent"},
			[]string{"PASS  sent_us     sent_us in", "client-check: PASS"}, []string{"WARN  sent_us"}},
		{"no flush", []string{"--timeout", "3s", "--", "/usr/bin/python3", fake, "noflush"},
			[]string{"FAIL  ready", "no line on stdout after 3s: flush stdout after every line (Python: print(..., flush=True))", "client-check: FAIL"}, nil},
		{"bad token", []string{"--duration", "1s", "--", "/usr/bin/python3", fake, "badtoken"},
			[]string{"FAIL  tokens", "a fencing token must increase with every grant of a lock", "client-check: FAIL"}, nil},
		{"no exit on stop", []string{"--duration", "1s", "--", "/usr/bin/python3", fake, "nostop"},
			[]string{"FAIL  stop", `did not exit within 5s of {"op":"stop"}`, "stderr of client-0 (last lines): ignoring stop"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := clientCheck(t, c.args...)
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, w := range c.refuse {
				if strings.Contains(out, w) {
					t.Errorf("output has %q", w)
				}
			}
			passed := strings.Contains(out, "client-check: PASS")
			if passed && err != nil {
				t.Errorf("passed, but error %v (want exit 0)", err)
			}
			if !passed && !errors.Is(err, cli.ErrFailed) {
				t.Errorf("failed, but error %v (want cli.ErrFailed: exit 1)", err)
			}
		})
	}
}

func TestClientCheckBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no program given"},
		{[]string{"--backend", "mysql", "--", "prog"}, "--backend: must be " + locks.ServerBackendList() + ` (got "mysql")`},
		{[]string{"--timeout", "0s", "--", "prog"}, "must be positive"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), append([]string{"client-check"}, c.args...), &out, &errb)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("client-check %v: error %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
}

// TestClientCheckTableBackend: client-check starts a table backend's
// server (nats) and hands the program its address under endpoints.nats.
func TestClientCheckTableBackend(t *testing.T) {
	tb, ok := cluster.LookupBackend("nats")
	if !ok {
		t.Fatal("nats is not in the backend table")
	}
	testenv.RequireBinaries(t, tb.Binaries...)
	out, err := clientCheck(t, "--backend", "nats", "-v", "--timeout", "1s", "--", "/bin/sh", "-c", "read c; sleep 5")
	if !errors.Is(err, cli.ErrFailed) {
		t.Errorf("a program that never says ready: %v, want a failed check", err)
	}
	if !strings.Contains(out, `"backend":"nats","endpoints":{"nats":["127.0.0.1:`) {
		t.Errorf("no nats endpoints in the config line:\n%s", out)
	}
}
