package redislock

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/locklab/locklab/locks"
)

// Variant names one of the package's algorithms; its value is the lock's
// contract name.
type Variant string

// The variants, see the package documentation.
const (
	SetNXExpire Variant = "redis-setnx-expire"
	SetDel      Variant = "redis-set-del"
	CAD         Variant = "redis-cad"
	Watchdog    Variant = "redis-watchdog"
	Reentrant   Variant = "redis-reentrant"
)

const (
	// DefaultTTL is the key's time to live when Config.TTL is 0.
	DefaultTTL = 10 * time.Second
	// DefaultRetry is the polling variants' longest wait between attempts
	// when Config.Retry is 0. 10ms keeps the hand-off delay (about half of
	// it on average) small next to critical sections of milliseconds and
	// more, while one waiter costs at most ~100 requests/s: 64 waiters stay
	// near 6k/s, a tenth of what one Redis serves on loopback.
	DefaultRetry = 10 * time.Millisecond
	// DefaultNotifyRetry is redis-reentrant's longest wait between attempts
	// when Config.Retry is 0. Waiters wake on the release message and on the
	// key's PTTL (a dead holder's key expires without a message), so polling
	// only covers messages lost while the pub/sub connection reconnects.
	DefaultNotifyRetry = time.Second
	// DefaultPrefix is the key prefix when Config.Prefix is empty.
	DefaultPrefix = "locklab:"
)

// Client is one harness client's connection to Redis, handing out Lockers
// of one variant. It is safe for concurrent use; Close releases its
// connections (not the locks).
type Client struct {
	variant Variant
	rdb     RedisClient
	// conn is the connection New made, closed by Close; nil when the
	// caller handed NewClient its own.
	conn redis.UniversalClient
	// hashTag wraps every key in {}: on a Redis Cluster all the keys of
	// one lock name (the key, its fence, queue, timeouts) then hash to
	// one slot, as the multi-key scripts need.
	hashTag bool
	log     *slog.Logger

	ttl          time.Duration
	retry        time.Duration
	prefix       string
	waitReplicas int
	waitTimeout  time.Duration
	permits      int // a semaphore's permits

	rngMu sync.Mutex
	rng   *rand.Rand

	requests      atomic.Int64
	notifications atomic.Int64

	subOnce sync.Once
	sub     *subscriber // redis-reentrant's waiters, started on first wait
}

var (
	_ locks.Client = (*Client)(nil)
	_ locks.Stats  = (*Client)(nil)
)

// New connects a client of variant v with cfg: the registry's
// constructor. cfg.Options are the scenario's options (wait_replicas and
// wait_timeout, for redis-cad and redis-watchdog only); see Connect for
// the connection. ctx bounds the connection set-up only.
func New(ctx context.Context, v Variant, cfg locks.Config) (*Client, error) {
	spec := locks.Spec{Name: string(v), Options: optionsOf(v)}
	if err := spec.CheckOptions(cfg.Options); err != nil {
		return nil, err
	}
	permits := locks.Permits(cfg.Options)
	n, timeout, err := parseWait(cfg.Options)
	if err != nil {
		return nil, err
	}
	if n > 0 && cfg.Endpoints.RedisCluster {
		// WAIT counts the acks of its own connection's writes; a cluster
		// client sends it on a connection of its choosing.
		return nil, fmt.Errorf("redislock: %s: not supported on a Redis Cluster", optWaitReplicas)
	}
	opts := []Option{WithRetry(cfg.Retry), WithPrefix(cfg.Prefix), WithSeed(cfg.Seed),
		WithLogger(cfg.Log().With("lock", string(v))), WithWaitReplicas(n, timeout), WithPermits(permits)}
	if cfg.TTL != 0 {
		opts = append(opts, WithTTL(cfg.TTL))
	}
	if err := checkOptions(v, opts); err != nil {
		return nil, err
	}
	rdb, err := ConnectUniversal(ctx, cfg.Endpoints, 0)
	if err != nil {
		return nil, err
	}
	// Both of ConnectUniversal's clients, *redis.Client and
	// *redis.ClusterClient, are RedisClients.
	c, err := NewClient(rdb.(RedisClient), v, opts...)
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	c.conn = rdb
	CountCommands(rdb, &c.requests)
	return c, nil
}

// checkOptions applies opts to a throwaway client so that New reports a
// bad option before it connects.
func checkOptions(v Variant, opts []Option) error {
	_, err := NewClient(nil, v, opts...)
	return err
}

// NewClient returns a client of variant v over rdb, which the caller owns
// (Close does not close it). Its "requests" counter stays 0 unless the
// caller counts commands into it (New does, with CountCommands). Over a
// *redis.ClusterClient every key is hash-tagged ("{prefix+name}",
// "{prefix+name}:fence", ...), so one lock's keys share a slot.
func NewClient(rdb RedisClient, v Variant, opts ...Option) (*Client, error) {
	switch v {
	case SetNXExpire, SetDel, CAD, Watchdog, Reentrant, RW, RWNaive, Fair, Semaphore, SemaphoreLeaky:
	default:
		return nil, fmt.Errorf("redislock: unknown variant %q", v)
	}
	c := &Client{
		variant:     v,
		rdb:         rdb,
		log:         slog.New(slog.DiscardHandler),
		ttl:         DefaultTTL,
		retry:       DefaultRetry,
		prefix:      DefaultPrefix,
		waitTimeout: defaultWaitTimeout,
		rng:         newRand(0),
		permits:     locks.DefaultPermits,
	}
	_, c.hashTag = rdb.(*redis.ClusterClient)
	if notifying(v) {
		c.retry = DefaultNotifyRetry
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// newRand is the retry jitter's source for seed.
func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x6c6f636b6c6162)) // "locklab"
}

// Locker returns a *Locker for the lock name, keyed Prefix+name. Every call
// returns a new Locker; for redis-reentrant each Locker is its own owner.
func (c *Client) Locker(name string) locks.Locker {
	key := c.prefix + name
	if c.hashTag {
		key = "{" + key + "}"
	}
	l := &Locker{c: c, key: key, fence: key + ":fence", channel: key + ":channel"}
	if c.variant == Reentrant {
		l.owner = newOwner()
	}
	if kindOf(c.variant) == locks.KindRW {
		return RWLocker{l}
	}
	return l
}

// Close closes the client's connections. Held locks stay in Redis until
// they expire; a running watchdog stops renewing once its calls fail.
func (c *Client) Close() error {
	// After this no subscriber starts, and one started before is visible.
	c.subOnce.Do(func() {})
	var err error
	if c.sub != nil {
		err = c.sub.close()
	}
	if c.conn != nil {
		err = errors.Join(err, c.conn.Close())
	}
	return err
}

// Counters implements locks.Stats: "requests" counts the commands sent
// (scripts included; the pub/sub connection's SUBSCRIBE is not), and
// "notifications" the pub/sub release messages received.
func (c *Client) Counters() map[string]int64 {
	return map[string]int64{
		"requests":      c.requests.Load(),
		"notifications": c.notifications.Load(),
	}
}

// backoff returns how long a blocked acquirer sleeps before its next attempt
// given the key's remaining PTTL (negative: none or unknown): uniformly in
// [d/2, d] with d = min(Retry, pttl), so contending clients drift apart and
// a waiter comes back about when the key expires, never later than Retry.
func (c *Client) backoff(pttl time.Duration) time.Duration {
	d := c.retry
	if pttl >= 0 && pttl < d {
		d = pttl
	}
	if d <= 0 {
		return 0
	}
	c.rngMu.Lock()
	j := c.rng.Int64N(int64(d/2) + 1)
	c.rngMu.Unlock()
	return d - time.Duration(j)
}

// Connect returns a go-redis client for primary i of e with the settings
// every locklab Redis client shares: context deadlines honoured on socket
// I/O, no command retries (a retried SET NX could take the lock twice or
// hide the failure from the harness), a small pool. With e.Sentinels it is a
// failover client for e.MasterNames[i] whose every dial, to Sentinels and
// to the addresses they report, goes through e.Dial. It logs in with
// e.Auth (Sentinels with the same user and password) and, with
// Auth.RedisTLS, speaks TLS on every connection, verifying the server's
// certificate against its real host (Endpoints.ServerName), not the proxy
// it dials. It pings the server within ctx: wrong or missing credentials
// fail here.
func Connect(ctx context.Context, e locks.Endpoints, i int) (*redis.Client, error) {
	o, err := options(e)
	if err != nil {
		return nil, err
	}
	var where string
	if len(e.Sentinels) > 0 {
		if i >= len(e.MasterNames) || e.MasterNames[i] == "" {
			return nil, fmt.Errorf("redislock: no master name for primary %d (have %d)", i, len(e.MasterNames))
		}
		where = "master " + e.MasterNames[i]
		o.MasterName, o.Addrs = e.MasterNames[i], e.Sentinels
		o.SentinelUsername, o.SentinelPassword = e.Auth.RedisUsername, e.Auth.RedisPassword
	} else {
		if i >= len(e.Redis) {
			return nil, fmt.Errorf("redislock: no address for primary %d (have %d)", i, len(e.Redis))
		}
		where = e.Redis[i]
		o.Addrs = []string{e.Redis[i]}
	}
	// One address or a master name: a plain client, or one that follows
	// Sentinel's failovers (never a cluster client).
	rdb := redis.NewUniversalClient(o).(*redis.Client)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("connect %s: %w", where, err)
	}
	return rdb, nil
}

// options are the client settings of Connect and ConnectUniversal, every
// dial through e.Dial (dialer); the caller sets the addresses.
func options(e locks.Endpoints) (*redis.UniversalOptions, error) {
	quietOnce.Do(func() { redis.SetLogger(&logging.VoidLogger{}) })
	dial, err := dialer(e)
	if err != nil {
		return nil, err
	}
	return &redis.UniversalOptions{
		Username:              e.Auth.RedisUsername,
		Password:              e.Auth.RedisPassword,
		Dialer:                dial,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		PoolSize:              poolSize,
		ReadBufferSize:        connBuffer,
		WriteBufferSize:       connBuffer,
		Protocol:              protocol,
		DisableIdentity:       true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}, nil
}

// ConnectUniversal is Connect, except on a Redis Cluster
// (e.RedisCluster): then a cluster client seeded with every address of
// e.Redis (i is ignored), with Connect's settings, whose every dial (the
// seeds and each node the cluster announces in its slot map and
// redirects) goes through e.Dial, so a client reaches each node through
// its own proxied link. It pings the cluster within ctx.
func ConnectUniversal(ctx context.Context, e locks.Endpoints, i int) (redis.UniversalClient, error) {
	if !e.RedisCluster {
		return Connect(ctx, e, i)
	}
	if len(e.Redis) == 0 {
		return nil, errors.New("redislock: no Redis Cluster address")
	}
	o, err := options(e)
	if err != nil {
		return nil, err
	}
	o.Addrs = e.Redis
	co := o.Cluster()
	// go-redis reloads the slot map on a MOVED reply and every
	// ClusterStateReloadInterval (default 60 s); a killed primary answers
	// no MOVED, so the default leaves its slots unreachable for a minute
	// after the cluster promoted its replica. 1 s follows a failover
	// about as soon as clients that refresh the map on a connection error
	// (Jedis, redis-py) do.
	co.ClusterStateReloadInterval = time.Second
	rdb := redis.NewClusterClient(co)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("connect redis cluster %v: %w", e.Redis, err)
	}
	return rdb, nil
}

// dialer returns Connect's dial function: TCP to e.Dial(addr), then, with
// Auth.RedisTLS, a TLS handshake naming the real server. go-redis applies
// its own TLSConfig only when it dials itself, so the handshake is ours.
func dialer(e locks.Endpoints) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	var d net.Dialer
	if !e.Auth.RedisTLS {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, e.Dial(addr))
		}, nil
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12}
	if e.Auth.RedisCACert != "" {
		pem, err := os.ReadFile(e.Auth.RedisCACert)
		if err != nil {
			return nil, fmt.Errorf("redislock: ca certificate: %w", err)
		}
		base.RootCAs = x509.NewCertPool()
		if !base.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redislock: ca certificate %s: no PEM certificate", e.Auth.RedisCACert)
		}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := d.DialContext(ctx, network, e.Dial(addr))
		if err != nil {
			return nil, err
		}
		cfg := base.Clone()
		cfg.ServerName = e.ServerName(addr)
		conn := tls.Client(raw, cfg)
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("tls %s: %w", e.Real(addr), err)
		}
		return conn, nil
	}, nil
}

// poolSize covers one acquire, one release and a few watchdog renewals at
// once; a harness client holds a handful of locks at most.
const poolSize = 8

// protocol is RESP2: the locks need nothing of RESP3, and go-redis checks
// a RESP3 connection for pending push notifications before every command,
// a read system call that cost a fifth of the harness's CPU at 1,000
// clients. Pub/sub (redis-reentrant) has its own connection either way.
const protocol = 2

// connBuffer is each connection's read and write buffer: the lock commands
// and their replies are a few hundred bytes, and go-redis's default (32 KiB
// each way) made buffers most of a harness client's memory at 1,000 clients.
// A longer reply still reads correctly (go-redis reads bulk strings and
// lines past a full buffer), only with more system calls.
const connBuffer = 4 << 10

var quietOnce sync.Once

// CountCommands makes rdb count every command it sends into n (pipelines
// count each command): the "requests" counter of the Redis locks' Stats.
func CountCommands(rdb redis.UniversalClient, n *atomic.Int64) { rdb.AddHook(countHook{n}) }

// countHook counts the commands a client sends.
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// newOwner returns a random owner id: 32 hex digits.
func newOwner() string {
	var b [16]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand, Go >= 1.24)
	return hex.EncodeToString(b[:])
}

// Option names, see Spec.Options in register.go.
const (
	optWaitReplicas = "wait_replicas"
	optWaitTimeout  = "wait_timeout"
)

// defaultWaitTimeout is wait_timeout's default.
const defaultWaitTimeout = 100 * time.Millisecond

// parseWait reads the wait_replicas and wait_timeout options.
func parseWait(opts map[string]string) (int, time.Duration, error) {
	n, timeout := 0, defaultWaitTimeout
	var err error
	if v, ok := opts[optWaitReplicas]; ok {
		if n, err = parseReplicas(v); err != nil {
			return 0, 0, fmt.Errorf("redislock: %s: %w", optWaitReplicas, err)
		}
	}
	if v, ok := opts[optWaitTimeout]; ok {
		if timeout, err = parseWaitTimeout(v); err != nil {
			return 0, 0, fmt.Errorf("redislock: %s: %w", optWaitTimeout, err)
		}
	}
	return n, timeout, nil
}

func parseReplicas(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a non-negative integer", v)
	}
	return n, nil
}

func parseWaitTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Millisecond {
		// WAIT's timeout 0 would block forever.
		return 0, fmt.Errorf("%q is not a duration of at least 1ms", v)
	}
	return d, nil
}
