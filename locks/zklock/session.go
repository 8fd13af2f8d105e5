package zklock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/locks"
)

// DefaultSessionTimeout is the session timeout requested when neither the
// session_timeout option nor Config.TTL is set.
const DefaultSessionTimeout = 10 * time.Second

// Session is one ZooKeeper connection (one zk.Conn and the session it
// carries) shared by every Locker of a Client. It follows the connection's
// state so that leases learn when they can no longer be sure they hold their
// lock, and counts the traffic its users report.
//
// go-zookeeper keeps a Conn alive across disconnections and, after a session
// expired, silently starts a new session on the same Conn. Session therefore
// keeps an epoch that increases every time the connection leaves the
// has-session state (a disconnection, Curator's SUSPENDED, or an expiry):
// a lock whose ownership was established in an older epoch may have been
// lost in between.
type Session struct {
	conn *zk.Conn
	log  *slog.Logger
	acl  []zk.ACL // of every node the session creates

	timeout time.Duration // as requested (see Promise)

	mu        sync.Mutex
	okSent    time.Time            // send time of the current epoch's last successful request
	ended     map[uint64]time.Time // promise end of each ended epoch
	epoch     uint64
	connected bool
	up        chan struct{} // closed while connected; replaced on loss
	tracked   map[*tracker]struct{}

	requests    atomic.Int64
	watchEvents atomic.Int64
	losses      atomic.Int64
	expiries    atomic.Int64

	ctx      context.Context // ends on Close; bounds background clean-ups
	cancel   context.CancelFunc
	cleanups sync.WaitGroup
}

// tracker is one lease's loss signal.
type tracker struct {
	lost chan struct{}
}

// SessionTimeout returns the session timeout a Config asks for: the
// session_timeout option, else Config.TTL, else DefaultSessionTimeout. The
// server clamps it to [2, 20] times its tickTime.
func SessionTimeout(cfg locks.Config) (time.Duration, error) {
	if v := cfg.Options[OptSessionTimeout]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", OptSessionTimeout, err)
		}
		if d <= 0 {
			return 0, fmt.Errorf("%s: must be positive, got %s", OptSessionTimeout, v)
		}
		return d, nil
	}
	if cfg.TTL > 0 {
		return cfg.TTL, nil
	}
	return DefaultSessionTimeout, nil
}

// Dial connects to the ensemble in cfg.Endpoints (Table["zookeeper"]) and
// waits, within ctx, until a session is established. The library's log
// lines go to cfg.Log() at debug level.
//
// With Endpoints.Auth.ZooKeeperDigest ("user:password") the session adds
// that digest identity before Dial returns (the library sends it again on
// every reconnection, before any queued request), and every node the
// session creates (ACL) is accessible to that identity only: another
// identity can neither delete a holder's node nor queue behind it.
// ZooKeeper accepts any digest, so a wrong password shows later, as
// zk.ErrNoAuth on nodes created under the right one.
func Dial(ctx context.Context, cfg locks.Config) (*Session, error) {
	members := cfg.Endpoints.Table[string(locks.ZooKeeper)]
	if len(members) == 0 {
		return nil, errors.New("zklock: no zookeeper endpoints")
	}
	timeout, err := SessionTimeout(cfg)
	if err != nil {
		return nil, err
	}
	s := &Session{
		log:     cfg.Log(),
		acl:     zk.WorldACL(zk.PermAll),
		up:      make(chan struct{}),
		tracked: map[*tracker]struct{}{},
		timeout: timeout,
		okSent:  time.Now(),
		ended:   map[uint64]time.Time{},
	}
	user, password, digest := cfg.Endpoints.Auth.ZooKeeperUser()
	if digest {
		s.acl = zk.DigestACL(zk.PermAll, user, password)
	}
	servers := make([]string, len(members))
	for i, a := range members {
		servers[i] = cfg.Endpoints.Dial(a)
	}
	conn, events, err := zk.Connect(servers, timeout,
		zk.WithLogger(zkLogger{s.log}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(s.onEvent),
		zk.WithMaxBufferSize(maxRecvBuffer),
		zk.WithMaxConnBufferSize(sendBuffer),
	)
	if err != nil {
		return nil, fmt.Errorf("connect zookeeper: %w", err)
	}
	// The event channel is buffered and dropped into when full; the callback
	// sees every event, so drain it only to let it be collected.
	go func() {
		for range events {
		}
	}()
	s.conn = conn
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.background(s.heartbeat)
	select {
	case <-s.Up():
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("zookeeper session %v: %w", servers, ctx.Err())
	}
	if digest {
		err := s.call(ctx, func() error {
			return conn.AddAuth("digest", []byte(cfg.Endpoints.Auth.ZooKeeperDigest))
		})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("zookeeper digest auth as %s: %w", user, err)
		}
	}
	return s, nil
}

// ACL returns the ACL of the nodes the session creates: digest ACL for the
// session's identity with Auth.ZooKeeperDigest, world:anyone otherwise
// (all permissions either way).
func (s *Session) ACL() []zk.ACL { return s.acl }

// Conn returns the underlying connection.
func (s *Session) Conn() *zk.Conn { return s.conn }

// Close closes the connection (ephemeral nodes of the session go with it)
// and waits for background clean-ups, which then fail fast.
func (s *Session) Close() {
	s.cancel()
	s.conn.Close()
	s.cleanups.Wait()
}

// onEvent runs on the library's goroutines for every event; it must not
// block.
func (s *Session) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		if ev.Type != zk.EventNotWatching {
			s.watchEvents.Add(1)
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.State == zk.StateExpired {
		s.expiries.Add(1)
	}
	if ev.State == zk.StateHasSession {
		if !s.connected {
			s.connected = true
			close(s.up)
		}
		return
	}
	if !s.connected && ev.State != zk.StateExpired {
		return
	}
	// Any other state after having a session means we can no longer be sure
	// (Curator: SUSPENDED or LOST). An expiry always ends an epoch, even when
	// the disconnection already did.
	if s.connected {
		s.connected = false
		s.up = make(chan struct{})
	}
	s.ended[s.epoch] = s.okSent.Add(s.timeout)
	s.epoch++
	s.losses.Add(1)
	for t := range s.tracked {
		close(t.lost)
	}
	clear(s.tracked)
}

// Epoch returns the current epoch; it increases on every loss of the
// session state (disconnection or expiry).
func (s *Session) Epoch() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// Up returns a channel closed while the connection has a session.
func (s *Session) Up() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}

// Track returns a channel closed at the next loss of the session state, and
// a function that stops tracking (it never closes the channel). When the
// epoch already moved past epoch, or the connection is down now, the channel
// is closed at once: ownership established in epoch cannot be trusted.
func (s *Session) Track(epoch uint64) (lost <-chan struct{}, untrack func()) {
	t := &tracker{lost: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != epoch || !s.connected {
		close(t.lost)
		return t.lost, func() {}
	}
	s.tracked[t] = struct{}{}
	return t.lost, func() {
		s.mu.Lock()
		delete(s.tracked, t)
		s.mu.Unlock()
	}
}

// waitUp blocks until the connection has a session again or ctx ends.
func (s *Session) waitUp(ctx context.Context) error {
	select {
	case <-s.Up():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Counters implements locks.Stats: requests (ZooKeeper operations issued by
// the lock recipes), watch_events (watch notifications received),
// session_losses (disconnections and expiries), session_expiries.
func (s *Session) Counters() map[string]int64 {
	return map[string]int64{
		"requests":         s.requests.Load(),
		"watch_events":     s.watchEvents.Load(),
		"session_losses":   s.losses.Load(),
		"session_expiries": s.expiries.Load(),
	}
}

// call runs one ZooKeeper operation, counted as a request. go-zookeeper's
// operations take no context and may block for several seconds while the
// connection is down, so call returns ctx.Err() when ctx ends first and lets
// the operation finish on its own; op must then not touch state the caller
// reads afterwards.
func (s *Session) call(ctx context.Context, op func() error) error {
	s.requests.Add(1)
	op = s.noting(op)
	if ctx.Done() == nil {
		return op()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// read runs op, a read (idempotent), through call again after each lost
// connection once the session is back, until ctx ends.
func (s *Session) read(ctx context.Context, op func() error) error {
	for {
		err := s.call(ctx, op)
		if !connLoss(err) {
			return err
		}
		if err := s.waitUp(ctx); err != nil {
			return err
		}
	}
}

// retryDelete runs del, a delete of one of our ephemeral nodes, again each
// time a lost connection cut it short, once the session is back, until ctx
// ends: as Curator's guaranteed delete. It returns whether a retry ran in
// the same session as the first attempt, and del's last error. After such
// a retry a node found gone (or someone else's) was removed by our own
// earlier attempt: an ephemeral node of a live session goes only by a
// delete.
func (s *Session) retryDelete(ctx context.Context, del func() error) (sameSessionRetry bool, err error) {
	sid, retried := s.conn.SessionID(), false
	for {
		err = del()
		if !connLoss(err) || ctx.Err() != nil || s.waitUp(ctx) != nil {
			return retried && s.conn.SessionID() == sid, err
		}
		retried = true
	}
}

// Background runs f (clean-up after an abandoned acquisition) without a
// caller; Close waits for it, after closing the connection.
func (s *Session) Background(f func()) { s.background(f) }

func (s *Session) background(f func()) {
	s.cleanups.Add(1)
	go func() {
		defer s.cleanups.Done()
		f()
	}()
}

// create is Conn.Create run like call, except that when ctx ends before the
// reply, abandon runs in the background once the request has finished: a
// node created after the caller gave up must be removed, not left in the
// queue (or holding the lock) until the session ends.
func (s *Session) create(ctx context.Context, path string, data []byte, flags int32, abandon func()) (string, error) {
	s.requests.Add(1)
	if err := ctx.Err(); err != nil {
		return "", err
	}
	type result struct {
		path string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		p, err := s.conn.Create(path, data, flags, s.acl)
		done <- result{p, err}
	}()
	select {
	case r := <-done:
		return r.path, r.err
	case <-ctx.Done():
		s.background(func() {
			<-done
			abandon()
		})
		return "", ctx.Err()
	}
}

// removeNode deletes path (any version), waiting for the session to come
// back when needed, until it is gone or the session is closed. Used for
// nodes whose path is unique to one holding (zk-recipe).
func (s *Session) removeNode(path string) {
	s.retryBackground("delete "+path, func(ctx context.Context) error {
		err := s.call(ctx, func() error { return s.conn.Delete(path, -1) })
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
}

// Guarantee runs op, a clean-up of one of the session's own nodes through
// code that takes no context (a library's Unlock), in the background: again
// each time a lost connection cut it short, once the session is back, until
// it returns anything else or the session is closed (Close waits for it).
// This is Curator's guaranteed delete for a node whose path only the
// library knows: a delete whose reply was lost may not have been applied,
// and the node of a session that survives the loss stays in the lock's
// queue, blocking every later waiter, until that session ends — which for
// a client that goes on working is never. The channel receives op's last
// error (zk.ErrClosing when it never ran because the session was closed).
func (s *Session) Guarantee(what string, op func() error) <-chan error {
	res := make(chan error, 1)
	s.background(func() {
		last := zk.ErrClosing
		s.retryBackground(what, func(context.Context) error {
			last = op()
			if errors.Is(last, zk.ErrNoNode) {
				return nil // gone: nothing left to clean up (not worth a warning)
			}
			return last
		})
		res <- last
	})
	return res
}

// retryBackground runs op until it succeeds, fails for another reason than
// a connection loss, or a few attempts (each waiting up to a minute for the
// session) are spent.
func (s *Session) retryBackground(what string, op func(ctx context.Context) error) {
	for attempt := 0; attempt < 5; attempt++ {
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		err := s.waitUp(ctx)
		if err == nil {
			err = op(ctx)
		}
		cancel()
		if err == nil {
			return
		}
		if s.ctx.Err() != nil {
			return // closed: the session's ephemeral nodes go with it
		}
		if !connLoss(err) && !errors.Is(err, context.DeadlineExceeded) {
			s.log.Warn("zookeeper clean-up failed", "op", what, "err", err)
			return
		}
	}
	s.log.Warn("zookeeper clean-up gave up", "op", what)
}

// ensurePath creates dir and its missing parents as persistent nodes.
func (s *Session) ensurePath(ctx context.Context, dir string) error {
	parts := strings.Split(strings.Trim(dir, "/"), "/")
	p := ""
	for _, part := range parts {
		p += "/" + part
		err := s.call(ctx, func() error {
			_, err := s.conn.Create(p, nil, 0, s.acl)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// connLoss reports whether err means the outcome of a request is unknown or
// the session changed under it: retry after the session is back.
func connLoss(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) ||
		errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) ||
		errors.Is(err, zk.ErrSessionMoved)
}

// randomID returns 16 random bytes in hex (owner ids and protected-mode
// GUIDs are random regardless of the scenario seed, see locks.Config).
func randomID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

// zkLogger sends the library's log lines to slog at debug level: it logs
// every failed dial, which is noise during fault injection.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "lib", "go-zookeeper")
}

// The ZooKeeper client's buffers. go-zookeeper's defaults (1.5 MiB each
// way) made a harness client cost 3 MiB. A reply is bounded like the Java
// client's (jute.maxbuffer, 1 MiB: a lock directory's children list with
// ~20,000 waiters); requests carry one path and no data.
const (
	maxRecvBuffer = 1 << 20
	sendBuffer    = 64 << 10
)
