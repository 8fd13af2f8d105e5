package runner

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime/debug"
	"strconv"
)

// resetPeakRSS restarts the kernel's peak-RSS count (VmHWM) of this
// process, so that peakRSSMB measures one run. It first returns the
// previous runs' garbage to the system: the count restarts from the
// current RSS. Linux only; elsewhere the peak covers the process's life.
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMB is this process's peak resident memory in MB since the last
// resetPeakRSS (VmHWM), 0 when unknown.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "VmHWM:" {
			kb, err := strconv.ParseFloat(string(f[1]), 64)
			if err != nil {
				return 0
			}
			return math.Round(kb/1024*10) / 10
		}
	}
	return 0
}
