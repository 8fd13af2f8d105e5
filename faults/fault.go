package faults

import (
	"strings"
	"time"
)

// Fault is one scheduled fault, as a scenario file writes it (package
// scenarios decodes YAML into it). Fields irrelevant to Type are zero.
type Fault struct {
	Type     string
	At       time.Duration
	For      time.Duration // 0: lasts to the end
	Link     string        // "A->B", spaces around the arrow removed
	Node     string
	Groups   [][]string
	Isolate  string
	Client   string // "holder" or an index in decimal ("client-3" and 3 become "3")
	Latency  time.Duration
	Jitter   time.Duration
	RateKbps int
	Delay    time.Duration
	Offset   time.Duration
	// Percent is loss's share of packets dropped, 1..100.
	Percent int
	// Direction is a partition's: DirectionBoth (""), DirectionOut or
	// DirectionIn (provider netns only).
	Direction string
	// Values holds the value fields a row of the fault table declares
	// that have no field above (by name: a time.Duration, an int, a
	// float64 or a string, as the field's ValueKind says). Read them with
	// Duration, Number, Factor and Text, set them with SetValue.
	Values map[string]any
	Line   int // where the fault was written in its scenario file; 0 when not from one
}

// mapNames returns f with every node name it holds (link ends, node,
// isolate, group members; client as a client name) replaced by m(name).
func mapNames(f Fault, m func(string) string) Fault {
	if a, b, ok := strings.Cut(f.Link, "->"); ok {
		f.Link = m(strings.TrimSpace(a)) + "->" + m(strings.TrimSpace(b))
	} else if f.Link != "" {
		f.Link = m(f.Link)
	}
	if f.Node != "" {
		f.Node = m(f.Node)
	}
	if f.Isolate != "" {
		f.Isolate = m(f.Isolate)
	}
	if f.Groups != nil {
		gs := make([][]string, len(f.Groups))
		for i, g := range f.Groups {
			gs[i] = make([]string, len(g))
			for j, n := range g {
				gs[i][j] = m(n)
			}
		}
		f.Groups = gs
	}
	if f.Client != "" {
		c := f.Client
		if c != Holder {
			c = ClientName(c)
		}
		f.Client = strings.TrimPrefix(m(c), "client-")
	}
	return f
}
