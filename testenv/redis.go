package testenv

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Redis starts a bare redis-server (no persistence, no replicas) on a free
// 127.0.0.1 port for the test and returns its address ("127.0.0.1:P"). The
// server is killed, and waited for, when the test ends. It skips or fails
// like RequireBinaries when redis-server is missing.
func Redis(t testing.TB) string {
	t.Helper()
	RequireBinaries(t, "redis-server")
	dir := t.TempDir()
	logPath := filepath.Join(dir, "redis.log")
	// A free port can be taken by someone else between our probe and the
	// server's bind: then the server exits and we try another port.
	for attempt := 1; ; attempt++ {
		addr, exited, err := startRedis(t, dir, logPath)
		if err == nil {
			return addr
		}
		if attempt == 5 || !exited {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("start redis-server: %v\n%s", err, log)
		}
	}
}

// startRedis starts one server; exited reports that it stopped on its own
// (e.g. its port was taken), which is worth another attempt.
func startRedis(t testing.TB, dir, logPath string) (addr string, exited bool, err error) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		return "", false, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", false, err
	}
	defer logFile.Close()
	cmd := exec.Command("redis-server",
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Own process group so Cleanup kills everything it started; Pdeathsig so
	// the server dies with the test binary even if Cleanup never runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", false, err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // always reap: PID 1 here does not
		close(done)
	}()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}

	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ping(addr) {
			t.Cleanup(stop)
			return addr, false, nil
		}
		select {
		case <-done:
			return "", true, errExited
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return "", false, errNoPong
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
}

type startError string

func (e startError) Error() string { return string(e) }

const (
	errExited startError = "redis-server exited before answering PING"
	errNoPong startError = "redis-server did not answer PING within 10s"
)

// freePort returns a port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping reports whether a Redis server at addr answers PING with PONG.
func ping(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}
