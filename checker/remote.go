package checker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"sync"
)

// Server serves a Shared resource to clients in other OS processes over
// loopback (net/rpc). When a connection closes (the client process exited or
// was killed), the visits it left inside are exited: a dead client holds
// nothing.
type Server struct {
	res *Shared
	ln  net.Listener
	wg  sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// Serve listens on addr ("127.0.0.1:0") and serves res until Close.
func Serve(res *Shared, addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("resource server: %w", err)
	}
	s := &Server{res: res, ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the address clients Dial.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for handlers.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	h := &Handler{res: s.res, open: map[uint64]struct{}{}}
	srv := rpc.NewServer()
	if err := srv.RegisterName("Resource", h); err != nil {
		c.Close()
		return
	}
	srv.ServeConn(c)
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	h.exitAll()
}

// Handler is the RPC receiver of one connection; exported only because
// net/rpc requires it.
type Handler struct {
	res  *Shared
	mu   sync.Mutex
	open map[uint64]struct{}
}

// WriteArgs are the arguments of Write.
type WriteArgs struct {
	Visit uint64
	Value int64
}

// Enter is the RPC form of Shared.Enter.
func (h *Handler) Enter(a Visit, id *uint64) error {
	v, err := h.res.Enter(context.Background(), a)
	if err == nil {
		h.mu.Lock()
		h.open[v] = struct{}{}
		h.mu.Unlock()
	}
	*id = v
	return err
}

// Read is the RPC form of Shared.Read.
func (h *Handler) Read(visit uint64, v *int64) error {
	var err error
	*v, err = h.res.Read(context.Background(), visit)
	return err
}

// Write is the RPC form of Shared.Write; a stale rejection travels as a
// reply flag because net/rpc flattens errors to strings.
func (h *Handler) Write(a WriteArgs, stale *bool) error {
	err := h.res.Write(context.Background(), a.Visit, a.Value)
	if errors.Is(err, ErrStaleToken) {
		*stale = true
		return nil
	}
	return err
}

// Exit is the RPC form of Shared.Exit.
func (h *Handler) Exit(visit uint64, _ *struct{}) error {
	h.mu.Lock()
	delete(h.open, visit)
	h.mu.Unlock()
	return h.res.Exit(context.Background(), visit)
}

// Record is the RPC form of Shared.Record.
func (h *Handler) Record(op Op, _ *struct{}) error {
	return h.res.Record(context.Background(), op)
}

func (h *Handler) exitAll() {
	h.mu.Lock()
	ids := make([]uint64, 0, len(h.open))
	for id := range h.open {
		ids = append(ids, id)
	}
	h.open = map[uint64]struct{}{}
	h.mu.Unlock()
	for _, id := range ids {
		_ = h.res.Exit(context.Background(), id)
	}
}

// Remote is a Resource reached over loopback.
type Remote struct{ c *rpc.Client }

var (
	_ Resource   = (*Remote)(nil)
	_ OpRecorder = (*Remote)(nil)
)

// Dial connects to a Server.
func Dial(ctx context.Context, addr string) (*Remote, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial resource %s: %w", addr, err)
	}
	return &Remote{c: rpc.NewClient(conn)}, nil
}

// Close closes the connection; the server exits any visit still open.
func (r *Remote) Close() error { return r.c.Close() }

func (r *Remote) call(ctx context.Context, method string, args, reply any) error {
	call := r.c.Go("Resource."+method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		if call.Error != nil {
			return fmt.Errorf("resource %s: %w", method, call.Error)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("resource %s: %w", method, ctx.Err())
	}
}

// Enter implements Resource.
func (r *Remote) Enter(ctx context.Context, v Visit) (uint64, error) {
	var id uint64
	err := r.call(ctx, "Enter", v, &id)
	return id, err
}

// Read implements Resource.
func (r *Remote) Read(ctx context.Context, visit uint64) (int64, error) {
	var v int64
	err := r.call(ctx, "Read", visit, &v)
	return v, err
}

// Write implements Resource.
func (r *Remote) Write(ctx context.Context, visit uint64, value int64) error {
	var stale bool
	if err := r.call(ctx, "Write", WriteArgs{Visit: visit, Value: value}, &stale); err != nil {
		return err
	}
	if stale {
		return fmt.Errorf("write visit %d: %w", visit, ErrStaleToken)
	}
	return nil
}

// Record implements OpRecorder.
func (r *Remote) Record(ctx context.Context, op Op) error {
	return r.call(ctx, "Record", op, &struct{}{})
}

// Exit implements Resource.
func (r *Remote) Exit(ctx context.Context, visit uint64) error {
	return r.call(ctx, "Exit", visit, &struct{}{})
}
