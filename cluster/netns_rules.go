package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Packet rules of provider netns: nftables rules in the namespace of a
// link's server end. Each rule is a base chain of its own in table
// "locklab" (family ip) holding one rule with a counter, so removing it is
// deleting its chain and overlapping faults never touch each other's
// rules. The counter says whether the rule bit.

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
type PacketFilter struct {
	Rule    PacketRule
	rules   *nftRules
	node    string // whose namespace holds it
	chain   *nftables.Chain
	mu      sync.Mutex
	removed bool
}

// nftTable is the table of every rule of provider netns.
var nftTable = &nftables.Table{Name: "locklab", Family: nftables.TableFamilyIPv4}

// nftRules are the packet rules of one cluster.
type nftRules struct {
	p   *netnsProvider
	mu  sync.Mutex
	seq int
	all map[*PacketFilter]bool
}

func newNftRules(p *netnsProvider) *nftRules {
	return &nftRules{p: p, all: map[*PacketFilter]bool{}}
}

// AddPacketRule installs r (provider netns only; ErrUnsupported
// otherwise) and returns it; Remove undoes it.
func (c *Cluster) AddPacketRule(r PacketRule) (*PacketFilter, error) {
	if c.netns == nil {
		return nil, fmt.Errorf("cluster: packet rule %s: only provider netns: %w", r, ErrUnsupported)
	}
	return c.netns.rules.add(r)
}

// conn opens an nftables connection in node's namespace.
func (rs *nftRules) conn(node string) (*nftables.Conn, error) {
	rs.p.mu.Lock()
	ns, ok := rs.p.ns[node]
	rs.p.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("node %s has no namespace", node)
	}
	return nftables.New(nftables.WithNetNSFd(int(ns)))
}

func (rs *nftRules) add(r PacketRule) (*PacketFilter, error) {
	from, ok := rs.p.addrOf(r.From)
	if !ok {
		return nil, fmt.Errorf("cluster: packet rule %s: unknown end %q", r, r.From)
	}
	to, ok := rs.p.addrOf(r.To)
	if !ok {
		return nil, fmt.Errorf("cluster: packet rule %s: unknown end %q", r, r.To)
	}
	// In the receiver's namespace, on input, by source address; when the
	// receiver is the harness (clients), in the sender's, on output.
	node, hook, offset, peer := r.To, nftables.ChainHookInput, uint32(12), from
	if isClient(r.To) || r.To == Clients {
		if isClient(r.From) || r.From == Clients {
			return nil, fmt.Errorf("cluster: packet rule %s: clients to clients", r)
		}
		node, hook, offset, peer = r.From, nftables.ChainHookOutput, 16, to
	}
	rs.mu.Lock()
	rs.seq++
	name := "r" + strconv.Itoa(rs.seq)
	rs.mu.Unlock()
	conn, err := rs.conn(node)
	if err != nil {
		return nil, fmt.Errorf("cluster: packet rule %s: %w", r, err)
	}
	defer conn.CloseLasting()
	conn.AddTable(nftTable)
	accept := nftables.ChainPolicyAccept
	chain := conn.AddChain(&nftables.Chain{Name: name, Table: nftTable, Type: nftables.ChainTypeFilter,
		Hooknum: hook, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	ip := peer.As4()
	exprs := []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ip[:]},
	}
	if r.Action != PacketDrop {
		exprs = append(exprs,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 9, Len: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}})
	}
	if r.Action == PacketReset {
		// tcp flags & rst == 0: a reset passes. The reset this rule sends
		// leaves through the namespace's output hook, where the rule of the
		// other direction (reset both ways) would otherwise drop it: the
		// peer would see its packets vanish (retransmissions, delivered
		// after the heal) instead of a reset.
		exprs = append(exprs,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{0x04}, Xor: []byte{0}},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0x00}})
	}
	if r.Action == PacketDropSYN {
		// tcp flags & (syn|ack) == syn: a connection request.
		exprs = append(exprs,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{0x12}, Xor: []byte{0}},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0x02}})
	}
	if r.Percent > 0 && r.Percent < 100 {
		// numgen random mod 100 < percent; the number is in host order, so
		// it is turned to network order before the comparison (as nft does).
		exprs = append(exprs,
			&expr.Numgen{Register: 1, Modulus: 100, Type: unix.NFT_NG_RANDOM},
			&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
			&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: binary.BigEndian.AppendUint32(nil, uint32(r.Percent))})
	}
	exprs = append(exprs, &expr.Counter{})
	if r.Action == PacketReset {
		exprs = append(exprs, &expr.Reject{Type: unix.NFT_REJECT_TCP_RST})
	} else {
		exprs = append(exprs, &expr.Verdict{Kind: expr.VerdictDrop})
	}
	conn.AddRule(&nftables.Rule{Table: nftTable, Chain: chain, Exprs: exprs})
	if err := conn.Flush(); err != nil {
		return nil, fmt.Errorf("cluster: packet rule %s in %s: nftables: %w", r, node, err)
	}
	f := &PacketFilter{Rule: r, rules: rs, node: node, chain: chain}
	rs.mu.Lock()
	rs.all[f] = true
	rs.mu.Unlock()
	rs.p.log.Debug("netns: packet rule", "rule", r.String(), "in", node, "chain", name)
	return f, nil
}

// Remove deletes the rule; removing it again does nothing.
func (f *PacketFilter) Remove() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removed {
		return nil
	}
	conn, err := f.rules.conn(f.node)
	if err != nil {
		return fmt.Errorf("cluster: remove packet rule %s: %w", f.Rule, err)
	}
	defer conn.CloseLasting()
	conn.FlushChain(f.chain)
	conn.DelChain(f.chain)
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("cluster: remove packet rule %s: nftables: %w", f.Rule, err)
	}
	f.removed = true
	f.rules.mu.Lock()
	delete(f.rules.all, f)
	f.rules.mu.Unlock()
	return nil
}

// Matched is how many packets the rule acted on so far (its counter).
func (f *PacketFilter) Matched() (uint64, error) {
	conn, err := f.rules.conn(f.node)
	if err != nil {
		return 0, err
	}
	defer conn.CloseLasting()
	rules, err := conn.GetRules(nftTable, f.chain)
	if err != nil {
		return 0, fmt.Errorf("cluster: packet rule %s: %w", f.Rule, err)
	}
	var n uint64
	for _, r := range rules {
		for _, e := range r.Exprs {
			if c, ok := e.(*expr.Counter); ok {
				n += c.Packets
			}
		}
	}
	return n, nil
}

// closeAll forgets every rule: the namespaces holding them are deleted.
func (rs *nftRules) closeAll() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for f := range rs.all {
		f.mu.Lock()
		f.removed = true
		f.mu.Unlock()
	}
	rs.all = map[*PacketFilter]bool{}
}

// nftProbe adds and deletes a table in the named namespace: whether
// nftables works there.
func nftProbe(name string) error {
	ns, err := netns.GetFromName(name)
	if err != nil {
		return err
	}
	defer ns.Close()
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		return err
	}
	defer conn.CloseLasting()
	conn.AddTable(nftTable)
	if err := conn.Flush(); err != nil {
		return err
	}
	conn.DelTable(nftTable)
	return errors.Join(conn.Flush())
}
