package calibrate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/memcachedlock"
)

// bareOwner is the value the bare memcached client stores: as long as
// memcached-add's owner ids (32 hex digits).
const bareOwner = "locklab-calibrate-bare-client-00"

// memcachedTimeout bounds each request of the bare memcached client: a
// reply that never comes (a stopped server) fails the calibration.
const memcachedTimeout = 10 * time.Second

// bareMemcached times, on one connection speaking memcached's text
// protocol (memcachedlock speaks it itself, there is no other client to
// compare), memcached-add's grant without its wait: add of the key with
// the lock's exptime, an item in the server's memory (no consensus
// write); its release as the lock releases, gets of the key and cas of
// the value read with exptime -1 (expired at once: memcached has no
// conditional delete), two round trips; and version, one round trip.
func bareMemcached(ctx context.Context, cfg locks.Config) (commitOps, func(), error) {
	addrs := cfg.Endpoints.Table[string(memcachedlock.Backend)]
	if len(addrs) == 0 {
		return commitOps{}, nil, errors.New("no memcached server in the endpoints")
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", cfg.Endpoints.Dial(addrs[0]))
	if err != nil {
		return commitOps{}, nil, fmt.Errorf("connect memcached: %w", err)
	}
	unwatch := context.AfterFunc(ctx, func() { nc.Close() }) // Ctrl-C ends a request
	c := &memcachedConn{nc: nc, r: bufio.NewReader(nc)}
	add := fmt.Sprintf("add %s 0 %d %d\r\n%s\r\n", calibrationKey, memcachedlock.Exptime(cfg.TTL), len(bareOwner), bareOwner)
	return commitOps{
		write: func() error { return c.expect(add, "STORED") },
		del: func() error {
			casID, err := c.casOf(calibrationKey, bareOwner)
			if err != nil {
				return err
			}
			return c.expect(fmt.Sprintf("cas %s 0 -1 %d %d\r\n%s\r\n", calibrationKey, len(bareOwner), casID, bareOwner), "STORED")
		},
		read: func() error { return c.expect("version\r\n", "VERSION ") },
	}, func() { unwatch(); nc.Close() }, nil
}

// memcachedConn is the bare client's connection: one request at a time,
// written whole, its reply read line by line.
type memcachedConn struct {
	nc net.Conn
	r  *bufio.Reader
}

// request writes req and returns the first line of the reply without its
// \r\n.
func (c *memcachedConn) request(req string) (string, error) {
	if err := c.nc.SetDeadline(time.Now().Add(memcachedTimeout)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c.nc, req); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	return strings.TrimSuffix(line, "\r\n"), err
}

// expect sends req and fails unless the reply's line starts with want.
func (c *memcachedConn) expect(req, want string) error {
	line, err := c.request(req)
	if err == nil && !strings.HasPrefix(line, want) {
		err = fmt.Errorf("reply %q, want %s", line, want)
	}
	if err != nil {
		verb, _, _ := strings.Cut(req, " ")
		return fmt.Errorf("memcached %s: %w", strings.TrimSpace(verb), err)
	}
	return nil
}

// casOf sends gets key and returns the cas id of the item, which must
// hold value.
func (c *memcachedConn) casOf(key, value string) (uint64, error) {
	head, err := c.request("gets " + key + "\r\n")
	if err != nil {
		return 0, fmt.Errorf("memcached gets: %w", err)
	}
	// VALUE <key> <flags> <bytes> <cas unique>, the data, END.
	id, ok := strings.CutPrefix(head, fmt.Sprintf("VALUE %s 0 %d ", key, len(value)))
	if !ok {
		return 0, fmt.Errorf("memcached gets: reply %q, want the item the add stored", head)
	}
	casID, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memcached gets: reply %q: %w", head, err)
	}
	rest := make([]byte, len(value)+len("\r\nEND\r\n"))
	if _, err := io.ReadFull(c.r, rest); err != nil {
		return 0, fmt.Errorf("memcached gets: %w", err)
	}
	if string(rest) != value+"\r\nEND\r\n" {
		return 0, fmt.Errorf("memcached gets: data %q, want %q and END", rest, value)
	}
	return casID, nil
}
