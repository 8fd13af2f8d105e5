package zookeeper

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// initialMessage is the opening message of an election connection: the
// protocol version, the sender's id, then its election address with its
// length (and, here, what follows on the connection).
func initialMessage(version int64, addr, rest string) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(version))
	b = binary.BigEndian.AppendUint64(b, 3) // sid
	b = binary.BigEndian.AppendUint32(b, uint32(len(addr)))
	return append(append(b, addr...), rest...)
}

// TestElectionRewrite: the address a member announces is replaced by the
// proxy's, whatever its length, once the whole message arrived; anything
// else passes unchanged.
func TestElectionRewrite(t *testing.T) {
	tox := &zkElectionToxic{Addr: "127.0.0.1:40001"}
	for _, v := range []int64{zkProtocolV1, zkProtocolV2} {
		in := initialMessage(v, "127.0.0.1:3888", "next")
		for cut := 0; cut < 20+len("127.0.0.1:3888"); cut++ {
			if _, ok := tox.rewrite(in[:cut]); ok {
				t.Fatalf("version %d: rewrote a message cut at %d bytes", v, cut)
			}
		}
		out, ok := tox.rewrite(in)
		if want := initialMessage(v, tox.Addr, "next"); !ok || !bytes.Equal(out, want) {
			t.Errorf("version %d: rewrote to %q, want %q", v, out, want)
		}
	}
	// An old-style message (the id alone) and a silly length pass as they are.
	silly := initialMessage(zkProtocolV2, "", "")
	binary.BigEndian.PutUint32(silly[16:], 0xffffffff)
	for _, in := range [][]byte{binary.BigEndian.AppendUint64(nil, 3), silly} {
		if out, ok := tox.rewrite(in); !ok || !bytes.Equal(out, in) {
			t.Errorf("rewrote %x to %x, %v; want it unchanged", in, out, ok)
		}
	}
}
