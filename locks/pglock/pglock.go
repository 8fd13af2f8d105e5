// Package pglock holds PostgreSQL advisory locks behind the locks
// interfaces:
//
//   - pg-advisory: a session-level pg_advisory_lock on a dedicated
//     connection, released by pg_advisory_unlock or by the session's end;
//   - pg-advisory-xact: pg_advisory_xact_lock in a transaction kept open
//     through the critical section, released by its commit.
//
// Clients find the writable server as libpq does, by trying every host
// with target_session_attrs=read-write, logged in with Endpoints.Auth's
// postgres credentials when set (user, password, database, sslmode and CA:
// servers the user runs), else as postgres on database postgres. The
// fencing token is nextval of a sequence read after the grant on the same
// session. A session lock lasts until the server notices the session is
// gone: the lease pings its session every Check and promises, from the
// send time of its last answered request, the server's own TCP keepalive
// time (idle + interval × count, read from the server at connect); see
// docs/backends.md.
//
// Of locklab it imports only locks.
package pglock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/locklab/locklab/locks"
)

// Lock names (contract).
const (
	NameSession = "pg-advisory"
	NameXact    = "pg-advisory-xact"
)

// Check is the most time between two pings of a held lock's session.
const Check = time.Second

// sequence is the fencing sequence every lock of a database shares.
const sequence = "locklab_fence"

func init() {
	for _, x := range []struct {
		name, summary string
		xact          bool
	}{
		{NameSession, "PostgreSQL session advisory lock (pg_advisory_lock on a dedicated connection), token from a sequence", false},
		{NameXact, "PostgreSQL transaction advisory lock (pg_advisory_xact_lock, transaction open through the critical section)", true},
	} {
		xact := x.xact
		locks.Register(locks.Spec{
			Name: x.name, Backend: locks.Postgres, Summary: x.summary, Fencing: true, Renews: true, Standing: true,
			Options: []locks.Option{{Name: "user", Default: "postgres", Doc: "the database user the client logs in as"}},
			New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
				return New(ctx, cfg, xact)
			},
		})
	}
}

// Client is one harness client's view of the servers: every Locker dials
// its own connection. Safe for concurrent use.
type Client struct {
	cfg  locks.Config
	conn *pgx.ConnConfig // every host (ConnConfig); copied for each dial
	xact bool

	mu      sync.Mutex
	lockers []*Locker
}

// ConnString is the connection string of the servers in e: every host,
// the writable one chosen at connect (target_session_attrs=read-write).
// It logs in as user, else e.Auth's postgres user, else postgres, with
// e.Auth's password, on e.Auth's database (default postgres), with its
// sslmode (default disable; verify-full when a CA file is set) and CA.
func ConnString(e locks.Endpoints, user string) (string, error) {
	hosts := e.Table[string(locks.Postgres)]
	if len(hosts) == 0 {
		return "", errors.New("pglock: no postgres servers in the endpoints")
	}
	get := func(what locks.CredentialKind, def string) string {
		if v := e.Auth.Get(locks.Postgres, what); v != "" {
			return v
		}
		return def
	}
	if user == "" {
		user = get(locks.CredUser, "postgres")
	}
	login := url.User(user)
	if password := get(locks.CredPassword, ""); password != "" {
		login = url.UserPassword(user, password)
	}
	ca := get(locks.CredCACert, "")
	mode := "disable"
	if ca != "" {
		mode = "verify-full"
	}
	q := url.Values{"sslmode": {get(locks.CredTLSMode, mode)}, "target_session_attrs": {"read-write"}, "connect_timeout": {"5"}}
	if ca != "" {
		q.Set("sslrootcert", ca)
	}
	u := url.URL{Scheme: "postgres", User: login, Host: strings.Join(hosts, ","),
		Path: "/" + get(locks.CredDatabase, "postgres"), RawQuery: q.Encode()}
	return u.String(), nil
}

// ConnConfig is ConnString parsed, with TLS verifying each server's
// certificate against the host of its real address (Endpoints.ServerName),
// not the proxy the client dials.
func ConnConfig(e locks.Endpoints, user string) (*pgx.ConnConfig, error) {
	cs, err := ConnString(e, user)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(cs)
	if err != nil {
		return nil, fmt.Errorf("pglock: connection settings: %w", err)
	}
	serverName := func(host string, port uint16, tc *tls.Config) {
		if tc != nil && tc.ServerName != "" {
			tc.ServerName = e.ServerName(net.JoinHostPort(host, strconv.Itoa(int(port))))
		}
	}
	serverName(cfg.Host, cfg.Port, cfg.TLSConfig)
	for _, f := range cfg.Fallbacks {
		serverName(f.Host, f.Port, f.TLSConfig)
	}
	return cfg, nil
}

// New returns a client of the servers in cfg.Endpoints; xact picks
// pg-advisory-xact. ctx is unused: connections are dialed per Locker.
func New(_ context.Context, cfg locks.Config, xact bool) (*Client, error) {
	cc, err := ConnConfig(cfg.Endpoints, cfg.Options["user"])
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, conn: cc, xact: xact}, nil
}

// Locker returns the lock called name (under the config's prefix).
func (c *Client) Locker(name string) locks.Locker {
	h := fnv.New64a()
	h.Write([]byte(c.cfg.Prefix + name))
	l := &Locker{c: c, key: int64(h.Sum64())}
	c.mu.Lock()
	c.lockers = append(c.lockers, l)
	c.mu.Unlock()
	return l
}

// Close closes the idle connections of every Locker (not those of held
// leases).
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lockers {
		l.closeIdle()
	}
	return nil
}

// Locker is one advisory lock key; its connection is reused between
// leases. One Acquire at a time.
type Locker struct {
	c   *Client
	key int64

	mu    sync.Mutex
	idle  *pgx.Conn
	bound time.Duration // the server's keepalive time of idle
}

var _ locks.Locker = (*Locker)(nil)

func (l *Locker) closeIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle != nil {
		l.idle.Close(context.Background())
		l.idle = nil
	}
}

// take returns the idle connection or a new one and the server's
// keepalive time for it.
func (l *Locker) take(ctx context.Context) (*pgx.Conn, time.Duration, error) {
	l.mu.Lock()
	conn, bound := l.idle, l.bound
	l.idle = nil
	l.mu.Unlock()
	if conn != nil && !conn.IsClosed() {
		return conn, bound, nil
	}
	conn, err := pgx.ConnectConfig(ctx, l.c.conn.Copy())
	if err != nil {
		return nil, 0, fmt.Errorf("pglock: connect: %w", err)
	}
	if bound, err = prepare(ctx, conn); err != nil {
		conn.Close(context.Background())
		return nil, 0, err
	}
	return conn, bound, nil
}

// prepare makes sure the fencing sequence exists and reads the server's
// keepalive settings for this connection: the time after which it drops
// a silent client, idle + interval × count.
func prepare(ctx context.Context, conn *pgx.Conn) (time.Duration, error) {
	if _, err := conn.Exec(ctx, "CREATE SEQUENCE IF NOT EXISTS "+sequence); err != nil {
		var pe *pgconn.PgError
		// Two clients creating it at once: one loses on the catalog's
		// unique index; the sequence exists either way.
		if !errors.As(err, &pe) || (pe.Code != "23505" && pe.Code != "42P07") {
			return 0, fmt.Errorf("pglock: create sequence: %w", err)
		}
	}
	var idle, interval, count int
	err := conn.QueryRow(ctx, `SELECT
		(SELECT setting::int FROM pg_settings WHERE name = 'tcp_keepalives_idle'),
		(SELECT setting::int FROM pg_settings WHERE name = 'tcp_keepalives_interval'),
		(SELECT setting::int FROM pg_settings WHERE name = 'tcp_keepalives_count')`).Scan(&idle, &interval, &count)
	if err != nil {
		return 0, fmt.Errorf("pglock: keepalive settings: %w", err)
	}
	return SessionBound(idle, interval, count), nil
}

// SessionBound is how long a server with these tcp_keepalives_* settings
// (seconds; 0: the system's default, unknown here) takes at least to drop a
// client that stopped answering; 0 when it cannot be said.
func SessionBound(idle, interval, count int) time.Duration {
	if idle <= 0 || interval <= 0 || count <= 0 {
		return 0
	}
	return time.Duration(idle)*time.Second + time.Duration(interval*count)*time.Second
}

func (l *Locker) put(conn *pgx.Conn, bound time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle != nil || conn.IsClosed() {
		conn.Close(context.Background())
		return
	}
	l.idle, l.bound = conn, bound
}

// Acquire blocks in the server (pg_advisory_lock waits for the holder's
// release) until the lock is granted or ctx ends; a canceled wait closes
// its connection, which ends the session and with it any grant.
func (l *Locker) Acquire(ctx context.Context) (locks.Lease, error) {
	conn, bound, err := l.take(ctx)
	if err != nil {
		return nil, err
	}
	sent := time.Now()
	if err := l.lock(ctx, conn); err != nil {
		conn.Close(context.Background())
		if ctx.Err() != nil {
			return nil, fmt.Errorf("pglock: acquire: %w", errors.Join(ctx.Err(), err))
		}
		return nil, fmt.Errorf("pglock: acquire: %w", err)
	}
	var token int64
	if err := conn.QueryRow(ctx, "SELECT nextval('"+sequence+"')").Scan(&token); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("pglock: token: %w", err)
	}
	return locks.StartSessionLease("pglock", &session{l: l, conn: conn, bound: bound}, uint64(token), sent, bound, Check), nil
}

func (l *Locker) lock(ctx context.Context, conn *pgx.Conn) error {
	if !l.c.xact {
		_, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", l.key)
		return err
	}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", l.key)
	return err
}

// session is the connection that took the lock; a locks.SessionLease
// pings it every Check.
type session struct {
	l     *Locker
	conn  *pgx.Conn
	bound time.Duration // the server's keepalive time, kept with conn for its next lease
}

// Ping asks the session for an answer.
func (s *session) Ping(ctx context.Context) error {
	_, err := s.conn.Exec(ctx, "SELECT 1")
	return err
}

// Unlock unlocks (pg_advisory_unlock, or COMMIT for pg-advisory-xact) and
// keeps the connection for the Locker's next Acquire; held false when the
// server says the lock was not held.
func (s *session) Unlock(ctx context.Context) (held bool, err error) {
	held = true
	if s.l.c.xact {
		_, err = s.conn.Exec(ctx, "COMMIT")
	} else {
		err = s.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", s.l.key).Scan(&held)
	}
	if err != nil {
		return false, err
	}
	s.l.put(s.conn, s.bound)
	return held, nil
}

// Drop closes the connection, which ends the session.
func (s *session) Drop() { s.conn.Close(context.Background()) }
