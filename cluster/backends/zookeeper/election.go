package zookeeper

import (
	"encoding/binary"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// ZooKeeper keeps one election connection per pair of members, opened by
// the member with the higher id. When the lower one connects first, its
// opening message announces its own election address; the higher member
// drops the connection and dials that address back. ZooKeeper 3.8 announces
// the address of its own server line (127.0.0.1:<real port> under provider
// local, its container's address under docker), so the dial-back would
// bypass the proxies. The election proxies therefore rewrite the announced
// address, in the opening message of each connection from lower to higher,
// to the election proxy of the pair higher->lower (buildZooKeeper, with
// cluster.Build.AddToxic).

const electionToxicType = "locklab_zk_election"

func init() { toxics.Register(electionToxicType, new(zkElectionToxic)) }

// Protocol versions of the election InitialMessage that carry an address.
const (
	zkProtocolV1 = -65536
	zkProtocolV2 = -65535
)

// zkElectionToxic rewrites the address in the first message of a
// connection (upstream direction of an election proxy) to Addr.
type zkElectionToxic struct {
	Addr string `json:"addr"`
}

type zkElectionState struct {
	pending *stream.StreamChunk // interrupted while sending: send first
	done    bool
	buf     []byte
	ts      time.Time
}

func (t *zkElectionToxic) NewState() any { return new(zkElectionState) }

func (t *zkElectionToxic) Pipe(stub *toxics.ToxicStub) {
	st, _ := stub.State.(*zkElectionState)
	if st == nil {
		st = new(zkElectionState)
		stub.State = st
	}
	if st.pending != nil {
		c := st.pending
		st.pending = nil
		if !t.send(stub, st, c) {
			return
		}
	}
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				if len(st.buf) > 0 {
					if !t.send(stub, st, &stream.StreamChunk{Data: st.buf, Timestamp: st.ts}) {
						return
					}
					st.buf = nil
				}
				stub.Close()
				return
			}
			if st.done {
				if !t.send(stub, st, c) {
					return
				}
				continue
			}
			if len(st.buf) == 0 {
				st.ts = c.Timestamp
			}
			st.buf = append(st.buf, c.Data...)
			out, ok := t.rewrite(st.buf)
			if !ok {
				continue // need more bytes
			}
			st.done, st.buf = true, nil
			if !t.send(stub, st, &stream.StreamChunk{Data: out, Timestamp: st.ts}) {
				return
			}
		}
	}
}

// send passes c on; when interrupted (toxiproxy rewires the chain) it keeps
// c to send first when restarted.
func (t *zkElectionToxic) send(stub *toxics.ToxicStub, st *zkElectionState, c *stream.StreamChunk) bool {
	select {
	case stub.Output <- c:
		return true
	case <-stub.Interrupt:
		st.pending = c
		return false
	}
}

// rewrite returns b with the InitialMessage's address replaced, or ok=false
// while b does not hold the whole message yet. Anything that is not an
// InitialMessage with an address passes unchanged.
func (t *zkElectionToxic) rewrite(b []byte) (out []byte, ok bool) {
	if len(b) < 8 {
		return nil, false
	}
	v := int64(binary.BigEndian.Uint64(b))
	if v != zkProtocolV1 && v != zkProtocolV2 {
		return b, true
	}
	if len(b) < 20 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(b[16:20]))
	if n < 0 || n > 1<<16 {
		return b, true
	}
	if len(b) < 20+n {
		return nil, false
	}
	out = make([]byte, 0, len(b)-n+len(t.Addr))
	out = append(out, b[:16]...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(t.Addr)))
	out = append(out, t.Addr...)
	out = append(out, b[20+n:]...)
	return out, true
}
