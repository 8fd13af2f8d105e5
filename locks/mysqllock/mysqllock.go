// Package mysqllock holds MariaDB's (and MySQL's) named locks behind the
// locks interfaces: mariadb-get-lock takes GET_LOCK(name, timeout) on a
// dedicated connection and gives it back by RELEASE_LOCK or by the
// session's end. The fencing token is an AUTO_INCREMENT value inserted
// after the grant on the same session; the client logs in with
// Endpoints.Auth's mariadb user and password when set, else as root. Like
// a PostgreSQL session lock it lasts until the server notices the session
// is gone: the lease checks every Check that its session still holds the
// lock and promises, from the send time of its last answered check, the
// server's own TCP keepalive time (tcp_keepalive_time + interval × probes,
// read at connect); see docs/backends.md.
//
// Of locklab it imports only locks.
package mysqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/locklab/locklab/locks"
)

// Name is the lock's name (contract).
const Name = "mariadb-get-lock"

// Check is the most time between two checks of a held lock's session.
const Check = time.Second

// wait is how long one GET_LOCK waits in the server before the client
// looks at its context again.
const wait = 1

func init() {
	locks.Register(locks.Spec{
		Name: Name, Backend: locks.MariaDB, Fencing: true, Renews: true, Standing: true,
		Summary: "MariaDB GET_LOCK on a dedicated connection, token from an AUTO_INCREMENT insert",
		Options: []locks.Option{{Name: "user", Default: "root", Doc: "the database user the client logs in as"}},
		New: func(ctx context.Context, cfg locks.Config) (locks.Client, error) {
			return New(ctx, cfg)
		},
	})
}

// Client is one harness client's connection pool to the server; every
// held lock has a connection of its own. Safe for concurrent use.
type Client struct {
	cfg locks.Config
	db  *sql.DB
}

// DSN is the go-sql-driver/mysql data source name of the first server in
// e.Table["mariadb"], logged in as user, else e.Auth's mariadb user, else
// root, with e.Auth's mariadb password.
func DSN(e locks.Endpoints, user string) (string, error) {
	addrs := e.Table[string(locks.MariaDB)]
	if len(addrs) == 0 {
		return "", errors.New("mysqllock: no mariadb servers in the endpoints")
	}
	if user == "" {
		user = e.Auth.Get(locks.MariaDB, locks.CredUser)
	}
	if user == "" {
		user = "root"
	}
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr = user, e.Auth.Get(locks.MariaDB, locks.CredPassword), "tcp", addrs[0]
	mc.Timeout = 5 * time.Second
	return mc.FormatDSN(), nil
}

// New opens a pool to the first server in cfg.Endpoints.Table["mariadb"],
// logs in (DSN) and creates the fencing table (database locklab) when
// missing.
func New(ctx context.Context, cfg locks.Config) (*Client, error) {
	dsn, err := DSN(cfg.Endpoints, cfg.Options["user"])
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("mysqllock: %w", err)
	}
	db.SetMaxIdleConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("mysqllock: connect to %s: %w", cfg.Endpoints.Table[string(locks.MariaDB)][0], err)
	}
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS locklab",
		"CREATE TABLE IF NOT EXISTS locklab.fence (id BIGINT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return nil, fmt.Errorf("mysqllock: %s: %w", q, err)
		}
	}
	return &Client{cfg: cfg, db: db}, nil
}

// Locker returns the lock called name under the config's prefix (hashed
// when longer than the server's 64 characters).
func (c *Client) Locker(name string) locks.Locker {
	n := c.cfg.Prefix + name
	if len(n) > 64 {
		h := fnv.New64a()
		h.Write([]byte(n))
		n = fmt.Sprintf("locklab:%x", h.Sum64())
	}
	return &Locker{c: c, name: n}
}

// Close closes the pool (held locks' connections end with their release).
func (c *Client) Close() error { return c.db.Close() }

// Locker is one named lock. Acquire may be called by one goroutine at a
// time.
type Locker struct {
	c    *Client
	name string
}

var _ locks.Locker = (*Locker)(nil)

// Acquire waits in the server (GET_LOCK wakes when the holder releases),
// a second at a time so that ctx is looked at, until the lock is granted.
func (l *Locker) Acquire(ctx context.Context) (locks.Lease, error) {
	conn, err := l.c.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("mysqllock: connect: %w", err)
	}
	var idle, interval, probes int
	if err := conn.QueryRowContext(ctx, "SELECT @@tcp_keepalive_time, @@tcp_keepalive_interval, @@tcp_keepalive_probes").
		Scan(&idle, &interval, &probes); err != nil {
		conn.Close()
		return nil, fmt.Errorf("mysqllock: keepalive settings: %w", err)
	}
	sent := time.Now()
	for {
		var got sql.NullInt64
		sent = time.Now()
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", l.name, wait).Scan(&got); err != nil {
			discard(conn)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("mysqllock: acquire: %w", errors.Join(ctx.Err(), err))
			}
			return nil, fmt.Errorf("mysqllock: acquire: %w", err)
		}
		if got.Valid && got.Int64 == 1 {
			break
		}
		if err := ctx.Err(); err != nil {
			conn.Close()
			return nil, fmt.Errorf("mysqllock: acquire: %w", err)
		}
	}
	res, err := conn.ExecContext(ctx, "INSERT INTO locklab.fence () VALUES ()")
	var token int64
	if err == nil {
		token, err = res.LastInsertId()
	}
	if err != nil {
		discard(conn)
		return nil, fmt.Errorf("mysqllock: token: %w", err)
	}
	bound := SessionBound(idle, interval, probes)
	return locks.StartSessionLease("mysqllock", &session{l: l, conn: conn}, uint64(token), sent, bound, Check), nil
}

// discard closes conn's session for good (not back to the pool), which
// releases every lock it held.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(dc any) error {
		if c, ok := dc.(interface{ Close() error }); ok {
			c.Close()
		}
		return nil
	})
	conn.Close()
}

// SessionBound is how long a server with these tcp_keepalive_* settings
// (seconds; 0: the system's default, unknown here) takes at least to drop
// a client that stopped answering; 0 when it cannot be said.
func SessionBound(idle, interval, probes int) time.Duration {
	if idle <= 0 || interval <= 0 || probes <= 0 {
		return 0
	}
	return time.Duration(idle)*time.Second + time.Duration(interval*probes)*time.Second
}

// session is the connection that took the lock; a locks.SessionLease
// checks it every Check.
type session struct {
	l    *Locker
	conn *sql.Conn
}

// Ping fails when the session no longer holds the lock.
func (s *session) Ping(ctx context.Context) error {
	var mine sql.NullBool
	if err := s.conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", s.l.name).Scan(&mine); err != nil {
		return err
	}
	if !mine.Valid || !mine.Bool {
		return errors.New("lock not held by the session")
	}
	return nil
}

// Unlock gives the lock back (RELEASE_LOCK), and the connection to the
// pool; held false when the server says the lock was not this session's.
func (s *session) Unlock(ctx context.Context) (held bool, err error) {
	var got sql.NullInt64
	if err := s.conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", s.l.name).Scan(&got); err != nil {
		return false, err
	}
	s.conn.Close()
	return got.Valid && got.Int64 == 1, nil
}

// Drop closes the session for good (discard).
func (s *session) Drop() { discard(s.conn) }
