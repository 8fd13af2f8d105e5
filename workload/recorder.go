package workload

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/checker"
)

// BucketWidth is the timeline's resolution.
const BucketWidth = 100 * time.Millisecond

// Histogram range: 1 µs to one hour, 3 significant digits.
const (
	histMin    = 1
	histMax    = int64(time.Hour / time.Microsecond)
	histSigFig = 3
)

// NewHistogram returns an empty latency histogram in microseconds.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMin, histMax, histSigFig)
}

// RecordDuration records d (clamped to the histogram's range) in µs.
func RecordDuration(h *hdrhistogram.Histogram, d time.Duration) {
	us := d.Microseconds()
	if us < histMin {
		us = histMin
	}
	if us > histMax {
		us = histMax
	}
	_ = h.RecordValue(us)
}

// Bucket is one BucketWidth slot of the timeline.
type Bucket struct {
	Completions int64 `json:"completions"`
	Errors      int64 `json:"errors"`
	Violations  int64 `json:"violations"`
}

// Error kinds counted by the workload.
const (
	ErrAcquireTimeout = checker.AttemptTimedOut // Acquire did not return within acquire_timeout
	ErrNotObtained    = checker.AttemptRefused  // the lock gave up (locks.ErrNotObtained)
	ErrAcquire        = checker.AttemptFailed   // any other Acquire failure (backend down, ...)
	ErrStaleRejected  = "stale_rejected"        // the resource refused a stale token (fencing enforce)
	ErrLostWhileHeld  = "lost_while_held"       // Lost() closed before the critical section ended
	ErrReleaseNotHeld = "release_not_held"      // Release said the lock was no longer ours
	ErrRelease        = "release_error"         // any other Release failure
	ErrResource       = "resource_error"        // the harness's resource failed (remote clients)
)

// Recorder accumulates one or more clients' measurements. It is safe for
// concurrent use. Times are offsets from the run's base.
type Recorder struct {
	base time.Time

	mu       sync.Mutex
	acquire  *hdrhistogram.Histogram
	release  *hdrhistogram.Histogram
	errors   map[string]int64
	ops      int64
	attempts int64
	timeline []Bucket
	// Open-loop runs: operations started and how late each started
	// against its schedule.
	started int64
	lag     *hdrhistogram.Histogram
}

// NewRecorder returns an empty recorder whose timeline starts at base.
func NewRecorder(base time.Time) *Recorder {
	return &Recorder{
		base:    base,
		acquire: NewHistogram(),
		release: NewHistogram(),
		lag:     NewHistogram(),
		errors:  map[string]int64{},
	}
}

func (r *Recorder) bucket(at time.Time) *Bucket {
	i := int(at.Sub(r.base) / BucketWidth)
	if i < 0 {
		i = 0
	}
	for len(r.timeline) <= i {
		r.timeline = append(r.timeline, Bucket{})
	}
	return &r.timeline[i]
}

// Acquired records a successful acquisition that took d.
func (r *Recorder) Acquired(d time.Duration) {
	r.mu.Lock()
	RecordDuration(r.acquire, d)
	r.attempts++
	r.mu.Unlock()
}

// Started records an open-loop operation starting lag after its
// scheduled time.
func (r *Recorder) Started(lag time.Duration) {
	r.mu.Lock()
	r.started++
	RecordDuration(r.lag, lag)
	r.mu.Unlock()
}

// Released records a release that took d (successful or not).
func (r *Recorder) Released(d time.Duration) {
	r.mu.Lock()
	RecordDuration(r.release, d)
	r.mu.Unlock()
}

// Completed records a critical section whose write the resource accepted.
func (r *Recorder) Completed(at time.Time) {
	r.mu.Lock()
	r.ops++
	r.bucket(at).Completions++
	r.mu.Unlock()
}

// Error records an error of the given kind.
func (r *Recorder) Error(kind string, at time.Time) {
	r.mu.Lock()
	r.errors[kind]++
	r.bucket(at).Errors++
	r.mu.Unlock()
}

// Violation marks a violation in the timeline (the resource counts them).
func (r *Recorder) Violation(at time.Duration) {
	r.mu.Lock()
	r.bucket(r.base.Add(at)).Violations++
	r.mu.Unlock()
}

// Counts returns completed critical sections and errors so far.
func (r *Recorder) Counts() (ops, errs int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.errors {
		errs += n
	}
	return r.ops, errs
}

// Snapshot is a Recorder's content in a form that survives JSON, for a
// client running in another process.
type Snapshot struct {
	Acquire  *hdrhistogram.Snapshot `json:"acquire"`
	Release  *hdrhistogram.Snapshot `json:"release"`
	Errors   map[string]int64       `json:"errors"`
	Ops      int64                  `json:"ops"`
	Timeline []Bucket               `json:"timeline"`
	Started  int64                  `json:"started,omitempty"`
	Lag      *hdrhistogram.Snapshot `json:"lag,omitempty"`
}

// Snapshot copies the recorder's content.
func (r *Recorder) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := make(map[string]int64, len(r.errors))
	for k, v := range r.errors {
		errs[k] = v
	}
	return Snapshot{
		Acquire:  r.acquire.Export(),
		Release:  r.release.Export(),
		Errors:   errs,
		Ops:      r.ops,
		Timeline: append([]Bucket(nil), r.timeline...),
		Started:  r.started,
		Lag:      r.lag.Export(),
	}
}

// Merge adds a snapshot (another client's recorder) into r. The snapshot's
// timeline must count from the same base.
func (r *Recorder) Merge(s Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.Acquire != nil {
		r.acquire.Merge(hdrhistogram.Import(s.Acquire))
	}
	if s.Release != nil {
		r.release.Merge(hdrhistogram.Import(s.Release))
	}
	for k, v := range s.Errors {
		r.errors[k] += v
	}
	r.ops += s.Ops
	r.started += s.Started
	if s.Lag != nil {
		r.lag.Merge(hdrhistogram.Import(s.Lag))
	}
	for i, b := range s.Timeline {
		for len(r.timeline) <= i {
			r.timeline = append(r.timeline, Bucket{})
		}
		r.timeline[i].Completions += b.Completions
		r.timeline[i].Errors += b.Errors
		r.timeline[i].Violations += b.Violations
	}
}

// Summary is what a finished workload measured.
type Summary struct {
	Ops      int64
	Errors   map[string]int64
	Acquire  *hdrhistogram.Histogram
	Release  *hdrhistogram.Histogram
	Timeline []Bucket
	// Started counts open-loop operations started; Lag is how late they
	// started against their schedule (µs).
	Started int64
	Lag     *hdrhistogram.Histogram
}

// Summary returns copies of the recorder's content.
func (r *Recorder) Summary() Summary {
	s := r.Snapshot()
	return Summary{
		Ops:      s.Ops,
		Errors:   s.Errors,
		Acquire:  hdrhistogram.Import(s.Acquire),
		Release:  hdrhistogram.Import(s.Release),
		Timeline: s.Timeline,
		Started:  s.Started,
		Lag:      hdrhistogram.Import(s.Lag),
	}
}
