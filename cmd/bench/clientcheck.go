package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
	"github.com/locklab/locklab/workload"
)

const clientCheckUsage = `Usage:
  bench client-check [--backend B] [--timeout D] [--duration D] [-v] -- CMD ARGS...

B is redis (the default), zookeeper, etcd, postgres, mariadb or nats.
Starts a real server of the backend (127.0.0.1, a free port), runs CMD as
two clients through the client protocol (docs/client-protocol.md) for
--duration, and checks the conversation: ready within --timeout, the
protocol version, fencing tokens, validity or session reported, the order
of enter/read/write/exit, releases, and the exit on stop. Prints PASS,
WARN or FAIL per check; exit 0 when nothing failed, 1 when a check
failed, 2 on bad input.
`

// clientCheckFlags are the flags of bench client-check.
type clientCheckFlags struct {
	backend  string
	timeout  time.Duration
	duration time.Duration
	verbose  bool
}

// stopWithin is how long a program may take to exit after stop.
const stopWithin = 5 * time.Second

// The acquire and release timeouts client-check hands its programs, ms.
const acquireTimeoutMs, releaseTimeoutMs = 5000, 5000

func clientCheckCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.FlagSet("bench client-check", stderr, "%s", clientCheckUsage)
	var f clientCheckFlags
	fs.StringVar(&f.backend, "backend", "redis", "the server the program uses: "+locks.ServerBackendList())
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "how long to wait for each program's ready line")
	fs.DurationVar(&f.duration, "duration", 3*time.Second, "how long the two clients work")
	fs.BoolVar(&f.verbose, "v", false, "print the whole conversation")
	argv, err := cli.ParseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(argv) == 0 {
		return cli.Usagef("bench client-check: no program given: bench client-check [--backend B] -- CMD ARGS...")
	}
	spec, err := serverSpec(f.backend)
	if err != nil {
		return cli.Usagef("bench client-check: --backend: %v", err)
	}
	if f.timeout <= 0 || f.duration <= 0 {
		return cli.Usagef("bench client-check: --timeout and --duration must be positive")
	}
	res, err := checkClient(ctx, f, spec, argv, stdout)
	if err != nil {
		return err
	}
	res.print(stdout)
	if res.failed() {
		return fmt.Errorf("bench client-check: %w", cli.ErrFailed)
	}
	return nil
}

// serverSpec is a one-server cluster of backend (a row of the backend
// table: redis, zookeeper, etcd, ...) with two clients reaching it
// directly (no fault acts on them).
func serverSpec(backend string) (cluster.Spec, error) {
	s := cluster.Spec{Clients: 2, ClientProxies: []string{}}
	// Its section with every field at its default (one server: one Redis
	// primary, zookeeper x1, etcd x1, postgres without replicas, ...).
	if _, ok := cluster.LookupBackend(backend); !ok {
		return s, fmt.Errorf("must be %s (got %q)", locks.ServerBackendList(), backend)
	}
	s.Declare(backend, cluster.Settings{})
	return s, nil
}

// check is one line of the verdict.
type check struct {
	name, status, detail string
}

const (
	pass = "PASS"
	warn = "WARN"
	fail = "FAIL"
)

// checkResult is every check, and the stderr tails to quote on failure.
type checkResult struct {
	checks []check
	stderr map[int]string
}

func (r *checkResult) add(name, status, format string, args ...any) {
	r.checks = append(r.checks, check{name, status, fmt.Sprintf(format, args...)})
}

func (r *checkResult) failed() bool {
	for _, c := range r.checks {
		if c.status == fail {
			return true
		}
	}
	return false
}

func (r *checkResult) print(w io.Writer) {
	for _, c := range r.checks {
		fmt.Fprintf(w, "%s  %-11s %s\n", c.status, c.name, c.detail)
	}
	if r.failed() {
		for i := 0; i < 2; i++ {
			if t := r.stderr[i]; t != "" {
				fmt.Fprintf(w, "stderr of client-%d (last lines): %s\n", i, t)
			}
		}
	}
	n := 0
	for _, c := range r.checks {
		if c.status == fail {
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "client-check: PASS")
	} else {
		fmt.Fprintf(w, "client-check: FAIL (%d of %d checks)\n", n, len(r.checks))
	}
}

// line is one protocol line of the conversation.
type line struct {
	client      int
	fromProgram bool
	at          time.Duration
	msg         map[string]any
	raw         string
}

// transcript records the conversation of every client.
type transcript struct {
	mu    sync.Mutex
	start time.Time
	lines []line
	w     io.Writer // -v: print each line
}

func (t *transcript) trace(client int, fromProgram bool, b []byte) {
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	t.mu.Lock()
	defer t.mu.Unlock()
	l := line{client: client, fromProgram: fromProgram, at: time.Since(t.start), msg: m, raw: string(b)}
	t.lines = append(t.lines, l)
	if t.w != nil {
		dir := "harness -> "
		if fromProgram {
			dir = "program -> "
		}
		fmt.Fprintf(t.w, "%8.3fs client-%d %s%s\n", l.at.Seconds(), client, dir, b)
	}
}

func (t *transcript) all() []line {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]line(nil), t.lines...)
}

// checkClient runs argv as two clients against a fresh server and judges
// the conversation. Its error is a harness failure (no server), not the
// program's.
func checkClient(ctx context.Context, f clientCheckFlags, spec cluster.Spec, argv []string, stdout io.Writer) (*checkResult, error) {
	dir, err := os.MkdirTemp("", "locklab-client-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	spec.Dir, spec.RunID = dir, "client-check"
	spec.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	started := time.Now()
	c, err := cluster.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", f.backend, err)
	}
	defer c.Close()
	fmt.Fprintf(stdout, "client-check: %s ready in %.1fs; running %q as 2 clients for %s\n",
		f.backend, time.Since(started).Seconds(), strings.Join(argv, " "), f.duration)

	tr := &transcript{start: time.Now()}
	if f.verbose {
		tr.w = stdout
	}
	cfg := workload.Config{Clients: 2, Keys: 1, CriticalSection: 10 * time.Millisecond,
		AcquireTimeout: acquireTimeoutMs * time.Millisecond, ReleaseTimeout: releaseTimeoutMs * time.Millisecond}
	specs := make([]workload.ProgramSpec, 2)
	for i := range specs {
		ep := c.Endpoints(i)
		specs[i] = workload.ProgramSpec{Client: i, Name: "client-check", Command: argv, Trace: tr.trace,
			Env: append(external.Env(ep.Auth), external.LoginEnv(locks.Backend(f.backend))...),
			Config: workload.ProgramConfig{Client: i, Lock: "exec", Backend: f.backend,
				Endpoints: workload.ProgramEndpointsOf(ep),
				TTLMs:     5000, RetryMs: 5, Prefix: "locklab:client-check:", Options: map[string]string{}, Seed: int64(i + 1),
				CriticalSectionMs: 10, AcquireTimeoutMs: acquireTimeoutMs, ReleaseTimeoutMs: releaseTimeoutMs}}
	}
	r := &checkResult{stderr: map[int]string{}}
	sctx, cancel := context.WithTimeout(ctx, f.timeout)
	readyAt := time.Now()
	ps, err := workload.StartPrograms(sctx, specs, dir+"/logs")
	cancel()
	if err != nil {
		r.add("ready", fail, "%v", err)
		return r, nil
	}
	defer ps.Kill()
	r.add("ready", pass, "both clients said ready in %.1fs (library: %s)", time.Since(readyAt).Seconds(), orNone(ps.Libraries()[0]))
	checkVersion(r, ps.Versions())

	base := time.Now()
	cfg.Base = base
	res := checker.New(checker.FencingObserve, base)
	rec := workload.NewRecorder(base)
	ps.Run(cfg, res, rec)
	select {
	case <-time.After(f.duration):
	case <-ps.Failed():
	case <-ps.Done():
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	ps.StopWork()
	// A program gets stop at its next next: one still acquiring or
	// releasing may ask only its timeout later, and its stopWithin counts
	// from there (checkStop), so wait that long for it before judging.
	stopWait := time.Duration(acquireTimeoutMs+releaseTimeoutMs)*time.Millisecond + stopWithin + time.Second
	deadline := time.Now().Add(stopWait)
	select {
	case <-ps.Done():
	case <-time.After(stopWait):
	}
	exits := ps.Exits(max(time.Until(deadline), 0))
	ps.Kill()
	for _, e := range exits {
		r.stderr[e.Client] = e.Stderr
	}
	judge(r, tr.all(), ps.Err(), rec, res.Summary(), exits)
	return r, nil
}

func orNone(s string) string {
	if s == "" {
		return `none given (add "library" to ready)`
	}
	return s
}

func checkVersion(r *checkResult, vs []int) {
	switch v := vs[0]; {
	case v == workload.ProtocolVersion:
		r.add("version", pass, "protocol version %d", v)
	default:
		r.add("version", warn, `protocol version %d (ready has no "version"): it works, but say "version":%d in ready to use renewed and session_ms as documented`, v, workload.ProtocolVersion)
	}
}

// judge turns the conversation into the checks after ready.
func judge(r *checkResult, lines []line, runErr error, rec *workload.Recorder, sum checker.Summary, exits []workload.ProgramExit) {
	ops, _ := rec.Counts()
	if runErr != nil {
		r.add("protocol", fail, "%s", firstError(runErr))
	} else {
		r.add("protocol", pass, "every line a JSON object with a known op, in an allowed order")
	}
	if ops == 0 {
		r.add("work", fail, "no critical section completed: no client got through next, go, acquired, enter, read, write, exit")
	} else {
		r.add("work", pass, "%d critical sections completed (enter, read, write, exit in order)", ops)
	}
	checkTokens(r, lines)
	checkPromise(r, lines)
	checkSent(r, lines)
	checkReleases(r, lines)
	if sum.Violations > 0 {
		r.add("exclusion", fail, "%d times both clients were inside the same lock at once (%d incidents)", sum.Violations, sum.Incidents)
	} else if ops > 0 {
		r.add("exclusion", pass, "never two clients inside at once")
	}
	checkStop(r, exits, runErr != nil)
}

// firstError is the first of a joined error, on one line.
func firstError(err error) string {
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) && len(j.Unwrap()) > 0 {
		err = j.Unwrap()[0]
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// checkTokens: tokens are integers >= 0 (the harness already refused
// others) and, when not 0, increase per lock in the order the grants
// were reported.
func checkTokens(r *checkResult, lines []line) {
	key := map[int]string{}
	last := map[string]float64{}
	n, nonZero := 0, 0
	for _, l := range lines {
		op, _ := l.msg["op"].(string)
		if !l.fromProgram && op == "go" {
			key[l.client], _ = l.msg["key"].(string)
			continue
		}
		if !l.fromProgram || op != "acquired" {
			continue
		}
		tok, ok := l.msg["token"].(float64)
		if !ok {
			continue // reported by the protocol check
		}
		n++
		if tok == 0 {
			continue
		}
		nonZero++
		k := key[l.client]
		if prev, seen := last[k]; seen && tok <= prev {
			r.add("tokens", fail, "client-%d was granted %s with token %.0f after token %.0f: a fencing token must increase with every grant of a lock (0: none)", l.client, k, tok, prev)
			return
		}
		last[k] = tok
	}
	switch {
	case n == 0:
		r.add("tokens", fail, "no acquired line: nothing to check")
	case nonZero == 0:
		r.add("tokens", warn, "token 0 in every grant: no fencing token, so the resource cannot reject a paused holder's stale write")
	case nonZero < n:
		r.add("tokens", fail, "%d of %d grants had token 0: give every grant a token, or none", n-nonZero, n)
	default:
		r.add("tokens", pass, "%d grants, tokens increasing per lock", n)
	}
}

// checkPromise: acquired carries validity_ms or session_ms.
func checkPromise(r *checkResult, lines []line) {
	var v, s, none int
	for _, l := range lines {
		if !l.fromProgram || l.msg["op"] != "acquired" {
			continue
		}
		_, hasV := l.msg["validity_ms"].(float64)
		_, hasS := l.msg["session_ms"].(float64)
		switch {
		case hasV:
			v++
		case hasS:
			s++
		default:
			none++
		}
	}
	renewals := 0
	for _, l := range lines {
		if l.fromProgram && l.msg["op"] == "renewed" {
			renewals++
		}
	}
	switch {
	case v+s+none == 0:
		return // no grant: the tokens check said so
	case none > 0:
		r.add("promise", fail, "%d of %d acquired lines carry neither validity_ms (a lease's TTL) nor session_ms (a ZooKeeper/etcd session timeout): without it the checker cannot tell the lock's fault from the client's (the result's promise reads \"unreported\")", none, v+s+none)
	case s > 0:
		r.add("promise", pass, "session_ms in %d grants, validity_ms in %d; %d renewed lines", s, v, renewals)
	default:
		r.add("promise", pass, "validity_ms in %d grants; %d renewed lines", v, renewals)
	}
}

// acquireCall is one acquire of the conversation: from go to acquired,
// and whether the other client held a lock at any moment of it.
type acquireCall struct {
	took      time.Duration
	contended bool
}

// acquireCalls are the granted acquires of lines, each marked contended
// when the other client held (acquired .. released) at any moment between
// its go and its acquired. client-check runs one key, so any holding of
// the other client is on the same lock.
func acquireCalls(lines []line) []acquireCall {
	type span struct{ from, to time.Duration }
	goAt := map[int]time.Duration{}
	holdFrom := map[int]time.Duration{}
	held := map[int][]span{}
	type pending struct {
		client   int
		from, to time.Duration
	}
	var calls []pending
	for _, l := range lines {
		op, _ := l.msg["op"].(string)
		switch {
		case !l.fromProgram && op == "go":
			goAt[l.client] = l.at
		case l.fromProgram && op == "acquired":
			calls = append(calls, pending{l.client, goAt[l.client], l.at})
			holdFrom[l.client] = l.at
		case l.fromProgram && op == "released":
			held[l.client] = append(held[l.client], span{holdFrom[l.client], l.at})
		}
	}
	end := time.Duration(1<<63 - 1)
	for c, from := range holdFrom { // still holding at the end
		if n := len(held[c]); n == 0 || held[c][n-1].from != from {
			held[c] = append(held[c], span{from, end})
		}
	}
	out := make([]acquireCall, 0, len(calls))
	for _, p := range calls {
		a := acquireCall{took: p.to - p.from}
		for c, spans := range held {
			if c == p.client {
				continue
			}
			for _, s := range spans {
				if s.from < p.to && s.to > p.from {
					a.contended = true
				}
			}
		}
		out = append(out, a)
	}
	return out
}

// median of ds (0 when empty).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// checkSent warns a program that seems to retry inside acquire without
// saying when the winning request was sent (sent_us): its acquired lines
// carry validity_ms, none carries sent_us, and its contended acquires (the
// other client held the lock meanwhile) took a median of more than 4
// times, and 5 ms more than, its uncontended ones (about one round trip).
// Such an acquire waited for the holder, and a program that waits by
// retrying sent the request that won long after go, where the harness
// starts its promise without sent_us. From outside a lock that sends one
// request and waits for the server looks the same: the warning says "if".
// Session locks (session_ms only) are not judged: their promise counts
// from the session's requests.
func checkSent(r *checkResult, lines []line) {
	var n, sent, ttl int
	for _, l := range lines {
		if !l.fromProgram || l.msg["op"] != "acquired" {
			continue
		}
		n++
		if _, ok := l.msg["sent_us"].(float64); ok {
			sent++
		}
		if _, ok := l.msg["validity_ms"].(float64); ok {
			ttl++
		}
	}
	switch {
	case n == 0:
		return // no grant: the tokens check said so
	case sent > 0:
		r.add("sent_us", pass, "sent_us in %d of %d grants: promises count from the request that won", sent, n)
		return
	case ttl == 0:
		r.add("sent_us", pass, "not needed: session promises (session_ms) count from the session's requests")
		return
	}
	var un, con []time.Duration
	for _, a := range acquireCalls(lines) {
		if a.contended {
			con = append(con, a.took)
		} else {
			un = append(un, a.took)
		}
	}
	rt, wait := median(un), median(con)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	switch {
	case len(un) == 0 || len(con) < sentMinContended:
		r.add("sent_us", pass, "not judged: %d uncontended and %d contended acquires (want 1 and %d)", len(un), len(con), sentMinContended)
	case wait > 4*rt && wait-rt > 5*time.Millisecond:
		r.add("sent_us", warn, "contended acquires took a median of %.1f ms against %.1f ms uncontended (%d and %d calls), and no acquired line carried sent_us: if acquire retries (a loop of SET NX, a try-lock until it wins), the request that won went out up to %.1f ms after go and the harness counts validity_ms from go, so a grant can arrive with its promise spent and an overlap the lock caused reads as the client's fault. Send sent_us (locklab_client: lc.sending() before each try)",
			ms(wait), ms(rt), len(con), len(un), ms(wait-rt))
	default:
		r.add("sent_us", pass, "none sent; contended acquires took a median of %.1f ms, uncontended %.1f ms: no sign of retries inside acquire", ms(wait), ms(rt))
	}
}

// sentMinContended is how many contended acquires checkSent needs.
const sentMinContended = 3

// checkReleases: every release said ok.
func checkReleases(r *checkResult, lines []line) {
	out := map[string]int{}
	n := 0
	for _, l := range lines {
		if l.fromProgram && l.msg["op"] == "released" {
			o, _ := l.msg["outcome"].(string)
			out[o]++
			n++
		}
	}
	switch {
	case n == 0:
		r.add("releases", fail, "no released line")
	case out["ok"] == n:
		r.add("releases", pass, "%d releases, all ok", n)
	default:
		r.add("releases", fail, "%d of %d releases not ok (not_held %d, error %d): the lock was no longer ours when released", n-out["ok"], n, out["not_held"], out["error"])
	}
}

// checkStop: each program exits with status 0 within stopWithin of stop.
// After a protocol failure a client may never have been told to stop:
// that is not held against it.
func checkStop(r *checkResult, exits []workload.ProgramExit, broken bool) {
	var bad []string
	var slowest time.Duration
	for _, e := range exits {
		switch {
		case e.StopSent.IsZero() && broken:
			continue
		case e.StopSent.IsZero():
			bad = append(bad, fmt.Sprintf("client-%d never asked for more work (next) after the run ended, so it was never told to stop", e.Client))
		case e.Exited.IsZero() || e.Exited.Sub(e.StopSent) > stopWithin:
			bad = append(bad, fmt.Sprintf(`client-%d did not exit within %s of {"op":"stop"}: exit with status 0 when you read it`, e.Client, stopWithin))
		case e.Status != "exit status 0":
			bad = append(bad, fmt.Sprintf("client-%d ended with %s after stop, want exit status 0", e.Client, e.Status))
		default:
			slowest = max(slowest, e.Exited.Sub(e.StopSent))
		}
	}
	if len(bad) > 0 {
		r.add("stop", fail, "%s", strings.Join(bad, "; "))
		return
	}
	if slowest == 0 && broken {
		r.add("stop", warn, "not checked: the conversation broke before stop")
		return
	}
	r.add("stop", pass, "both exited with status 0 within %.2fs of stop", slowest.Seconds())
}
