package cluster

// Free ports for servers.

import (
	"fmt"
	"net"
	"strconv"
)

// pickPorts chooses ports for servers; tests replace it to provoke a port
// conflict.
var pickPorts = freePorts

// freePorts returns n distinct free 127.0.0.1 ports. They are free when
// chosen; a server that loses one to another process before binding it
// exits with "address already in use" and Start picks new ports for it.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cluster: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
