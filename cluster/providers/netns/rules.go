package netns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/locklab/locklab/cluster"
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

// packetFilter is one installed cluster.PacketRule.
type packetFilter struct {
	Rule    cluster.PacketRule
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
	all map[*packetFilter]bool
}

func newNftRules(p *netnsProvider) *nftRules {
	return &nftRules{p: p, all: map[*packetFilter]bool{}}
}

// AddPacketRule installs r (cluster.Namespaces).
func (p *netnsProvider) AddPacketRule(r cluster.PacketRule) (cluster.PacketFilter, error) {
	f, err := p.rules.add(r)
	if err != nil {
		return nil, err
	}
	return f, nil
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

func (rs *nftRules) add(r cluster.PacketRule) (*packetFilter, error) {
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
	if cluster.IsClient(r.To) || r.To == cluster.Clients {
		if cluster.IsClient(r.From) || r.From == cluster.Clients {
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
	if r.Action != cluster.PacketDrop {
		exprs = append(exprs,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 9, Len: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}})
	}
	if r.Action == cluster.PacketReset {
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
	if r.Action == cluster.PacketDropSYN {
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
	if r.Action == cluster.PacketReset {
		exprs = append(exprs, &expr.Reject{Type: unix.NFT_REJECT_TCP_RST})
	} else {
		exprs = append(exprs, &expr.Verdict{Kind: expr.VerdictDrop})
	}
	conn.AddRule(&nftables.Rule{Table: nftTable, Chain: chain, Exprs: exprs})
	if err := conn.Flush(); err != nil {
		return nil, fmt.Errorf("cluster: packet rule %s in %s: nftables: %w", r, node, err)
	}
	f := &packetFilter{Rule: r, rules: rs, node: node, chain: chain}
	rs.mu.Lock()
	rs.all[f] = true
	rs.mu.Unlock()
	rs.p.log.Debug("netns: packet rule", "rule", r.String(), "in", node, "chain", name)
	return f, nil
}

// Remove deletes the rule; removing it again does nothing.
func (f *packetFilter) Remove() error {
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
func (f *packetFilter) Matched() (uint64, error) {
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
	rs.all = map[*packetFilter]bool{}
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
