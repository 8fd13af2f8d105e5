package redlock

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/redislock"
)

// Name is the lock's contract name.
const Name = "redlock"

const (
	// DefaultTTL is the keys' time to live when Config.TTL is 0.
	DefaultTTL = 10 * time.Second
	// DefaultRetry is the longest random delay between two attempts when
	// Config.Retry is 0; each delay is uniform in [Retry/2, Retry]. 10ms, as
	// for the single-instance locks: one attempt on loopback takes well under
	// a millisecond, so waiters that collided (each got some nodes, none a
	// majority) drift apart, and the hand-off delay stays small.
	DefaultRetry = 10 * time.Millisecond
	// MaxNodeTimeout caps the default per-node timeout, min(50ms, ttl/10).
	MaxNodeTimeout = 50 * time.Millisecond
	// DefaultPrefix is the key prefix when Config.Prefix is empty.
	DefaultPrefix = "locklab:"
)

// Errors of one attempt, found in Acquire's error chain once ctx ended.
var (
	// ErrNoQuorum means fewer than a majority of the nodes took the key.
	ErrNoQuorum = errors.New("redlock: no quorum")
	// ErrNoValidity means a majority took the key, but the attempt took so
	// long that no validity time was left (ttl - elapsed - drift <= 0).
	ErrNoValidity = errors.New("redlock: no validity left")
)

// Option names, see Spec.Options in register.go.
const (
	optNodeTimeout = "node_timeout"
	optRenew       = "renew"
	optNodes       = "nodes"
)

// Client is one harness client's connections to the N independent Redis
// primaries, one go-redis client per primary. It is safe for concurrent
// use; Close releases its connections (not the locks).
type Client struct {
	nodes  []node
	quorum int
	log    *slog.Logger

	ttl         time.Duration
	drift       time.Duration
	retry       time.Duration
	nodeTimeout time.Duration
	renew       bool
	prefix      string

	rngMu sync.Mutex
	rng   *rand.Rand

	requests atomic.Int64
	// grants counts the acquisitions this client made, bareGrants those
	// that a bare majority took: a majority with no node to spare.
	grants, bareGrants atomic.Int64

	stopJanitors context.CancelFunc
	janitors     sync.WaitGroup
}

// node is one primary.
type node struct {
	name    string // "redis-<i>", the primary's index in Endpoints.Redis
	rdb     *redis.Client
	janitor *janitor
}

var (
	_ locks.Client = (*Client)(nil)
	_ locks.Stats  = (*Client)(nil)
)

// New connects to every primary of cfg.Endpoints (Endpoints.Redis, or with
// Sentinels each of Endpoints.MasterNames through Sentinel), in parallel,
// with redislock.Connect's settings; every primary must answer PING within
// ctx. A client starts with all its nodes on purpose: a wrong address would
// otherwise hide behind the quorum and silently take one failure's worth of
// tolerance away. Later failures of nodes are what the algorithm tolerates.
//
// N = 1 or 2 is accepted (the algorithm is well defined: quorum N/2+1 is
// every node), but tolerates no failure; the registered spec asks the
// harness for 3 primaries at least.
//
// Options (cfg.Options, see register.go): node_timeout, renew, nodes.
func New(ctx context.Context, cfg locks.Config) (*Client, error) {
	spec, _ := locks.Lookup(Name)
	if err := spec.CheckOptions(cfg.Options); err != nil {
		return nil, err
	}
	c := &Client{
		log:    cfg.Log().With("lock", Name),
		ttl:    cfg.TTL,
		retry:  cfg.Retry,
		prefix: cfg.Prefix,
		rng:    rand.New(rand.NewPCG(uint64(cfg.Seed), 0x7265646c6f636b)), // "redlock"
	}
	if c.ttl == 0 {
		c.ttl = DefaultTTL
	}
	if c.ttl < time.Millisecond {
		return nil, fmt.Errorf("redlock: ttl %v is below 1ms", c.ttl)
	}
	c.drift = Drift(c.ttl)
	if c.retry == 0 {
		c.retry = DefaultRetry
	}
	if c.retry < 0 {
		return nil, fmt.Errorf("redlock: negative retry %v", c.retry)
	}
	if c.prefix == "" {
		c.prefix = DefaultPrefix
	}
	c.nodeTimeout = min(MaxNodeTimeout, c.ttl/10)
	if v, ok := cfg.Options[optNodeTimeout]; ok {
		c.nodeTimeout, _ = parseNodeTimeout(v)
	}
	if c.nodeTimeout >= c.ttl {
		return nil, fmt.Errorf("redlock: %s %v must be below the ttl %v", optNodeTimeout, c.nodeTimeout, c.ttl)
	}
	if v, ok := cfg.Options[optRenew]; ok {
		c.renew, _ = strconv.ParseBool(v)
	}
	n := len(cfg.Endpoints.Redis)
	if len(cfg.Endpoints.Sentinels) > 0 {
		n = len(cfg.Endpoints.MasterNames)
	}
	if n == 0 {
		return nil, errors.New("redlock: no Redis primaries")
	}
	if v, ok := cfg.Options[optNodes]; ok {
		k, _ := parseNodes(v)
		if k > n {
			return nil, fmt.Errorf("redlock: %s=%d but only %d primaries are configured", optNodes, k, n)
		}
		if k > 0 {
			n = k
		}
	}
	c.quorum = n/2 + 1

	c.nodes = make([]node, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		c.nodes[i].name = "redis-" + strconv.Itoa(i)
		wg.Go(func() {
			rdb, err := redislock.Connect(ctx, cfg.Endpoints, i)
			if err != nil {
				errs[i] = &locks.NodeError{Node: c.nodes[i].name, Err: err}
				return
			}
			redislock.CountCommands(rdb, &c.requests)
			c.nodes[i].rdb = rdb
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redlock: %w", err)
	}
	jctx, stop := context.WithCancel(context.Background())
	c.stopJanitors = stop
	for i := range c.nodes {
		n := &c.nodes[i]
		n.janitor = newJanitor(n.rdb)
		c.janitors.Go(func() {
			n.janitor.run(jctx, func(ok bool, err error) {
				if err != nil {
					c.log.Debug("late release failed", "node", n.name, "err", err)
				}
			})
		})
	}
	return c, nil
}

// Drift is the clock drift allowance subtracted from a holding's validity:
// 1% of the TTL plus 2ms for the granularity of Redis's expiry, as in the
// Redlock description.
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// N is the number of primaries the client locks on.
func (c *Client) N() int { return len(c.nodes) }

// Quorum is the number of primaries a holding needs: N/2+1.
func (c *Client) Quorum() int { return c.quorum }

// NodeTimeout is how long one node's SET or extension may take before the
// node counts as failed for that step.
func (c *Client) NodeTimeout() time.Duration { return c.nodeTimeout }

// releaseTimeout bounds one node's delete in Lease.Release:
// max(node timeout, ttl/10). A release is not raced against the validity
// like a SET or an extension, and one that fails leaves the key blocking
// everyone until it expires, so it may wait longer for a node that is
// merely slow (a busy machine, a long GC).
func (c *Client) releaseTimeout() time.Duration { return max(c.nodeTimeout, c.ttl/10) }

// Locker returns a *Locker for the lock name, keyed Prefix+name on every
// primary. A Locker may be shared by goroutines: each Acquire is an
// independent holding with its own random value.
func (c *Client) Locker(name string) locks.Locker {
	return &Locker{c: c, key: c.prefix + name}
}

// Close closes the connections to every primary. Held locks stay until
// their keys expire; a renewal stops once its calls fail. Releases still
// queued for nodes that did not answer in time are dropped.
func (c *Client) Close() error {
	if c.stopJanitors != nil {
		c.stopJanitors()
		c.janitors.Wait()
	}
	var errs []error
	for _, n := range c.nodes {
		if n.rdb != nil {
			errs = append(errs, n.rdb.Close())
		}
	}
	return errors.Join(errs...)
}

// Counters implements locks.Stats: "requests" counts the commands sent to
// all primaries together, "grants" the acquisitions and "bare_grants"
// those that a bare majority took (quorum nodes of more): a holder whose
// keys one node's restart or clock jump brings below a majority.
func (c *Client) Counters() map[string]int64 {
	return map[string]int64{"requests": c.requests.Load(), "grants": c.grants.Load(), "bare_grants": c.bareGrants.Load()}
}

// delay is the random wait before the next attempt: uniform in
// [retry/2, retry], from the client's seeded source.
func (c *Client) delay() time.Duration {
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	return c.retry - time.Duration(c.rng.Int64N(int64(c.retry/2)+1))
}

// reply is one node's answer to one step: ok when the command did what it
// should (SET NX took the key, the script found our value), refused when
// the node answered that it did not, err when it did not answer in time or
// failed.
type reply struct {
	ok  bool
	err error
}

func (r reply) refused() bool { return !r.ok && r.err == nil }

// each runs f on the nodes selected by want (all when nil) in parallel,
// each call bounded by ctx and timeout, and returns the replies in node
// order (zero replies for nodes not selected). A failed call's error is a
// *locks.NodeError.
func (c *Client) each(ctx context.Context, want []bool, timeout time.Duration, f func(ctx context.Context, rdb *redis.Client) (bool, error)) []reply {
	out := make([]reply, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		if want != nil && !want[i] {
			continue
		}
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			ok, err := f(nctx, n.rdb)
			if err != nil {
				if ctxErr := locks.ContextDone(nctx); ctxErr != nil && !errors.Is(err, ctxErr) {
					// go-redis reports a passed deadline as a socket timeout.
					err = fmt.Errorf("%w (%v)", ctxErr, err)
				}
				err = &locks.NodeError{Node: n.name, Err: err}
			}
			out[i] = reply{ok: ok, err: err}
		})
	}
	wg.Wait()
	return out
}

// retryLater hands the releases of value at key that failed in rs to the
// nodes' janitors (see janitor.go).
func (c *Client) retryLater(key, value string, rs []reply) {
	for i, r := range rs {
		if r.err != nil {
			c.nodes[i].janitor.add(key, value, c.ttl)
		}
	}
}

// tally counts the replies that did it, that were refused, and joins the
// errors.
func tally(rs []reply, want []bool) (ok, refused int, err error) {
	var errs []error
	for i, r := range rs {
		if want != nil && !want[i] {
			continue
		}
		switch {
		case r.ok:
			ok++
		case r.err != nil:
			errs = append(errs, r.err)
		default:
			refused++
		}
	}
	return ok, refused, errors.Join(errs...)
}

// newValue returns a random value identifying one holding: 32 hex digits.
func newValue() string {
	var b [16]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand, Go >= 1.24)
	return hex.EncodeToString(b[:])
}

func parseNodeTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Millisecond {
		return 0, fmt.Errorf("%q is not a duration of at least 1ms", v)
	}
	return d, nil
}

func parseNodes(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a non-negative integer", v)
	}
	return n, nil
}
