package clockshim_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/clockshim"
)

// dateNow runs date(1) with the shim and clock file f and returns the
// wall time it printed, and the real time halfway through.
func dateNow(t *testing.T, lib string, f *clockshim.File) (shown, real time.Time) {
	t.Helper()
	cmd := exec.Command("date", "+%s.%N")
	cmd.Env = clockshim.Env(lib, f.Path())
	t0 := time.Now()
	out, err := cmd.Output()
	t1 := time.Now()
	if err != nil {
		t.Fatalf("date: %v", err)
	}
	sec, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		t.Fatalf("date printed %q", out)
	}
	return time.Unix(0, int64(sec*1e9)), t0.Add(t1.Sub(t0) / 2)
}

func within(t *testing.T, what string, got, want, tol time.Duration) {
	t.Helper()
	if d := got - want; d < -tol || d > tol {
		t.Errorf("%s: %v, want %v ± %v", what, got, want, tol)
	}
}

// TestDateSeesTheFile runs date(1), a glibc program reading
// CLOCK_REALTIME, under the shim: each state of the file is the clock it
// prints, changed while the file stays mapped by nobody in between.
func TestDateSeesTheFile(t *testing.T) {
	lib, err := clockshim.Library()
	if err != nil {
		t.Fatal(err)
	}
	f, err := clockshim.Create(filepath.Join(t.TempDir(), "clock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const tol = 300 * time.Millisecond

	shown, real := dateNow(t, lib, f)
	within(t, "offset 0", shown.Sub(real), 0, tol)

	f.Set(clockshim.State{Offset: time.Hour})
	shown, real = dateNow(t, lib, f)
	within(t, "offset +1h", shown.Sub(real), time.Hour, tol)

	f.Set(clockshim.State{Offset: -90 * time.Second})
	shown, real = dateNow(t, lib, f)
	within(t, "offset -90s", shown.Sub(real), -90*time.Second, tol)

	// Drift: 10x fast from a reference 2 s ago is 18 s ahead now.
	f.Set(clockshim.State{Rate: 10, Ref: time.Now().Add(-2 * time.Second)})
	shown, real = dateNow(t, lib, f)
	within(t, "rate 10 for 2s", shown.Sub(real), 18*time.Second, 3*tol)

	// Strobe: the offset in even periods, none in odd ones.
	f.Set(clockshim.State{Offset: time.Hour, Period: time.Hour, Ref: time.Now().Add(-90 * time.Minute)})
	shown, real = dateNow(t, lib, f)
	within(t, "strobe, odd period", shown.Sub(real), 0, tol)
	f.Set(clockshim.State{Offset: time.Hour, Period: time.Hour, Ref: time.Now().Add(-150 * time.Minute)})
	shown, real = dateNow(t, lib, f)
	within(t, "strobe, even period", shown.Sub(real), time.Hour, tol)

	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if !f.Read().Real() {
		t.Errorf("after Close the file holds %v, want the real clock", f.Read())
	}
}

// TestShift checks the Go mirror of the library's arithmetic.
func TestShift(t *testing.T) {
	ref := time.Unix(1000, 0)
	for _, c := range []struct {
		s    clockshim.State
		at   time.Time
		want time.Duration
	}{
		{clockshim.State{}, ref, 0},
		{clockshim.State{Offset: 5 * time.Second}, ref.Add(time.Hour), 5 * time.Second},
		{clockshim.State{Rate: 1.5, Ref: ref}, ref.Add(10 * time.Second), 5 * time.Second},
		{clockshim.State{Offset: time.Second, Period: 2 * time.Second, Ref: ref}, ref.Add(time.Second), time.Second},
		{clockshim.State{Offset: time.Second, Period: 2 * time.Second, Ref: ref}, ref.Add(3 * time.Second), 0},
	} {
		if got := c.s.Shift(c.at); got != c.want {
			t.Errorf("%v at ref+%v: shift %v, want %v", c.s, c.at.Sub(ref), got, c.want)
		}
	}
}
