package faults

import (
	"math/rand/v2"
	"slices"
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
	// DirectionIn (provider netns only); or a drop's: DropRequest ("")
	// or DropReply.
	Direction string
	// Values holds the value fields a row of the fault table declares
	// that have no field above (by name: a time.Duration, an int, a
	// float64 or a string, as the field's ValueKind says). Read them with
	// Duration, Number, Factor and Text, set them with SetValue.
	Values map[string]any
	// When is WhenTime ("" too: fire at At) or WhenHolderInside: fire at
	// the first moment at or after At when a client is inside its critical
	// section, and has been for AfterEnter.
	When       string
	AfterEnter time.Duration
	// AfterEnterMax, when above AfterEnter, makes each run draw its
	// after_enter uniformly from [AfterEnter, AfterEnterMax] with the run's
	// seed (DrawPhase): seeded runs hit the holder at different phases of
	// its critical section.
	AfterEnterMax time.Duration
	Line          int // where the fault was written in its scenario file; 0 when not from one
}

// Values of Fault.When (contract names: docs/scenario-file.md).
const (
	WhenTime         = "time"
	WhenHolderInside = "holder-inside"
)

// DrawPhase returns fs with each after_enter range drawn from seed (fault i
// from its own stream, so adding a fault changes no other's draw).
func DrawPhase(fs []Fault, seed int64) []Fault {
	out := slices.Clone(fs)
	for i, f := range out {
		if f.AfterEnterMax > f.AfterEnter {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)+0x9e37))
			out[i].AfterEnter = f.AfterEnter + time.Duration(rng.Int64N(int64(f.AfterEnterMax-f.AfterEnter)+1))
			out[i].AfterEnterMax = 0
		}
	}
	return out
}

// Aimed reports whether f fires on the lock's state (a client inside its
// critical section) instead of the clock alone.
func (f Fault) Aimed() bool { return f.When == WhenHolderInside }

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
