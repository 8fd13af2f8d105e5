package report

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// series is the runs of one lock configuration: a lock label plus every
// sweep parameter except clients, its runs ordered by clients.
type series struct {
	Key   string
	Lock  string
	Runs  []*Run
	Style seriesStyle
}

// runLabel names one run: its series and, within a sweep, its clients.
func runLabel(run *Run, sweep bool) string {
	if sweep {
		return fmt.Sprintf("%s, %d clients", seriesKey(run), run.Clients)
	}
	return seriesKey(run)
}

// groupSeries groups runs by series in order of first appearance; the
// styles follow that order, so a lock looks the same in every plot.
func groupSeries(runs []Run) []*series {
	var out []*series
	idx := map[string]*series{}
	for i := range runs {
		run := &runs[i]
		k := seriesKey(run)
		s := idx[k]
		if s == nil {
			s = &series{Key: k, Lock: run.Lock, Style: styleOf(len(out))}
			idx[k] = s
			out = append(out, s)
		}
		s.Runs = append(s.Runs, run)
	}
	for _, s := range out {
		sort.SliceStable(s.Runs, func(i, j int) bool { return s.Runs[i].Clients < s.Runs[j].Clients })
	}
	return out
}

// isSweep reports whether some series ran at more than one client count.
func isSweep(ss []*series) bool {
	for _, s := range ss {
		for _, r := range s.Runs[1:] {
			if r.Clients != s.Runs[0].Clients {
				return true
			}
		}
	}
	return false
}

// clientValues lists the distinct client counts of runs, ascending.
func clientValues(runs []Run) []int {
	seen := map[int]bool{}
	var out []int
	for _, r := range runs {
		if !seen[r.Clients] {
			seen[r.Clients] = true
			out = append(out, r.Clients)
		}
	}
	sort.Ints(out)
	return out
}

// measured reports whether run has numbers to plot.
func measured(run *Run) bool { return run.Error == "" || run.Ops > 0 }

var unsafeFile = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeName turns a label into a file-name part: letters, digits, '.', '_'
// and '-' only ("redis-watchdog ttl=5s" -> "redis-watchdog_ttl_5s").
func safeName(s string) string {
	s = strings.Trim(unsafeFile.ReplaceAllString(s, "_"), "_.")
	if s == "" {
		s = "run"
	}
	return s
}

// timelineNames gives each run its timeline file name,
// timeline-<lock>[-<param>-<value>...], unique within the result.
func timelineNames(runs []Run) []string {
	sweep := isSweep(groupSeries(runs))
	used := map[string]bool{}
	names := make([]string, len(runs))
	for i := range runs {
		run := &runs[i]
		name := "timeline-" + safeName(seriesKey(run))
		if sweep {
			name += "-clients-" + strconv.Itoa(run.Clients)
		}
		base := name
		for n := 2; used[name]; n++ {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		used[name] = true
		names[i] = name
	}
	return names
}

// niceMax rounds v up to a round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6,
// 8 times a power of ten), for axis tops with a little headroom.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// linearTicks labels 4 to 10 round values (steps of 1, 2 or 5 times a power
// of ten) with unlabelled minor ticks halfway: gonum's default gives as few
// as two labels.
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: fmtNum(lo)}}
	}
	raw := (hi - lo) / 6
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * p
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*p {
			step = m * p
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: fmtNum(v)})
		if m := v + step/2; m < hi {
			ticks = append(ticks, plot.Tick{Value: m})
		}
	}
	return ticks
}

// fmtNum formats a measurement with sensible precision for labels and
// tables: three significant decimals below 1, fewer above, no trailing
// zeros ("1", "0.359", "12.5", "2317").
func fmtNum(v float64) string {
	var s string
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a < 0.01:
		return strconv.FormatFloat(v, 'g', 2, 64)
	case a < 1:
		s = strconv.FormatFloat(v, 'f', 3, 64)
	case a < 10:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	case a < 100:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
