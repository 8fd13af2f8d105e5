package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/locklab/locklab/cluster"
)

// Env is what faults act on during one run.
type Env struct {
	Cluster *cluster.Cluster
	// Clients pauses harness client processes; nil when clients run in the
	// harness's own process, which makes pause-client impossible.
	Clients ClientControl
	// Holder blocks until a client is inside the critical section and
	// returns it, held there until Release (checker's HoldInside); it
	// resolves "holder" in a fault. nil: faults naming holder fail.
	Holder func(ctx context.Context) (HeldClient, error)
	// Inside blocks until some client has been inside its critical section
	// for at least after and returns it (checker's WaitInsideFor); it fires
	// the faults aimed with when: holder-inside. nil: such faults fail.
	Inside func(ctx context.Context, after time.Duration) (Aim, error)
	// Base is the workload's start: Fault.At and every Window offset count
	// from it.
	Base time.Time
	// Logger receives one line per applied, healed or failed fault; nil
	// discards.
	Logger *slog.Logger

	// st coordinates overlapping faults of one Run (see refs); nil outside
	// Run.
	st *state
}

// ClientControl pauses and resumes harness client processes (SIGSTOP and
// SIGCONT of the whole process), for pause-client. Client indexes are the
// workload's (0 .. clients-1).
type ClientControl interface {
	Pause(client int) error
	Resume(client int) error
}

// ClientPids is what a ClientControl may also do: tell a client's process
// id, so pause-client can see the process stopped (0: unknown).
type ClientPids interface {
	Pid(client int) int
}

// Window is one fault as it really happened, for the result file and the
// timeline plots. Start and End are offsets from Env.Base: Start is taken
// just before the fault is applied (after waiting for a holder), End just
// after it was healed, so [Start, End] covers the whole time the fault
// acted. A fault that is not undone and lasts to the end of the run (kill)
// ends when the run's ctx ends; one that completes by itself (restart,
// failover, clock-jump with provider external, a one-shot reset) ends
// when it completed.
type Window struct {
	// Index is the fault's position in the slice given to Run.
	Index  int
	Type   string
	Target string // what it acted on: "client-3->redis-0", "redis-0", "client-3", "[redis-0] | [clients redis-0-r0]"
	Start  time.Duration
	End    time.Duration
	// Detail says what was done ("latency 200ms±0s on the downstream of 2
	// links: ...", "sentinel-1 promoted redis-0-r0 1.84s after the kill").
	Detail string
	// Method is "emulated" when the fault's effect was produced another way
	// than the real event (clock-jump with provider external), "real" when
	// a fault that has an emulation elsewhere produced the real event (a
	// clock fault moving the server's own clock); "" otherwise.
	Method string
	// Err is why applying or healing failed; "" when both worked.
	Err string
	// Bit says whether the fault's effect was seen (the table's Observes:
	// a process stopped, a key gone, a contender granted while the holder
	// was inside, ...); nil when it was not looked for. Observed says what
	// was seen, or why it did not bite.
	Bit      *bool
	Observed string
	// Aim is the client found inside its critical section when a fault
	// aimed with when: holder-inside fired; nil for a fault fired by time.
	Aim *Aim
	// LostAt is when the fault was seen to take the lock state from the
	// node it acted on (offset from Env.Base): a restarted Redis that came
	// back without its keys (when it served again), a replica promoted
	// without the key, a key expired by a clock jump. nil when not seen.
	LostAt *time.Duration
	// Waiters says the fault is a partition that cut the waiters and not
	// the holder: the race it opens is a waiter's return after the heal,
	// not the holder's, so its claim rests on the visits of its window
	// rather than on the holder's exposure.
	Waiters bool
}

// Aim is the client an aimed fault fired on: Client had been inside its
// critical section for InsideFor when the fault fired.
type Aim struct {
	Client    int
	InsideFor time.Duration
}

// Methods of Window.Method.
const (
	MethodEmulated = "emulated"
	MethodReal     = "real"
)

// Errors of this package; compare with errors.Is.
var (
	// ErrUnsupported means the cluster, provider or client setup cannot
	// perform the fault (Check's errors and run-time refusals wrap it).
	ErrUnsupported = errors.New("faults: unsupported")
	// ErrNoHolder means a fault names holder but Env.Holder is nil, or
	// is aimed (when: holder-inside) but Env.Inside is nil.
	ErrNoHolder = errors.New("faults: holder needs Env.Holder")
)

// action performs one fault type. Implementations are stateless values,
// each in its row of the fault table (table.go).
type action interface {
	// check reports why f cannot be performed on t; nil when it can. It
	// sees f as written (holder not resolved).
	check(t *topology, f Fault) error
	// apply performs f, in which holder has been replaced by the client
	// that held the critical section. On error nothing of f remains applied,
	// except what effect.heal undoes (it is called when not nil).
	apply(ctx context.Context, env Env, f Fault) (effect, error)
	// observe looks for the effect of f as apply left it in eff: called
	// once, right after apply succeeded (before a later fault can change
	// what f acts on), with a context bounded by ObserveTimeout; Run adds
	// what the holder did and who leads at the fault's end. Faults that complete inside
	// apply (restart, failover, an emulated clock-jump) observe there and return
	// eff.seen.
	observe(ctx context.Context, env Env, f Fault, eff effect) evidence
}

// effect is what apply did.
type effect struct {
	target string
	detail string
	method string
	// heal undoes the fault; nil when nothing is to be undone.
	heal func(ctx context.Context) error
	// lasting marks a fault that is not undone but acts until the run ends
	// (kill): its Window ends with the run.
	lasting bool
	// holdToHeal keeps a held holder held until the fault heals (a paused
	// client's write already on its way to the harness must wait for it
	// like the process); otherwise it is released once apply returned.
	holdToHeal bool
	// seen is what apply observed itself (one-shot faults); observe
	// returns it.
	seen evidence
	// Taken by apply before acting, for observe: the processes acted on,
	// the round trip of probed links, the live connections.
	pids  []int
	rtt   map[*cluster.Link]time.Duration
	links []*cluster.Link
	// filters are the packet rules of a fault under provider netns.
	filters []cluster.PacketFilter
	// late, when set, is the fault's own evidence read at its end instead
	// of right after it applied: packet rules' counters only count once
	// traffic met them.
	late func() evidence
}

// FieldError is one problem with one fault: Fault is its position in the
// faults list, Field the field at fault as written in a scenario file
// ("node", "groups[1][0]"; "" for the fault as a whole), Err what is wrong
// (wrapping ErrUnsupported when the cluster or provider cannot do it).
// Check returns these, so a scenario's parser can name the file, line and
// field of each.
type FieldError struct {
	Fault int
	Type  string
	Field string
	Err   error
}

func (e *FieldError) Error() string {
	path := fmt.Sprintf("faults[%d]", e.Fault)
	if e.Field != "" {
		path += "." + e.Field
	}
	return fmt.Sprintf("%s (%s): %v", path, e.Type, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// fieldError says that field of the fault being checked is at fault;
// Check fills in the fault's index and type.
func fieldError(field string, err error) error { return &FieldError{Field: field, Err: err} }

// state is shared by the faults of one Run, so that overlapping faults on
// the same link, node or client compose: the first to apply a cut, pause
// or client pause does it, the last to heal it undoes it.
type state struct {
	mu   sync.Mutex
	refs map[any]int
}

func newState() *state { return &state{refs: map[any]int{}} }

func (env Env) state() *state {
	if env.st == nil {
		return newState() // outside Run: no other fault to coordinate with
	}
	return env.st
}

// acquire runs do when key is not held yet, and counts one more holder.
func (s *state) acquire(key any, do func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs[key] == 0 {
		if err := do(); err != nil {
			return err
		}
	}
	s.refs[key]++
	return nil
}

// release counts one holder less and runs undo when it was the last.
func (s *state) release(key any, undo func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs[key]--
	if s.refs[key] > 0 {
		return nil
	}
	delete(s.refs, key)
	return undo()
}

// Keys of state.refs.
type (
	cutKey    struct{ l *cluster.Link }
	pauseKey  struct{ n *cluster.Node }
	clientKey struct{ i int }
)
