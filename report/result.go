package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/locklab/locklab/checker"
)

// Schema is the version of result.json written by this code. Readers
// accept any "locklab/result/vN" file; new fields are added, none renamed.
// v2 added the verdict fields (incidents, lock_faults, client_faults,
// overlap_ms_total, duplicate_tokens, token_regressions, verdict, ...).
const Schema = "locklab/result/v2"

// Result is one scenario run: every lock (and sweep point) it ran.
type Result struct {
	Schema      string `json:"schema"`
	Scenario    string `json:"scenario"`
	Description string `json:"description,omitempty"`
	File        string `json:"file,omitempty"`
	Seed        int64  `json:"seed"`
	Provider    string `json:"provider"`
	Complete    bool   `json:"complete"`
	// Version is locklab's own version (module version and commit) that
	// wrote this result.
	Version  string    `json:"version,omitempty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Host describes the machine (CPUs, OS, Go version) for readers
	// comparing runs.
	Host     Host              `json:"host"`
	Versions map[string]string `json:"versions,omitempty"`
	Workload Workload          `json:"workload"`
	Fencing  string            `json:"fencing"`
	Runs     []Run             `json:"runs"`
	// ExpectMet is set when the scenario has expectations: true when every
	// run met its own.
	ExpectMet *bool `json:"expect_met,omitempty"`
	// Verdict is "met", "failed" or "inconclusive" over every run, when the
	// scenario has expectations.
	Verdict string `json:"verdict,omitempty"`
	// Interrupted says why the run stopped early (Ctrl-C, error).
	Interrupted string `json:"interrupted,omitempty"`
}

// Host is the machine a result was measured on.
type Host struct {
	CPUs      int    `json:"cpus"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	GoVersion string `json:"go_version"`
	Hostname  string `json:"hostname,omitempty"`
}

// Workload is the workload as run (after overrides).
type Workload struct {
	Clients          int     `json:"clients"`
	DurationS        float64 `json:"duration_s,omitempty"`
	Ops              int     `json:"ops,omitempty"`
	TTLMs            float64 `json:"ttl_ms"`
	CriticalMs       float64 `json:"critical_section_ms"`
	Keys             int     `json:"keys"`
	Mode             string  `json:"mode"`
	Rate             float64 `json:"rate,omitempty"`
	ProcessPerClient bool    `json:"process_per_client,omitempty"`
	// OnLost is the client model that ran: "ignore" or "abort".
	OnLost string `json:"on_lost,omitempty"`
	// KeyPerClient: client i used key i only (keys >= clients).
	KeyPerClient bool `json:"key_per_client,omitempty"`
	// ReadShare is the share of operations that took a read-write lock's
	// shared side.
	ReadShare float64 `json:"read_share,omitempty"`
}

// Run is one lock on one fresh cluster (one sweep point).
type Run struct {
	Lock     string            `json:"lock"`      // label: name, or name plus options
	LockName string            `json:"lock_name"` // registered name
	Backend  string            `json:"backend"`
	Options  map[string]string `json:"options,omitempty"`
	Fences   bool              `json:"fences"` // the lock gives fencing tokens
	// Kind is what the lock promises about holders inside at once
	// ("mutex", "rw", "semaphore", "fair"; "" in results written before
	// kinds: a mutex), Permits a semaphore's permits and ReadShare the
	// share of operations that took a read-write lock's shared side.
	Kind      string  `json:"kind,omitempty"`
	Permits   int     `json:"permits,omitempty"`
	ReadShare float64 `json:"read_share,omitempty"`
	Clients   int     `json:"clients"`
	// Params are the sweep parameters of this run ("clients": "16").
	Params    map[string]string `json:"params,omitempty"`
	TTLMs     float64           `json:"ttl_ms"`
	DurationS float64           `json:"duration_s"`

	Ops        int64            `json:"ops"`
	Throughput float64          `json:"throughput"`
	Errors     map[string]int64 `json:"errors"`
	// SafetyFigures are the run's safety counts (violations, lost_updates,
	// stale_tokens, stale_rejected, stale_accepted, incidents, lock_faults,
	// client_faults, duplicate_tokens, token_regressions). incidents counts
	// maximal groups of overlapping visits; each is a lock fault (the lock
	// granted again within the earlier holder's promise: nothing on the
	// client side repairs this) or a client fault (the earlier holder
	// stayed inside past its promise: fencing repairs this).
	checker.SafetyFigures
	MaxOverlapMs float64 `json:"max_overlap_ms"`
	Visits       int     `json:"visits"`
	// KeyClients is the most distinct clients that visited any one lock
	// key (at most 2 counted): under 2, nobody contended for a key.
	KeyClients int `json:"key_clients,omitempty"`
	// PeakHolders is the most visits inside one lock's resource at once
	// (a semaphore's permits in use; readers sharing a read-write lock).
	PeakHolders int `json:"peak_holders,omitempty"`
	// OutOfOrder and MaxOvertakenWaitMs are a fair lock's order figures:
	// grants that overtook a client that had asked earlier, and the
	// longest wait of a client so overtaken.
	OutOfOrder         int     `json:"out_of_order,omitempty"`
	MaxOvertakenWaitMs float64 `json:"max_overtaken_wait_ms,omitempty"`
	// PermitsLeakedMs is a semaphore's leaked permits: how long a client
	// was refused or kept waiting while fewer visits than the permits
	// occupied one and a dead or expired holder's permit was owed
	// (docs/history-format.md). nil for other kinds and in
	// results written before the figure: not measured.
	PermitsLeakedMs *float64 `json:"permits_leaked_ms,omitempty"`
	// MinVisits is the min_visits its expectations were judged with (0:
	// none were).
	MinVisits int `json:"min_visits,omitempty"`
	// VisitsInWindow counts visits that overlapped a fault's evidence
	// window (from the fault's start to a lease after its heal, within the
	// run); ContendersInWindow how many distinct clients contended in
	// those windows: visited, or waited while another client was inside
	// (an acquire refused, timed out or still waiting at the end);
	// WaitingInWindow how many of them only waited. They are the evidence
	// a safety claim over a fault rests on.
	VisitsInWindow     int `json:"visits_in_window"`
	ContendersInWindow int `json:"contenders_in_window"`
	WaitingInWindow    int `json:"waiting_in_window,omitempty"`
	// AvailabilityDuringFault is the completion rate during the fault
	// windows divided by the rate before the first fault (nil when the
	// run had no fault, or fewer than 3 completions before it).
	AvailabilityDuringFault *float64 `json:"availability_during_fault,omitempty"`

	// OverlapMsTotal is how long two or more visits were inside at once.
	OverlapMsTotal float64 `json:"overlap_ms_total"`
	// LostLeases counts the visits whose lock state was lost on the
	// server while their holder was inside (docs/verdicts.md, "Zombie
	// time"); nil in results written before it was measured.
	// ZombieMsP50 and ZombieMsMax are the median and the longest time
	// from such a loss to the holder learning it, over them; absent when
	// there was none.
	LostLeases  *int     `json:"lost_leases,omitempty"`
	ZombieMsP50 *float64 `json:"zombie_ms_p50,omitempty"`
	ZombieMsMax *float64 `json:"zombie_ms_max,omitempty"`
	// Promise says what the lease's promised validity is: "measured",
	// "estimated" (an adapter's conservative estimate) or "unbounded".
	Promise string `json:"promise,omitempty"`
	// TokenOrder is porcupine's second opinion on the fencing tokens (a
	// strictly increasing counter in real-time order): "ok", "violation",
	// "unknown" (out of time) or why it was skipped; TokenOrderHTML names
	// its visualisation beside the report when it found a violation.
	TokenOrder     string          `json:"token_order,omitempty"`
	TokenOrderHTML string          `json:"token_order_html,omitempty"`
	IncidentEvents []IncidentEvent `json:"incident_events,omitempty"`

	Acquire Latency `json:"acquire"`
	Release Latency `json:"release"`
	Handoff Latency `json:"handoff"`

	// Counters are the lock client's own counts summed over clients
	// (requests, watch_events, notifications), when it keeps any.
	Counters map[string]int64 `json:"counters,omitempty"`

	TimelineBucketMs int              `json:"timeline_bucket_ms"`
	Timeline         []TimelineBucket `json:"timeline"`
	ViolationEvents  []ViolationEvent `json:"violation_events"`
	// ViolationEventsDropped counts events beyond the kept maximum.
	ViolationEventsDropped int           `json:"violation_events_dropped,omitempty"`
	Faults                 []FaultWindow `json:"faults"`

	// Harness cost (calibration): PeakRSSMB is the harness process's peak
	// resident memory during the run (in-process clients, proxies, checker;
	// not the servers or client processes), 0 when unknown. In open-loop
	// runs RateRequested is the scheduled rate, RateAchieved the rate at
	// which operations actually started, StartLagMs the p99 of how late
	// they started, and RateWarning says when the harness fell behind.
	PeakRSSMB     float64 `json:"peak_rss_mb,omitempty"`
	RateRequested float64 `json:"rate_requested,omitempty"`
	RateAchieved  float64 `json:"rate_achieved,omitempty"`
	StartLagMs    float64 `json:"start_lag_p99_ms,omitempty"`
	RateWarning   string  `json:"rate_warning,omitempty"`

	ExpectMet    *bool         `json:"expect_met,omitempty"`
	Expectations []Expectation `json:"expectations,omitempty"`
	// Verdict is "met", "failed" or "inconclusive"; VerdictReason says why
	// when it is not met.
	Verdict       string             `json:"verdict,omitempty"`
	VerdictReason string             `json:"verdict_reason,omitempty"`
	StartupMs     map[string]float64 `json:"startup_ms,omitempty"`
	// ProxiedLinks names every link that went through a proxy ("A->B":
	// client links only to the servers a fault could act on, peer links);
	// empty when none did, nil in results that did not record it.
	ProxiedLinks []string `json:"proxied_links"`
	// LossyDisks says the servers' data dirs were on the lossy filesystem
	// a power-cut fault needs, where a server that fsyncs every write runs
	// slower than on plain disk (docs/faults.md).
	LossyDisks bool `json:"lossy_disks,omitempty"`
	// Complete is false when the run was cut short.
	Complete bool `json:"complete"`
	// Error is why the run failed (cluster did not start, ...).
	Error string `json:"error,omitempty"`
}

// Latency is a latency distribution summary, in milliseconds.
type Latency struct {
	Count  int64   `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
	// Curve is (percentile, ms) points for percentile plots.
	Curve [][2]float64 `json:"curve,omitempty"`
}

// CurvePercentiles are the points kept in Latency.Curve.
var CurvePercentiles = []float64{0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100}

// LatencyOf summarises a histogram recorded in microseconds.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	l := Latency{
		Count:  h.TotalCount(),
		MeanMs: h.Mean() / 1000,
		P50Ms:  ms(h.ValueAtQuantile(50)),
		P90Ms:  ms(h.ValueAtQuantile(90)),
		P99Ms:  ms(h.ValueAtQuantile(99)),
		P999Ms: ms(h.ValueAtQuantile(99.9)),
		MaxMs:  ms(h.Max()),
	}
	for _, p := range CurvePercentiles {
		v := h.ValueAtQuantile(p)
		if p == 100 {
			v = h.Max()
		}
		l.Curve = append(l.Curve, [2]float64{p, ms(v)})
	}
	return l
}

// TimelineBucket is one slot of the run's timeline.
type TimelineBucket struct {
	Completions int64 `json:"completions"`
	Errors      int64 `json:"errors"`
	Violations  int64 `json:"violations"`
}

// ViolationEvent is one overlap seen by the resource.
type ViolationEvent struct {
	Lock         string  `json:"lock"`
	FirstClient  int     `json:"first_client"`
	SecondClient int     `json:"second_client"`
	FirstToken   uint64  `json:"first_token"`
	SecondToken  uint64  `json:"second_token"`
	AtS          float64 `json:"at_s"`
	OverlapMs    float64 `json:"overlap_ms"`
	// FirstShared and SecondShared say the client was a reader (the
	// shared side of a read-write lock).
	FirstShared  bool `json:"first_shared,omitempty"`
	SecondShared bool `json:"second_shared,omitempty"`
}

// FaultWindow is one fault as it really happened.
type FaultWindow struct {
	Type   string  `json:"type"`
	Target string  `json:"target"`
	StartS float64 `json:"start_s"`
	// EndS is when it healed; equal to the run's end when it lasted to it.
	EndS   float64 `json:"end_s"`
	Detail string  `json:"detail,omitempty"`
	// Method says how it was done when that matters ("emulated", "real").
	Method string `json:"method,omitempty"`
	Error  string `json:"error,omitempty"`
	// VisitsAfter is how many visits began after the fault's start.
	VisitsAfter int `json:"visits_after"`
	// Bit says whether the fault's effect was observed (nil: not
	// checked); Observed says what was seen, or why it did not bite.
	Bit      *bool  `json:"bit,omitempty"`
	Observed string `json:"observed,omitempty"`
	// When is "holder-inside" for a fault aimed at a client inside its
	// critical section; Holder is the client it was aimed at or named
	// ("client-2"), HolderInsideMs how long that client had been inside
	// when an aimed fault fired.
	When           string  `json:"when,omitempty"`
	Holder         string  `json:"holder,omitempty"`
	HolderInsideMs float64 `json:"holder_inside_ms,omitempty"`
	// LostAtS is when the fault was seen to take the lock state from the
	// node it acted on (absent: not seen).
	LostAtS *float64 `json:"lost_at_s,omitempty"`
	// Exposed says the race the fault exists for opened: a holder was
	// inside while the lock's state no longer protected it, for
	// ExposureMs in all; Held that the fault hit a live holder and the
	// lock kept protecting it throughout. ContendersInExposure counts the
	// other clients' requests for the holder's key during the exposure
	// (Held: in the fault's window while the holder was inside);
	// ExposureNote says why the race never opened. Absent in results
	// written before exposure was measured.
	Exposed              *bool   `json:"exposed,omitempty"`
	ExposureMs           float64 `json:"exposure_ms"`
	Held                 bool    `json:"held,omitempty"`
	ContendersInExposure int     `json:"contenders_in_exposure"`
	ExposureNote         string  `json:"exposure_note,omitempty"`
	// ExposureEndS is when the race the fault opened closed last (absent:
	// it never opened, or the result predates the field).
	ExposureEndS float64 `json:"exposure_end_s,omitempty"`
	// Setting marks a fault in place before any client entered (a cut
	// shaping the cluster): it opens no race of its own and the run's
	// other faults carry the claim.
	Setting bool `json:"setting,omitempty"`
}

// IncidentEvent is one incident: a maximal group of overlapping visits.
type IncidentEvent struct {
	Lock    string  `json:"lock"`
	StartS  float64 `json:"start_s"`
	EndS    float64 `json:"end_s"`
	Clients []int   `json:"clients"`
	Pairs   int     `json:"pairs"`
	Fault   string  `json:"fault"` // "lock" or "client"
}

// Expectation is one checked expectation.
type Expectation struct {
	Field string `json:"field"`
	Want  string `json:"want"`
	Got   int    `json:"got"`
	Met   bool   `json:"met"`
	// Verdict is "met", "failed" or "inconclusive"; Reason says why when
	// not met.
	Verdict string `json:"verdict,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Write stores r as dir/result.json atomically (temp file + rename), so a
// reader never sees half a file even when the run is interrupted.
func Write(dir string, r *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".result-*.json")
	if err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, "result.json"))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// Read loads dir/result.json (or the file itself when path is a file).
func Read(path string) (*Result, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "result.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("read result %s: %w", path, err)
	}
	if len(r.Schema) < len("locklab/result/v1") || r.Schema[:len("locklab/result/")] != "locklab/result/" {
		return nil, fmt.Errorf("read result %s: schema %q is not a locklab result", path, r.Schema)
	}
	return &r, nil
}
