package etcdlock

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/locklab/locklab/locks"
)

// Name is the lock name registered by this package (contract).
const Name = "etcd-recipe"

// DefaultTTL is the lease TTL used when Config.TTL is 0.
const DefaultTTL = 10 * time.Second

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "locklab"

// DialTimeout bounds the client's dial-time operations and the first
// keep-alive (clientv3.Config.DialTimeout).
const DialTimeout = 5 * time.Second

func init() {
	locks.Register(locks.Spec{
		Name:       Name,
		Renews:     true,
		Backend:    locks.Etcd,
		Standing:   true,
		Summary:    "lease + key under a prefix, lowest create revision wins, watch predecessor",
		Fencing:    true,
		LeaseBased: true,
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return New(ctx, cfg)
		},
	})
}

// TTLSeconds returns the lease TTL for cfg in whole seconds: Config.TTL
// rounded up, at least 1; DefaultTTL when it is 0.
func TTLSeconds(cfg locks.Config) int64 {
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return max(1, int64(math.Ceil(ttl.Seconds())))
}

// Root returns the key prefix for cfg without a trailing slash
// ("locklab/" -> "locklab"); empty means DefaultPrefix.
func Root(prefix string) string {
	p := strings.Trim(prefix, "/")
	if p == "" {
		p = DefaultPrefix
	}
	return p
}

// Dial creates a clientv3.Client for the etcd servers of cfg.Endpoints
// (Table["etcd"], through
// Endpoints.Dial) with DialTimeout, gRPC keep-alive pings (10s, 3s timeout:
// a connection that went silent is noticed) and the library's log at error
// level into cfg.Log(). It logs in with Endpoints.Auth's etcd user and, when
// Auth.EtcdTLS, speaks TLS (CA and client certificate from Auth's files),
// verifying each member's certificate against its real host
// (Endpoints.ServerName), not the proxy it dials. It checks within ctx that
// a member answers a read under Root(cfg.Prefix): wrong or missing
// credentials fail here.
func Dial(ctx context.Context, cfg locks.Config) (*clientv3.Client, error) {
	servers := cfg.Endpoints.Table[string(locks.Etcd)]
	if len(servers) == 0 {
		return nil, errors.New("etcdlock: no etcd endpoints")
	}
	eps := make([]string, len(servers))
	for i, a := range servers {
		eps[i] = cfg.Endpoints.Dial(a)
	}
	ccfg := clientv3.Config{
		Endpoints:            eps,
		DialTimeout:          DialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		Logger:               zap.New(slogCore{l: cfg.Log()}),
		Username:             cfg.Endpoints.Auth.EtcdUsername,
		Password:             cfg.Endpoints.Auth.EtcdPassword,
		// A lock's requests and responses are a few hundred bytes: gRPC's
		// 32 KiB read and write buffers per connection were a quarter of
		// the heap with 1,000 clients.
		DialOptions: []grpc.DialOption{grpc.WithReadBufferSize(4 << 10), grpc.WithWriteBufferSize(4 << 10)},
	}
	var hs *handshakes
	if cfg.Endpoints.Auth.EtcdTLS() {
		tc, err := tlsConfig(cfg.Endpoints.Auth)
		if err != nil {
			return nil, err
		}
		// Given as a dial option, not Config.TLS: clientv3 would verify
		// every member against the address it dials (127.0.0.1).
		hs = &handshakes{bad: make(chan struct{})}
		ccfg.DialOptions = append(ccfg.DialOptions, grpc.WithTransportCredentials(proxiedTLS{
			TransportCredentials: credentials.NewTLS(tc), e: cfg.Endpoints, hs: hs,
		}))
	}
	cli, err := clientv3.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("etcd client %v: %w", eps, err)
	}
	// Client creation does not dial; make sure somebody answers, and that
	// the credentials work: the key is under the locks' prefix, so a user
	// allowed only that prefix passes. clientv3 retries a failed connection
	// until ctx ends, so a certificate failure ends the wait at once, and
	// the last handshake failure is part of the error.
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if hs != nil {
		go func() {
			select {
			case <-hs.bad:
				cancel(hs.failure())
			case <-pctx.Done():
			}
		}()
	}
	if _, err := cli.Get(pctx, Root(cfg.Prefix)+"/", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		if herr := hs.failure(); herr != nil {
			return nil, fmt.Errorf("etcd %v: tls handshake: %w", eps, herr)
		}
		return nil, fmt.Errorf("etcd %v: %w", eps, err)
	}
	return cli, nil
}

// tlsConfig builds the client TLS configuration from a's etcd files.
func tlsConfig(a locks.Auth) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.EtcdCACert != "" {
		pem, err := os.ReadFile(a.EtcdCACert)
		if err != nil {
			return nil, fmt.Errorf("etcdlock: ca certificate: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcdlock: ca certificate %s: no PEM certificate", a.EtcdCACert)
		}
	}
	if a.EtcdCert != "" || a.EtcdKey != "" {
		cert, err := tls.LoadX509KeyPair(a.EtcdCert, a.EtcdKey)
		if err != nil {
			return nil, fmt.Errorf("etcdlock: client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// proxiedTLS is gRPC TLS whose handshake names the member behind the proxy
// a connection goes to (found from the connection's remote address), so
// that one client verifies every member against its own host name.
type proxiedTLS struct {
	credentials.TransportCredentials
	e  locks.Endpoints
	hs *handshakes
}

func (p proxiedTLS) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	addr := authority // gRPC's name for the endpoint: its dialed address
	if p.e.Real(addr) == addr && raw.RemoteAddr() != nil {
		addr = raw.RemoteAddr().String() // not a proxy address as such
	}
	real := p.e.Real(addr)
	conn, info, err := p.TransportCredentials.ClientHandshake(ctx, real, raw)
	if err != nil {
		p.hs.failed(fmt.Errorf("%s: %w", real, err))
	}
	return conn, info, err
}

func (p proxiedTLS) Clone() credentials.TransportCredentials {
	return proxiedTLS{TransportCredentials: p.TransportCredentials.Clone(), e: p.e, hs: p.hs}
}

// handshakes remembers a client's last TLS handshake failure, which gRPC
// would otherwise only retry.
type handshakes struct {
	mu   sync.Mutex
	last error
	bad  chan struct{} // closed at the first certificate failure
}

func (h *handshakes) failed(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = err
	var verify *tls.CertificateVerificationError
	var alert tls.AlertError // the server refused our certificate (TLS 1.2)
	if errors.As(err, &verify) || errors.As(err, &alert) {
		select {
		case <-h.bad:
		default:
			close(h.bad)
		}
	}
}

// failure returns the last handshake failure; nil for a nil h.
func (h *handshakes) failure() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// Client is one harness client: one clientv3.Client shared by its Lockers.
// It implements locks.Client and locks.Stats.
type Client struct {
	cli   *clientv3.Client
	root  string
	ttl   int64
	retry time.Duration
	log   *slog.Logger

	requests, keepalives, watchEvents, leasesLost, localChecks atomic.Int64

	bgCtx    context.Context // ends on Close
	bgCancel context.CancelFunc
	bg       sync.WaitGroup
	closed   atomic.Bool
}

var (
	_ locks.Client = (*Client)(nil)
	_ locks.Stats  = (*Client)(nil)
	_ locks.Locker = (*Locker)(nil)
	_ locks.Lease  = (*lease)(nil)
)

// New connects one client (see Dial); ctx bounds the set-up.
func New(ctx context.Context, cfg locks.Config) (*Client, error) {
	cli, err := Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	bgCtx, cancel := context.WithCancel(context.Background())
	return &Client{
		cli:      cli,
		root:     Root(cfg.Prefix),
		ttl:      TTLSeconds(cfg),
		retry:    cfg.Retry,
		log:      cfg.Log(),
		bgCtx:    bgCtx,
		bgCancel: cancel,
	}, nil
}

// Locker returns the Locker of lock name; its keys are
// <prefix>/<name>/<lease id hex>.
func (c *Client) Locker(name string) locks.Locker {
	return &Locker{c: c, dir: c.root + "/" + strings.Trim(name, "/") + "/"}
}

// Counters implements locks.Stats: requests (RPCs issued by the recipe,
// keep-alives excluded), keepalives, watch_events (events received on
// watches), leases_lost (leases found gone or past their deadline while
// held or waited on), local_checks (re-checks after a deletion answered at
// its revision, without a consensus round).
func (c *Client) Counters() map[string]int64 {
	return map[string]int64{
		"requests":     c.requests.Load(),
		"keepalives":   c.keepalives.Load(),
		"watch_events": c.watchEvents.Load(),
		"leases_lost":  c.leasesLost.Load(),
		"local_checks": c.localChecks.Load(),
	}
}

// Close waits up to a few seconds for background lease revocations, then
// closes the connections. Leases not revoked expire on their own.
func (c *Client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	done := make(chan struct{})
	go func() { c.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(DialTimeout):
	}
	c.bgCancel()
	<-done
	return c.cli.Close()
}

// background runs f with a context that ends on Close.
func (c *Client) background(f func(ctx context.Context)) {
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		f(c.bgCtx)
	}()
}

// slogCore is a zapcore.Core sending error-level entries to slog.
type slogCore struct {
	l      *slog.Logger
	fields []zapcore.Field
}

func (c slogCore) Enabled(l zapcore.Level) bool { return l >= zapcore.ErrorLevel }

func (c slogCore) With(fs []zapcore.Field) zapcore.Core {
	return slogCore{l: c.l, fields: append(append([]zapcore.Field(nil), c.fields...), fs...)}
}

func (c slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fs {
		f.AddTo(enc)
	}
	attrs := []any{"lib", "etcd-client"}
	for k, v := range enc.Fields {
		attrs = append(attrs, k, v)
	}
	c.l.Error(e.Message, attrs...)
	return nil
}

func (c slogCore) Sync() error { return nil }
