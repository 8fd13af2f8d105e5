package redis

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/internal/resp"
)

// respDo dials addr, sends one command and returns its reply (see
// resp.Read; an error reply is returned as the error): one command per
// connection, no pooling, no retries, no global logger (unlike go-redis),
// bounded by ctx, for readiness probes.
func respDo(ctx context.Context, addr string, args ...string) (any, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	conn.SetDeadline(deadline)
	if _, err := conn.Write(resp.AppendCommand(nil, args...)); err != nil {
		return nil, err
	}
	v, err := resp.Read(bufio.NewReader(conn))
	if err != nil {
		return nil, err
	}
	if e, ok := v.(resp.Error); ok {
		return nil, e
	}
	return v, nil
}

// respString runs a command whose reply is a string.
func respString(ctx context.Context, addr string, args ...string) (string, error) {
	v, err := respDo(ctx, addr, args...)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("resp: %s: reply %T", args[0], v)
	}
	return s, nil
}

// infoField returns field from an INFO reply ("master_link_status").
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// clockTimeout bounds one reading of a server's clock.
const clockTimeout = time.Second

// readClock reads n's own wall clock: TIME on a Redis server, INFO
// server's server_time_usec on a Sentinel (which has no TIME).
func readClock(ctx context.Context, n *cluster.Node) (cluster.ClockReading, error) {
	ctx, cancel := context.WithTimeout(ctx, clockTimeout)
	defer cancel()
	r := cluster.ClockReading{Sent: time.Now(), Unsure: time.Microsecond}
	var err error
	if n.Kind == cluster.KindSentinel {
		var info string
		info, err = respString(ctx, n.Addr(), "INFO", "server")
		r.Received = time.Now()
		if err == nil {
			var us int64
			us, err = strconv.ParseInt(infoField(info, "server_time_usec"), 10, 64)
			r.T = time.UnixMicro(us)
		}
		if err != nil {
			return r, fmt.Errorf("INFO server_time_usec on %s: %w", n.Name, err)
		}
		return r, nil
	}
	var v any
	v, err = respDo(ctx, n.Addr(), "TIME")
	r.Received = time.Now()
	if err == nil {
		r.T, err = timeReply(v)
	}
	if err != nil {
		return r, fmt.Errorf("TIME on %s: %w", n.Name, err)
	}
	return r, nil
}

// timeReply is the time of a TIME reply: seconds and microseconds as
// two bulk strings.
func timeReply(v any) (time.Time, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return time.Time{}, fmt.Errorf("reply %v: want [seconds microseconds]", v)
	}
	var parts [2]int64
	for i, x := range a {
		s, _ := x.(string)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("reply %v: %w", v, err)
		}
		parts[i] = n
	}
	return time.Unix(parts[0], parts[1]*1000), nil
}
