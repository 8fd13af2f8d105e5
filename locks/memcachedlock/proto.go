package memcachedlock

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
)

// The few commands of memcached's text protocol the lock sends, each on a
// pooled connection whose deadline is ctx's and which ctx's end
// interrupts. A connection that saw any error is closed, never reused: a
// reply may still be on its way.

// conn is one connection to the server.
type conn struct {
	nc net.Conn
	r  *bufio.Reader
}

// maxIdle is the most idle connections a Client keeps.
const maxIdle = 4

// errServer is a reply the server sends for a command it refused (ERROR,
// CLIENT_ERROR ..., SERVER_ERROR ...).
var errServer = errors.New("memcached refused the command")

// get returns an idle connection or dials a new one within ctx.
func (c *Client) get(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		cn := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return cn, nil
	}
	c.mu.Unlock()
	d := net.Dialer{Timeout: DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", c.addr, err)
	}
	return &conn{nc: nc, r: bufio.NewReader(nc)}, nil
}

// put keeps cn for the next command, or closes it when enough are idle
// or the client is closed.
func (c *Client) put(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.idle) >= maxIdle {
		cn.nc.Close()
		return
	}
	c.idle = append(c.idle, cn)
}

// do runs one command: it writes req and hands the reply's reader to
// read, within ctx.
func (c *Client) do(ctx context.Context, req string, read func(*bufio.Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.requests.Add(1)
	cn, err := c.get(ctx)
	if err != nil {
		return err
	}
	dl, _ := ctx.Deadline() // zero: none
	_ = cn.nc.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = cn.nc.SetDeadline(time.Unix(1, 0)) })
	_, err = cn.nc.Write([]byte(req))
	if err == nil {
		err = read(cn.r)
	}
	interrupted := !stop()
	if err != nil || interrupted {
		cn.nc.Close()
		if interrupted {
			err = errors.Join(ctx.Err(), err)
		}
		return err
	}
	c.put(cn)
	return nil
}

// line reads one reply line without its \r\n; a refusal is an error
// wrapping errServer.
func line(r *bufio.Reader) (string, error) {
	s, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	s = strings.TrimRight(s, "\r\n")
	if s == "ERROR" || strings.HasPrefix(s, "CLIENT_ERROR") || strings.HasPrefix(s, "SERVER_ERROR") {
		return "", fmt.Errorf("%w: %s", errServer, s)
	}
	return s, nil
}

// store sends a storage command (add, cas) and returns the server's
// one-word reply: STORED, NOT_STORED, EXISTS or NOT_FOUND.
func (c *Client) store(ctx context.Context, req string) (string, error) {
	var reply string
	err := c.do(ctx, req, func(r *bufio.Reader) (err error) {
		reply, err = line(r)
		return err
	})
	return reply, err
}

// add stores value under key only if key holds nothing, expiring after
// exptime seconds (0: never); false when key was there.
func (c *Client) add(ctx context.Context, key, value string, exptime int) (bool, error) {
	reply, err := c.store(ctx, fmt.Sprintf("add %s 0 %d %d\r\n%s\r\n", key, exptime, len(value), value))
	if err != nil {
		return false, fmt.Errorf("add %s: %w", key, err)
	}
	switch reply {
	case "STORED":
		return true, nil
	case "NOT_STORED":
		return false, nil
	}
	return false, fmt.Errorf("add %s: unexpected reply %q", key, reply)
}

// cas stores value under key, expiring after exptime seconds (negative:
// at once), only if the item is still the one gets read with casID;
// false when it changed or is gone.
func (c *Client) cas(ctx context.Context, key, value string, exptime int, casID uint64) (bool, error) {
	reply, err := c.store(ctx, fmt.Sprintf("cas %s 0 %d %d %d\r\n%s\r\n", key, exptime, len(value), casID, value))
	if err != nil {
		return false, fmt.Errorf("cas %s: %w", key, err)
	}
	switch reply {
	case "STORED":
		return true, nil
	case "EXISTS", "NOT_FOUND":
		return false, nil
	}
	return false, fmt.Errorf("cas %s: unexpected reply %q", key, reply)
}

// gets reads key's value and cas id; found false when it holds nothing.
func (c *Client) gets(ctx context.Context, key string) (value string, casID uint64, found bool, err error) {
	err = c.do(ctx, "gets "+key+"\r\n", func(r *bufio.Reader) error {
		head, err := line(r)
		if err != nil || head == "END" {
			return err
		}
		// VALUE <key> <flags> <bytes> <cas unique>
		f := strings.Fields(head)
		if len(f) != 5 || f[0] != "VALUE" {
			return fmt.Errorf("unexpected reply %q", head)
		}
		n, err1 := strconv.Atoi(f[3])
		id, err2 := strconv.ParseUint(f[4], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("reply %q: %w", head, err)
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(r, data); err != nil {
			return err
		}
		if end, err := line(r); err != nil || end != "END" {
			return errors.Join(err, fmt.Errorf("no END after the value (%q)", end))
		}
		value, casID, found = string(data[:n]), id, true
		return nil
	})
	if err != nil {
		return "", 0, false, fmt.Errorf("gets %s: %w", key, err)
	}
	return value, casID, found, nil
}

// incr adds one to the number key holds and returns the result; found
// false when key holds nothing.
func (c *Client) incr(ctx context.Context, key string) (n uint64, found bool, err error) {
	err = c.do(ctx, "incr "+key+" 1\r\n", func(r *bufio.Reader) error {
		s, err := line(r)
		if err != nil || s == "NOT_FOUND" {
			return err
		}
		n, err = strconv.ParseUint(s, 10, 64)
		found = err == nil
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("incr %s: %w", key, err)
	}
	return n, found, nil
}
