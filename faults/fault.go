package faults

import "time"

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
	Line     int // where the fault was written in its scenario file; 0 when not from one
}
