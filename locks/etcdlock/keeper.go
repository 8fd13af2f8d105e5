package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locklab/locklab/locks"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// keeper is one lease and its keep-alive loop.
type keeper struct {
	c    *Client
	id   clientv3.LeaseID
	ttl  time.Duration // as granted by the server
	lost chan struct{} // closed when the lease is, or may be, gone
	stop context.CancelFunc
	done chan struct{} // closed when the loop has exited

	mu    sync.Mutex
	until time.Time // last successful keep-alive (or grant) send + TTL
}

// promise is the send time of the last successful keep-alive (or of the
// grant) plus the lease's TTL: the server keeps the lease at least that
// long.
func (k *keeper) promise() locks.Promise {
	k.mu.Lock()
	defer k.mu.Unlock()
	return locks.Promise{Until: k.until}
}

// grant creates a lease and starts keeping it alive.
func (c *Client) grant(ctx context.Context) (*keeper, error) {
	c.requests.Add(1)
	sent := time.Now()
	resp, err := c.cli.Grant(ctx, c.ttl)
	if err != nil {
		return nil, fmt.Errorf("grant lease: %w", err)
	}
	loopCtx, stop := context.WithCancel(context.Background())
	k := &keeper{
		c:    c,
		id:   resp.ID,
		ttl:  time.Duration(resp.TTL) * time.Second,
		lost: make(chan struct{}),
		stop: stop,
		done: make(chan struct{}),
	}
	k.until = sent.Add(k.ttl)
	go k.run(loopCtx, k.until)
	return k, nil
}

// run keeps the lease alive every ttl/3 until stopped (lost stays open) or
// the lease is gone or past deadline (lost closes). deadline is when the
// lease may expire at the server at the earliest: the send time of the last
// successful keep-alive (or of the grant) plus the TTL.
func (k *keeper) run(ctx context.Context, deadline time.Time) {
	defer close(k.done)
	expire := time.NewTimer(time.Until(deadline))
	defer expire.Stop()
	next := time.NewTimer(k.ttl / 3)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-expire.C:
			k.markLost("deadline passed without a keep-alive")
			return
		case <-next.C:
		}
		k.c.keepalives.Add(1)
		sent := time.Now()
		cctx, cancel := context.WithDeadline(ctx, deadline)
		resp, err := k.c.cli.KeepAliveOnce(cctx, k.id)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			deadline = sent.Add(time.Duration(resp.TTL) * time.Second)
			k.mu.Lock()
			k.until = deadline
			k.mu.Unlock()
			expire.Reset(time.Until(deadline))
			next.Reset(k.ttl / 3)
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			k.markLost("lease not found")
			return
		case !time.Now().Before(deadline):
			k.markLost(fmt.Sprintf("deadline passed: %v", err))
			return
		default:
			// Transient (no leader, connection trouble): retry soon.
			next.Reset(min(k.ttl/10, 500*time.Millisecond))
		}
	}
}

func (k *keeper) markLost(why string) {
	k.c.leasesLost.Add(1)
	k.c.log.Debug("etcd lease lost", "lease", fmt.Sprintf("%x", int64(k.id)), "why", why)
	close(k.lost)
}

// isLost reports whether lost is closed.
func (k *keeper) isLost() bool {
	select {
	case <-k.lost:
		return true
	default:
		return false
	}
}

// end stops the keep-alive loop (lost stays as it is) and revokes the lease
// in the background; revoking deletes any key still attached to it.
func (k *keeper) end() {
	k.stop()
	<-k.done
	k.c.background(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, k.ttl)
		defer cancel()
		k.c.requests.Add(1)
		if _, err := k.c.cli.Revoke(ctx, k.id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			k.c.log.Debug("etcd revoke failed; the lease will expire", "lease", fmt.Sprintf("%x", int64(k.id)), "err", err)
		}
	})
}
