package memlock

import (
	"context"

	"github.com/locklab/locklab/locks"
)

// Name is the contract name of the lock.
const Name = "mem"

func init() {
	locks.Register(locks.Spec{
		Name:       Name,
		Backend:    locks.Memory,
		Summary:    "[calibration] in-process lease table (TTL, tokens, Lost), no network: the harness's own ceiling",
		Fencing:    true,
		LeaseBased: true,
		InProcess:  true,
		New: func(_ context.Context, cfg locks.Config) (locks.Client, error) {
			return NewClient(Default, cfg), nil
		},
	})
}

// Client hands out Lockers of one Table under a prefix, as the harness's
// clients get them. It holds no connection.
type Client struct {
	t   *Table
	cfg locks.Config
}

// NewClient returns a client of t: lock name n is prefix+n, leases last
// cfg.TTL (0: until released).
func NewClient(t *Table, cfg locks.Config) *Client {
	return &Client{t: t, cfg: cfg}
}

// Locker returns the locker of name.
func (c *Client) Locker(name string) locks.Locker {
	return c.t.Locker(c.cfg.Prefix+name, c.cfg.TTL)
}

// Close does nothing: a mem client holds no connection.
func (c *Client) Close() error { return nil }
