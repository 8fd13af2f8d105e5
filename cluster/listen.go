package cluster

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// A toxiproxy proxy listens all the time: when its upstream is down it
// accepts the connection, fails to dial upstream and closes it, so the
// client sees a connection that opens and then ends (EOF) where it would
// have seen "connection refused". Most clients retry either way, but some
// do not treat the two alike: a ZooKeeper follower retries a refused
// connection to the new leader's quorum port for a while, yet drops out to
// a new election round on EOF, and the ensemble then waits initLimit for a
// quorum that never comes — 5 s instead of 0.3 s after a leader dies.
//
// So a local cluster mirrors each server's listening socket on its proxies:
// every watchEvery the cluster reads the kernel's table of listening TCP
// sockets and starts a proxy whose upstream listens, stops one whose
// upstream does not. Stopping closes the proxy's live connections, which the
// server closed anyway when it stopped listening (it died, or a ZooKeeper
// leader stepped down). A cut link is left alone until healed, so nothing
// about the far side leaks through a partition. The window between a server
// starting to listen and its proxies following is at most watchEvery, and a
// client that connects within it is refused as it would have been a moment
// earlier.

// watchEvery is how often proxies follow their upstreams' listening state.
const watchEvery = 20 * time.Millisecond

// listeningSockets returns the local addresses ("127.0.0.1:6379",
// "0.0.0.0:2181") of listening TCP sockets (IPv4).
func listeningSockets() (map[string]bool, error) {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for i, line := range bytes.Split(b, []byte{'\n'}) {
		if i == 0 {
			continue
		}
		f := bytes.Fields(line)
		if len(f) < 4 || string(f[3]) != "0A" { // TCP_LISTEN
			continue
		}
		if a, ok := procAddr(string(f[1])); ok {
			out[a] = true
		}
	}
	return out, nil
}

// procAddr decodes /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080".
func procAddr(s string) (string, bool) {
	if len(s) != 13 || s[8] != ':' {
		return "", false
	}
	ip, err1 := strconv.ParseUint(s[:8], 16, 32)
	port, err2 := strconv.ParseUint(s[9:], 16, 16)
	if err1 != nil || err2 != nil {
		return "", false
	}
	return fmt.Sprintf("%d.%d.%d.%d:%d", ip&0xff, ip>>8&0xff, ip>>16&0xff, ip>>24, port), true
}

// upstreamListens reports whether addr ("127.0.0.1:port") has a listener.
func upstreamListens(ls map[string]bool, addr string) bool {
	if ls[addr] {
		return true
	}
	_, port := splitHostPort(addr)
	return ls["0.0.0.0:"+port]
}

// syncListening starts or stops the link's proxies to match their
// upstreams, unless the link is cut.
func (l *Link) syncListening(ls map[string]bool) {
	if !l.watch || l.IsCut() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, p := range l.proxies {
		want := upstreamListens(ls, l.upstreams[i])
		if want == l.up[i] {
			continue
		}
		if want {
			if err := p.Start(); err != nil {
				continue // retried next round
			}
		} else {
			p.Stop()
		}
		l.up[i] = want
	}
}

// watchListeners runs until stop is closed.
func (c *Cluster) watchListeners(stop <-chan struct{}) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ls, err := listeningSockets()
		if err != nil {
			c.log.Warn("cluster: read listening sockets", "err", err)
			return
		}
		for _, l := range c.AllLinks() {
			l.syncListening(ls)
		}
	}
}
