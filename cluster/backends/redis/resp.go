package redis

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

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
