package natslock

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/locklab/locklab/locks"
)

// Name is the lock name registered by this package (contract).
const Name = "nats-kv"

// Defaults used when the Config leaves a value at zero.
const (
	DefaultTTL    = 10 * time.Second
	DefaultRetry  = 100 * time.Millisecond
	DefaultPrefix = "locklab"
	// DialTimeout bounds one connection attempt to a server.
	DialTimeout = 5 * time.Second
	// MaxReplicas is the most replicas a JetStream stream may have.
	MaxReplicas = 5
)

// optReplicas is the option naming the bucket's replica count.
const optReplicas = "replicas"

// Client is one harness client's connection to a NATS server or cluster,
// bound to the bucket of its TTL. It is safe for concurrent use.
type Client struct {
	nc     *nats.Conn
	kv     jetstream.KeyValue
	ttl    time.Duration
	retry  time.Duration
	log    *slog.Logger
	rngMu  sync.Mutex
	rng    *rand.Rand
	counts struct{ requests, watchEvents atomic.Int64 }
}

var (
	_ locks.Client = (*Client)(nil)
	_ locks.Stats  = (*Client)(nil)
)

// New connects to cfg.Endpoints.NATS and opens (creating it when missing)
// the bucket of cfg's TTL, within ctx.
func New(ctx context.Context, cfg locks.Config) (*Client, error) {
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	retry := cfg.Retry
	if retry <= 0 {
		retry = DefaultRetry
	}
	replicas, err := replicasOf(cfg)
	if err != nil {
		return nil, err
	}
	nc, err := Connect(cfg.Endpoints, cfg.Seed, cfg.Log())
	if err != nil {
		return nil, err
	}
	c := &Client{nc: nc, ttl: ttl, retry: retry, log: cfg.Log(),
		rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6e617473))}
	c.kv, err = c.openBucket(ctx, BucketName(cfg.Prefix, ttl), replicas)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// Connect returns a connection to the servers of e: every address is
// dialed through e.Dial, tried in order starting from one picked by a hash
// of seed and the addresses (so the clients of a run, each with its own
// proxies, spread over the servers), and a broken connection moves to the
// next. Pings every second, two unanswered, notice a silent link. It logs
// in with e.Auth's NATS user and password or token, when set. A nil log
// discards.
func Connect(e locks.Endpoints, seed int64, log *slog.Logger) (*nats.Conn, error) {
	addrs := Addrs(e)
	if len(addrs) == 0 {
		return nil, errors.New("natslock: no NATS endpoints")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	urls := make([]string, len(addrs))
	// The clients of a run share the seed but not their (proxied)
	// addresses: both pick the first server, so they spread.
	h := fnv.New64a()
	fmt.Fprint(h, seed, addrs)
	first := int(h.Sum64() % uint64(len(addrs)))
	for i := range addrs {
		urls[i] = "nats://" + addrs[(first+i)%len(addrs)]
	}
	opts := []nats.Option{
		nats.Name("locklab"),
		nats.DontRandomize(),
		nats.SetCustomDialer(dialer{e}),
		nats.Timeout(DialTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond),
		nats.ReconnectJitter(0, 0),
		nats.PingInterval(time.Second),
		nats.MaxPingsOutstanding(2),
		nats.NoCallbacksAfterClientClose(),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Debug("nats disconnected", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Debug("nats reconnected", "server", nc.ConnectedUrlRedacted())
		}),
	}
	if user := e.Auth.Get(locks.NATS, locks.CredUser); user != "" {
		opts = append(opts, nats.UserInfo(user, e.Auth.Get(locks.NATS, locks.CredPassword)))
	}
	if token := e.Auth.Get(locks.NATS, locks.CredToken); token != "" {
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect(strings.Join(urls, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("connect nats %v: %w", addrs, err)
	}
	return nc, nil
}

// dialer sends every dial through Endpoints.Dial (the client's proxy for a
// server's real address, when the address is one it discovered).
type dialer struct{ e locks.Endpoints }

func (d dialer) Dial(network, addr string) (net.Conn, error) {
	return net.DialTimeout(network, d.e.Dial(addr), DialTimeout)
}

// bucketAttempt bounds one attempt to open or create the bucket: a
// JetStream API request that reaches a server whose cluster is still
// electing its meta leader or placing the stream may get no reply at all,
// and is sent again rather than waited on until the caller's deadline.
const bucketAttempt = 10 * time.Second

// openBucket opens bucket, creating it (max age ttl, one value per key)
// when it does not exist yet; several clients may race to create it. An
// attempt that gets no reply within bucketAttempt, or finds JetStream not
// ready, is made again until ctx ends.
func (c *Client) openBucket(ctx context.Context, bucket string, replicas int) (jetstream.KeyValue, error) {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, bucketAttempt)
		kv, err := c.tryOpenBucket(actx, js, bucket, replicas)
		cancel()
		if err == nil {
			return kv, nil
		}
		if ctx.Err() != nil || !retryableBucketErr(err) {
			return nil, fmt.Errorf("open bucket %s (attempt %d): %w", bucket, attempt, err)
		}
		c.log.Debug("nats open bucket: trying again", "bucket", bucket, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("open bucket %s (attempt %d): %w", bucket, attempt, err)
		case <-time.After(200 * time.Millisecond): // pause between attempts, not synchronisation
		}
	}
}

// tryOpenBucket is one attempt of openBucket.
func (c *Client) tryOpenBucket(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (jetstream.KeyValue, error) {
	c.counts.requests.Add(1)
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		c.counts.requests.Add(1)
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:   bucket,
			History:  1,
			TTL:      c.ttl,
			Replicas: replicas,
			Storage:  jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			c.counts.requests.Add(1)
			kv, err = js.KeyValue(ctx, bucket)
		}
	}
	return kv, err
}

// retryableBucketErr reports whether an attempt to open a bucket failed
// in a way another attempt may not: no reply in time, no JetStream
// responder yet, or JetStream not (yet) available (an API error with
// status 503, "JetStream system temporarily unavailable" while the meta
// group has no leader).
func retryableBucketErr(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.As(err, &api) && api.Code == 503
}

// replicasOf is the replicas option, or one replica per endpoint (at most
// MaxReplicas).
func replicasOf(cfg locks.Config) (int, error) {
	if v, ok := cfg.Options[optReplicas]; ok {
		return parseReplicas(v)
	}
	return max(1, min(len(Addrs(cfg.Endpoints)), MaxReplicas)), nil
}

// Addrs returns the NATS servers' client addresses in e.
func Addrs(e locks.Endpoints) []string { return e.Table[string(locks.NATS)] }

func parseReplicas(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxReplicas {
		return 0, fmt.Errorf("replicas %q: want a whole number from 1 to %d", v, MaxReplicas)
	}
	return n, nil
}

// BucketName is the bucket of locks with prefix and ttl: the prefix
// (DefaultPrefix when empty) with every character a bucket name cannot
// hold turned into '_', then the TTL in milliseconds ("locklab_10000ms").
func BucketName(prefix string, ttl time.Duration) string {
	p := strings.Map(func(r rune) rune {
		if r < 128 && (r == '-' || r == '_' || isAlnum(byte(r))) {
			return r
		}
		return '_'
	}, strings.Trim(prefix, ":/._"))
	if p == "" {
		p = DefaultPrefix
	}
	return fmt.Sprintf("%s_%dms", p, ttl.Milliseconds())
}

// Key is the KV key of lock name: name with every byte a key cannot hold
// (anything but letters, digits and -/_=) written as =XX; an empty name
// is "=".
func Key(name string) string {
	if name == "" {
		return "="
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if isAlnum(ch) || ch == '-' || ch == '/' || ch == '_' {
			b.WriteByte(ch)
			continue
		}
		fmt.Fprintf(&b, "=%02X", ch)
	}
	return b.String()
}

func isAlnum(ch byte) bool {
	return ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9'
}

// Locker returns the Locker of lock name.
func (c *Client) Locker(name string) locks.Locker {
	return &Locker{c: c, key: Key(name)}
}

// KeyValue is the lock bucket as the client opened it, for a caller
// timing the bare client's own requests on it (package calibrate).
func (c *Client) KeyValue() jetstream.KeyValue { return c.kv }

// Counters reports "requests" (KV and bucket calls sent) and
// "watch_events" (notifications a blocked Acquire received).
func (c *Client) Counters() map[string]int64 {
	return map[string]int64{
		"requests":     c.counts.requests.Load(),
		"watch_events": c.counts.watchEvents.Load(),
	}
}

// Close closes the connection; held keys age out after the TTL.
func (c *Client) Close() error {
	c.nc.Close()
	return nil
}

// backoff is how long a blocked Acquire waits for a notification before
// trying again: Retry, or less when the holder's key ages out sooner,
// less a random part of up to half.
func (c *Client) backoff(left time.Duration) time.Duration {
	d := c.retry
	if left >= 0 && left < d {
		d = left
	}
	if d <= 0 {
		return 0
	}
	c.rngMu.Lock()
	j := c.rng.Int64N(int64(d/2) + 1)
	c.rngMu.Unlock()
	return d - time.Duration(j)
}
