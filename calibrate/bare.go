package calibrate

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/internal/resp"
)

// bareCycles runs redis-cad's cycle (its own acquire script, then its
// release script, one key per client) with a bare RESP client: one
// goroutine and one connection per client, nothing between the two
// commands, no go-redis, no workload, no checker. It is the most a Go
// program reaches on the path addr(i) on this machine, so the harness's rate
// divided by it is what the harness itself (go-redis included) leaves
// behind, and it divided by redis-benchmark's is what a Go client does.
// It returns completed cycles per second over d.
func bareCycles(ctx context.Context, addr func(i int) string, clients int, d time.Duration, acqSHA, relSHA, prefix string) (float64, error) {
	conns := make([]*bareConn, clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.nc.Close()
			}
		}
	}()
	for i := range conns {
		var dl net.Dialer
		nc, err := dl.DialContext(ctx, "tcp", addr(i))
		if err != nil {
			return 0, fmt.Errorf("bare client %d: %w", i, err)
		}
		key := prefix + strconv.Itoa(i)
		conns[i] = &bareConn{
			nc:      nc,
			r:       bufio.NewReader(nc),
			acquire: resp.AppendCommand(nil, "EVALSHA", acqSHA, "2", key, key+":fence", "bare", "10000"),
			release: resp.AppendCommand(nil, "EVALSHA", relSHA, "1", key, "bare"),
		}
	}
	var (
		cycles atomic.Int64
		wg     sync.WaitGroup
		errs   = make([]error, clients)
	)
	start := time.Now()
	stop := start.Add(d)
	// A reply that never comes (a stopped server) must not outlive the
	// measurement: Ctrl-C closes the connections, and a deadline bounds
	// every read in any case.
	unwatch := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			c.nc.Close()
		}
	})
	defer unwatch()
	for _, c := range conns {
		if err := c.nc.SetDeadline(stop.Add(30 * time.Second)); err != nil {
			return 0, fmt.Errorf("bare client deadline: %w", err)
		}
	}
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) && ctx.Err() == nil {
				if errs[i] = c.cycle(); errs[i] != nil {
					return
				}
				cycles.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return 0, err // the clients' errors are the closed connections
	}
	for _, err := range errs {
		if err != nil {
			return 0, err // the first; the others are most likely alike
		}
	}
	return float64(cycles.Load()) / elapsed.Seconds(), nil
}

// bareConn is one connection of the bare client with its two commands
// encoded once.
type bareConn struct {
	nc               net.Conn
	r                *bufio.Reader
	acquire, release []byte
}

// cycle sends the acquire script and then the release script, and checks
// that the first took the key ([1, token]) and the second deleted it (1).
func (c *bareConn) cycle() error {
	got, err := c.do(c.acquire)
	if err != nil {
		return fmt.Errorf("bare acquire: %w", err)
	}
	if a, ok := got.([]any); !ok || len(a) != 2 || a[0] != int64(1) {
		return fmt.Errorf("bare acquire: reply %v, want [1 token] (the key is this client's alone)", got)
	}
	if got, err = c.do(c.release); err != nil {
		return fmt.Errorf("bare release: %w", err)
	}
	if got != int64(1) {
		return fmt.Errorf("bare release: reply %v, want 1", got)
	}
	return nil
}

// do writes one encoded command and reads its reply; an error reply is
// returned as the error.
func (c *bareConn) do(cmd []byte) (any, error) {
	if _, err := c.nc.Write(cmd); err != nil {
		return nil, err
	}
	v, err := resp.Read(c.r)
	if e, ok := v.(resp.Error); ok {
		return nil, e
	}
	return v, err
}
