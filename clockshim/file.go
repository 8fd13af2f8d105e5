package clockshim

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// The clock file: eight little-endian 8-byte fields (clockshim.c's struct
// clock_state). One writer (the harness) changes them under seq, odd
// while a write is in progress (a seqlock); readers retry on a change.
const (
	fMagic = iota
	fSeq
	fOffset // ns
	fRate   // parts per billion: 1e9 is the real rate
	fRef    // ns since the epoch, real time
	fPeriod // strobe period in ns; 0: no strobe
	fields  = 8
	size    = fields * 8
	magic   = 0x314b434f4c434c4c // "LLCLOCK1"
	ppb     = 1e9
)

// State is one process's clock: Offset added to the real wall time, a
// Rate (1: the real rate; 1.5: 50% fast) counted from Ref, and with a
// Period the offset applied only in the even periods from Ref (strobe).
// The zero State (or Rate 1) is the real clock.
type State struct {
	Offset time.Duration
	Rate   float64
	Ref    time.Time
	Period time.Duration
}

// Shift is how far a clock in state s is from the real time at real.
func (s State) Shift(real time.Time) time.Duration {
	off := s.Offset
	var d time.Duration
	el := real.UnixNano() - s.Ref.UnixNano()
	if s.Rate != 0 && s.Rate != 1 && !s.Ref.IsZero() {
		d = time.Duration(float64(el) * (s.Rate - 1))
	}
	if s.Period > 0 && el >= 0 && (el/int64(s.Period))%2 == 1 {
		off = 0
	}
	return off + d
}

// Real says whether s is the real clock.
func (s State) Real() bool {
	return s.Offset == 0 && (s.Rate == 0 || s.Rate == 1)
}

func (s State) String() string {
	switch {
	case s.Real():
		return "real time"
	case s.Period > 0:
		return fmt.Sprintf("offset %v every other %v", s.Offset, s.Period)
	case s.Rate != 0 && s.Rate != 1 && s.Offset != 0:
		return fmt.Sprintf("offset %v, rate %g", s.Offset, s.Rate)
	case s.Rate != 0 && s.Rate != 1:
		return fmt.Sprintf("rate %g", s.Rate)
	}
	return fmt.Sprintf("offset %v", s.Offset)
}

// File is a clock file mapped for writing. Its methods are safe for
// concurrent use.
type File struct {
	path string
	mu   sync.Mutex
	mem  []byte
	st   State
}

// Create makes the clock file at path, holding the real clock, and maps
// it. An existing file is overwritten in place (a process mapping it sees
// the real clock), never truncated under it.
func Create(path string) (*File, error) {
	fd, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("clockshim: %w", err)
	}
	defer fd.Close()
	if st, err := fd.Stat(); err != nil {
		return nil, fmt.Errorf("clockshim: %w", err)
	} else if st.Size() < size {
		if err := fd.Truncate(size); err != nil {
			return nil, fmt.Errorf("clockshim: %w", err)
		}
	}
	mem, err := syscall.Mmap(int(fd.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("clockshim: mmap %s: %w", path, err)
	}
	f := &File{path: path, mem: mem}
	f.Set(State{})
	binary.LittleEndian.PutUint64(mem[fMagic*8:], magic)
	return f, nil
}

// Path is the file's path, for EnvFile.
func (f *File) Path() string { return f.path }

func (f *File) word(i int) *int64 { return (*int64)(unsafe.Pointer(&f.mem[i*8])) }

// Set gives every process reading the file the clock s. A Ref left zero
// is now.
func (f *File) Set(s State) {
	if s.Rate == 0 {
		s.Rate = 1
	}
	if s.Ref.IsZero() && (s.Rate != 1 || s.Period > 0) {
		s.Ref = time.Now()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mem == nil {
		return
	}
	seq := f.word(fSeq)
	atomic.AddInt64(seq, 1) // odd: readers retry
	atomic.StoreInt64(f.word(fOffset), int64(s.Offset))
	atomic.StoreInt64(f.word(fRate), int64(math.Round(s.Rate*ppb)))
	var ref int64
	if !s.Ref.IsZero() {
		ref = s.Ref.UnixNano()
	}
	atomic.StoreInt64(f.word(fRef), ref)
	atomic.StoreInt64(f.word(fPeriod), int64(s.Period))
	atomic.AddInt64(seq, 1)
	f.st = s
}

// State is the clock last Set.
func (f *File) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

// Read reads the clock the file holds now, as a process would.
func (f *File) Read() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mem == nil {
		return State{}
	}
	s := State{
		Offset: time.Duration(atomic.LoadInt64(f.word(fOffset))),
		Rate:   float64(atomic.LoadInt64(f.word(fRate))) / ppb,
		Period: time.Duration(atomic.LoadInt64(f.word(fPeriod))),
	}
	if ref := atomic.LoadInt64(f.word(fRef)); ref != 0 {
		s.Ref = time.Unix(0, ref)
	}
	return s
}

// Close sets the real clock and unmaps the file (which stays, for a
// process still mapping it).
func (f *File) Close() error {
	f.Set(State{})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mem == nil {
		return nil
	}
	err := syscall.Munmap(f.mem)
	f.mem = nil
	return err
}
