package cluster

import (
	"fmt"
	"strconv"
)

// Packet rules: faults of a provider whose links the kernel carries
// (Namespaces: provider netns), where there is no proxy to act in.

// PacketAction is what a PacketRule does to the packets it matches.
type PacketAction int

// Packet actions.
const (
	// PacketDrop drops the packets (a partition: senders retransmit, a new
	// connection times out).
	PacketDrop PacketAction = iota
	// PacketDropSYN drops TCP connection requests only: connections that
	// exist carry on, new ones time out (a blackhole).
	PacketDropSYN
	// PacketReset answers TCP packets with a reset (the connection breaks
	// at once, a new one is refused).
	PacketReset
)

func (a PacketAction) String() string {
	switch a {
	case PacketDrop:
		return "drop"
	case PacketDropSYN:
		return "drop-syn"
	case PacketReset:
		return "reset"
	}
	return "action-" + strconv.Itoa(int(a))
}

// PacketRule selects the packets sent From one end To another (node names,
// or "clients" / "client-N" for the harness's clients, which all share one
// address) and what happens to them. Percent in 1..99 acts on that share
// of the packets at random (nftables numgen); 0 or 100 on every one.
type PacketRule struct {
	From, To string
	Action   PacketAction
	Percent  int
}

func (r PacketRule) String() string {
	s := r.Action.String() + " " + r.From + "->" + r.To
	if r.Percent > 0 && r.Percent < 100 {
		s += " " + strconv.Itoa(r.Percent) + "%"
	}
	return s
}

// PacketFilter is one installed PacketRule.
type PacketFilter interface {
	// Remove deletes the rule; removing it again does nothing.
	Remove() error
	// Matched is how many packets the rule acted on so far.
	Matched() (uint64, error)
}

// Namespaces is a Provider that runs every node in a network namespace of
// its own at an address of its own (provider netns): the kernel carries
// every link, faults on links are packet rules, and clients may get
// namespaces and addresses of their own.
type Namespaces interface {
	Provider
	// AddPacketRule installs r and returns it.
	AddPacketRule(r PacketRule) (PacketFilter, error)
	// ClientStarter returns a function that runs start on a thread inside
	// client's own namespace, made the first time.
	ClientStarter(client int) func(start func() error) error
	// HarnessAddr is the harness's address on the nodes' network.
	HarnessAddr() string
	// OwnClientAddress reports whether client ("client-N") has an
	// address of its own.
	OwnClientAddress(client string) bool
}

// namespaces is c's provider when it is a Namespaces, else nil.
func (c *Cluster) namespaces() Namespaces {
	ns, _ := c.prov.(Namespaces)
	return ns
}

// AddPacketRule installs r (a provider with namespaces only, netns;
// ErrUnsupported otherwise) and returns it; Remove undoes it.
func (c *Cluster) AddPacketRule(r PacketRule) (PacketFilter, error) {
	ns := c.namespaces()
	if ns == nil {
		return nil, fmt.Errorf("cluster: packet rule %s: only provider netns: %w", r, ErrUnsupported)
	}
	return ns.AddPacketRule(r)
}

// ClientStarter returns, under provider netns, a function that runs start
// (an exec.Cmd's Start) on a thread inside client's own namespace, which
// it creates and plugs into the bridge the first time: the process is
// born there and so is everything it starts. Other providers: nil (start
// the process as usual).
func (c *Cluster) ClientStarter(client int) func(start func() error) error {
	if ns := c.namespaces(); ns != nil {
		return ns.ClientStarter(client)
	}
	return nil
}

// HarnessAddr is the address at which processes of the clients reach a
// socket of the harness: 127.0.0.1, or under provider netns the harness's
// address on the cluster's bridge (a client in a namespace of its own has
// a loopback of its own).
func (c *Cluster) HarnessAddr() string {
	if ns := c.namespaces(); ns != nil {
		return ns.HarnessAddr()
	}
	return "127.0.0.1"
}

// OwnClientAddress reports whether client (a name "client-N") has an
// address of its own, that packet rules can tell from the other clients'.
func (c *Cluster) OwnClientAddress(client string) bool {
	if ns := c.namespaces(); ns != nil {
		return ns.OwnClientAddress(client)
	}
	return false
}
