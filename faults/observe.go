package faults

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/locklab/locklab/cluster"
)

// The faults probe servers they just killed or cut: go-redis's pool
// would print every failed dial to stderr, between the progress lines.
func init() { redis.SetLogger(&logging.VoidLogger{}) }

// Evidence: each fault looks for the effect it should have had (its
// action's observe step, the table's Observes column) and the Window says
// whether it was seen (Bit) and what was seen (Observed). A fault whose
// effect was not seen did not bite: a run claiming safety through it has
// no evidence.

// ObserveTimeout bounds one fault's observation (a few short probes).
const ObserveTimeout = 3 * time.Second

// probeTimeout bounds one probe: a process state, a DBSIZE, a round trip.
const probeTimeout = time.Second

// evidence is what an observation found.
type evidence struct {
	checked bool // false: nothing was looked at (Window.Bit stays nil)
	bit     bool
	seen    string
	// lostAt is when the lock state on the node the fault acted on was
	// seen lost (a restart that came back empty, a replica promoted
	// without the key, keys expired by a clock jump); zero when it was not
	// seen lost (Window.LostAt).
	lostAt time.Time
}

func seen(bit bool, format string, args ...any) evidence {
	return evidence{checked: true, bit: bit, seen: fmt.Sprintf(format, args...)}
}

func unchecked(format string, args ...any) evidence {
	return evidence{seen: fmt.Sprintf(format, args...)}
}

// observeCtx is the context of an observation: it outlives ctx (faults
// lasting to the end are observed after the run's ctx ended, before they
// heal), bounded by ObserveTimeout.
func observeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), ObserveTimeout)
}

// HeldClient is the holder a fault acts on, kept inside its critical
// section (at its write) from being picked until Release: it cannot leave
// between being picked and the fault applying.
type HeldClient struct {
	Client int
	// Release lets the holder write and exit again.
	Release func()
	// Seen tells what became of the holder's visit so far.
	Seen func() HolderState
}

// HolderState is what became of a held visit (times since Env.Base).
type HolderState struct {
	Inside bool
	// Contenders counts visits of other clients to the lock that entered
	// while the holder was inside, since it was picked.
	Contenders int
	// Expired: the holder's promised validity ran out while it was inside.
	Expired    bool
	Unbounded  bool
	ValidUntil time.Duration
}

// holderEvidence combines a fault's own evidence with what the holder did:
// it must have been inside when the fault applied; a paused holder must
// still be inside when the pause ends; a cut-off holder must have met a
// contender, or seen its promise run out, while inside. cut says whether
// the fault cuts the holder off: a partition of the waiters alone leaves
// it uncut, and only the first rule applies to it.
func holderEvidence(typ string, cut bool, own evidence, name string, atApply, atEnd HolderState) evidence {
	var parts []string
	bit := true
	if atApply.Inside {
		parts = append(parts, name+" inside when the fault applied")
	} else {
		bit = false
		parts = append(parts, name+" had left before the fault applied")
	}
	switch typ {
	case PauseClient:
		if atEnd.Inside {
			parts = append(parts, "still inside when it ended")
		} else {
			bit = false
			parts = append(parts, "left before it ended")
		}
	case Partition:
		if !cut {
			parts = append(parts, "not cut (the partition cuts the waiters)")
			break
		}
		promise := "its promise was unbounded"
		if !atEnd.Unbounded {
			promise = fmt.Sprintf("its promise ran to %.2fs", atEnd.ValidUntil.Seconds())
			if atEnd.ValidUntil == 0 {
				promise = "it reported no promise"
			}
		}
		switch {
		case atEnd.Contenders > 0:
			parts = append(parts, fmt.Sprintf("%s granted the lock while it was inside", plural(atEnd.Contenders, "contender")))
		case atEnd.Expired:
			parts = append(parts, "no contender entered, but "+promise+" and expired while it was inside")
		default:
			bit = false
			parts = append(parts, "no contender entered while it was inside and "+promise+" (not expired while inside): the cut created no race")
		}
	}
	out := evidence{checked: true, bit: bit && (own.bit || !own.checked), seen: strings.Join(parts, ", ")}
	out.seen = joinDetail(own.seen, out.seen)
	return out
}

// procState is the state letter of /proc/<pid>/stat (R, S, T, ...).
func procState(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	// pid (comm) S ...: comm may hold spaces and parentheses, the state
	// follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return "", fmt.Errorf("stat %q", s)
	}
	return s[i+2 : i+3], nil
}

// liveState is procState with a process that is gone or a zombie as "".
func liveState(pid int) string {
	st, err := procState(pid)
	if err != nil || st == "Z" || st == "X" {
		return ""
	}
	return st
}

// stoppedState polls pid's state until it is stopped (T, or t when
// traced), gone, or probeTimeout passed, and returns the last state seen:
// SIGSTOP is delivered asynchronously, so a running process reads R for
// a moment after the kill(2) returned.
func stoppedState(ctx context.Context, pid int) string {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		st := liveState(pid)
		if st == "T" || st == "t" || st == "" {
			return st
		}
		select {
		case <-ctx.Done():
			return st
		case <-tick.C:
		}
	}
}

// isRedis says whether a node speaks the Redis protocol with a keyspace.
func isRedis(n *cluster.Node) bool {
	return n.Kind == cluster.KindRedis || n.Kind == cluster.KindReplica
}

// probeRedis runs f with a one-connection client straight to addr and a
// context that ends after probeTimeout.
func probeRedis(ctx context.Context, addr string, f func(context.Context, *redis.Client) error) error {
	rc := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, PoolSize: 1, ContextTimeoutEnabled: true,
		DialTimeout: probeTimeout, ReadTimeout: probeTimeout, WriteTimeout: probeTimeout,
	})
	defer rc.Close()
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return f(pctx, rc)
}

// keyCount is the number of keys in every database of a Redis node (the
// lock keys of a run: the workload writes nothing else there).
func keyCount(ctx context.Context, addr string) (int64, error) {
	var info string
	err := probeRedis(ctx, addr, func(ctx context.Context, rc *redis.Client) (err error) {
		info, err = rc.Info(ctx, "keyspace").Result()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("info keyspace at %s: %w", addr, err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		// db0:keys=1,expires=1,avg_ttl=0
		_, rest, ok := strings.Cut(strings.TrimSpace(line), ":keys=")
		if !ok {
			continue
		}
		k, _, _ := strings.Cut(rest, ",")
		v, err := strconv.ParseInt(k, 10, 64)
		if err == nil {
			n += v
		}
	}
	return n, nil
}

// persistent says whether a Redis node writes its data to disk
// (appendonly or an RDB save schedule), so that a restart keeps its keys.
func persistent(ctx context.Context, addr string) (bool, string, error) {
	var aof, save map[string]string
	err := probeRedis(ctx, addr, func(ctx context.Context, rc *redis.Client) (err error) {
		if aof, err = rc.ConfigGet(ctx, "appendonly").Result(); err != nil {
			return fmt.Errorf("config get appendonly: %w", err)
		}
		if save, err = rc.ConfigGet(ctx, "save").Result(); err != nil {
			return fmt.Errorf("config get save: %w", err)
		}
		return nil
	})
	if err != nil {
		return false, "", fmt.Errorf("%s: %w", addr, err)
	}
	switch {
	case aof["appendonly"] == "yes":
		return true, "appendonly yes", nil
	case strings.TrimSpace(save["save"]) != "":
		return true, "save " + save["save"], nil
	}
	return false, "no persistence", nil
}

// roundTrip times one request/reply to a server of kind through addr (a
// link's proxy), with the kind's cluster.PingOf. ok is false for a kind
// without one. When no reply came, the duration is how long it waited
// after sending (the round trip was longer), with the error.
func roundTrip(ctx context.Context, addr, kind string, wait time.Duration) (time.Duration, bool, error) {
	p := cluster.PingOf(kind)
	if p == nil {
		return 0, false, nil
	}
	d := net.Dialer{Timeout: probeTimeout}
	t0 := time.Now()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, true, err
	}
	defer c.Close()
	dl := time.Now().Add(probeTimeout + wait)
	if t, ok := ctx.Deadline(); ok && t.Before(dl) {
		dl = t
	}
	c.SetDeadline(dl)
	if p.Request != nil {
		t0 = time.Now()
		if _, err := c.Write(p.Request); err != nil {
			return 0, true, err
		}
	}
	buf := make([]byte, p.Reply)
	_, err = io.ReadFull(c, buf)
	took := time.Since(t0)
	if err != nil {
		return took, true, fmt.Errorf("round trip to %s: %w", addr, err)
	}
	if !p.OK(buf) {
		return 0, true, fmt.Errorf("round trip to %s: unexpected reply %q", addr, buf)
	}
	return took, true, nil
}

// probes is how many round trips fastestRoundTrip tries: the fastest of a
// few is the link's own cost, without the machine's passing stalls.
const probes = 3

// fastestRoundTrip is the smallest of up to probes round trips through
// addr (answered true), or, when none was answered, the longest wait
// after a request without its reply: a lower bound of the round trip
// (answered false, with the last error).
func fastestRoundTrip(ctx context.Context, addr, kind string, wait time.Duration) (d time.Duration, answered, ok bool, err error) {
	for range probes {
		took, can, e := roundTrip(ctx, addr, kind, wait)
		if !can {
			return 0, false, false, nil
		}
		ok = true
		switch {
		case e == nil && (!answered || took < d):
			d, answered = took, true
		case e != nil && !answered:
			d, err = max(d, took), e
		}
		if ctx.Err() != nil {
			break
		}
	}
	if answered {
		err = nil
	}
	return d, answered, ok, err
}

// established lists the ESTABLISHED TCP connections accepted on the
// local ports of listens (proxies' listen addresses), from one read of
// /proc/net/tcp and tcp6 (the kernel builds those files socket by socket:
// on a busy machine one read costs tens of milliseconds), by listen
// address and remote address.
func established(listens ...string) (map[string]bool, error) {
	ports := map[uint64]string{}
	for _, l := range listens {
		_, p, err := net.SplitHostPort(l)
		if err != nil {
			return nil, err
		}
		port, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return nil, err
		}
		ports[port] = l
	}
	out := map[string]bool{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		rest := string(b)
		_, rest, _ = strings.Cut(rest, "\n") // the header
		for rest != "" {
			var line string
			line, rest, _ = strings.Cut(rest, "\n")
			// "  sl: local:PORT remote:PORT st ...", addresses in hex
			_, line, ok := strings.Cut(line, ": ")
			if !ok {
				continue
			}
			local, line, _ := strings.Cut(line, " ")
			remote, line, _ := strings.Cut(line, " ")
			if !strings.HasPrefix(line, "01") { // ESTABLISHED
				continue
			}
			lp := local[strings.LastIndexByte(local, ':')+1:]
			if v, err := strconv.ParseUint(lp, 16, 32); err == nil && ports[v] != "" {
				out[ports[v]+" "+remote] = true
			}
		}
	}
	return out, nil
}

// linkConns lists the live connections on ls (each proxy's listen port).
func linkConns(ls []*cluster.Link) map[string]bool {
	var listens []string
	for _, l := range ls {
		for _, p := range l.Proxies() {
			listens = append(listens, p.Listen)
		}
	}
	out, _ := established(listens...)
	return out
}

// leastTTL is the least remaining time to live among the keys of database
// 0 of the Redis node at addr that have one (the lock keys), scanned with
// SCAN; ok is false when no key has a TTL.
func leastTTL(ctx context.Context, addr string) (least time.Duration, ok bool, err error) {
	err = probeRedis(ctx, addr, func(ctx context.Context, rc *redis.Client) error {
		iter := rc.Scan(ctx, 0, "*", 100).Iterator()
		for n := 0; iter.Next(ctx) && n < 10000; n++ {
			d, err := rc.PTTL(ctx, iter.Val()).Result()
			if err != nil || d < 0 {
				continue
			}
			if !ok || d < least {
				least, ok = d, true
			}
		}
		return iter.Err()
	})
	return least, ok, err
}
