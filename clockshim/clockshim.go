// Package clockshim gives one server process a wall clock of its own: a
// preload library (src/clockshim.c, built with the system's C compiler) that
// overrides clock_gettime for CLOCK_REALTIME and CLOCK_REALTIME_COARSE,
// gettimeofday and time, and reads the process's clock from a small file
// the harness writes (File). MONOTONIC and the other clocks are the
// machine's.
//
// The process's wall clock is real + offset + (real - ref) × (rate - 1);
// with a strobe period the offset applies only in the even periods counted
// from ref, so the clock flips between offset and true time.
//
// What it cannot reach: programs that read the clock without calling
// glibc (Go programs such as etcd read the vDSO directly) and statically
// linked ones.
package clockshim

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

//go:embed src/clockshim.c
var source []byte

// EnvLibrary names the library to preload instead of the one Library
// finds or builds; "off" turns the shim off (Library fails).
const EnvLibrary = "LOCKLAB_CLOCKSHIM"

// EnvFile is the variable the library reads its clock file's path from.
const EnvFile = "LOCKLAB_CLOCK_FILE"

// LibraryName is the file name `make build` gives the library, next to
// bin/chaos and bin/bench.
const LibraryName = "libclockshim.so"

// ErrOff means the shim was turned off (LOCKLAB_CLOCKSHIM=off).
var ErrOff = errors.New("clockshim: turned off by " + EnvLibrary + "=off")

var (
	libOnce sync.Once
	libPath string
	libErr  error
)

// Library returns the path of the preload library: $LOCKLAB_CLOCKSHIM
// when set; libclockshim.so beside the running executable when there
// (`make build` puts it beside bin/chaos); otherwise the embedded source
// compiled once with cc into the user's cache directory, under a name
// holding the source's hash (go test and go run need no make step, only
// the compiler `make deps` installs).
func Library() (string, error) {
	libOnce.Do(func() { libPath, libErr = library() })
	return libPath, libErr
}

func library() (string, error) {
	switch v := os.Getenv(EnvLibrary); v {
	case "off":
		return "", ErrOff
	case "":
	default:
		if _, err := os.Stat(v); err != nil {
			return "", fmt.Errorf("clockshim: %s: %w", EnvLibrary, err)
		}
		return v, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), LibraryName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	sum := sha256.Sum256(source)
	out := filepath.Join(dir, "locklab", "clockshim-"+hex.EncodeToString(sum[:6])+".so")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := Build(out); err != nil {
		return "", err
	}
	return out, nil
}

// Build compiles the library into out (written beside it, then renamed,
// so concurrent builds never see a half-written file).
func Build(out string) error {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return fmt.Errorf("clockshim: no C compiler (cc) to build the clock shim: `make deps` installs gcc: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("clockshim: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".clockshim-")
	if err != nil {
		return fmt.Errorf("clockshim: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "clockshim.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return fmt.Errorf("clockshim: %w", err)
	}
	so := filepath.Join(tmp, LibraryName)
	if b, err := exec.Command(cc, Flags(src, so)...).CombinedOutput(); err != nil {
		return fmt.Errorf("clockshim: %s %v: %w\n%s", cc, Flags(src, so), err, b)
	}
	if err := os.Rename(so, out); err != nil {
		return fmt.Errorf("clockshim: %w", err)
	}
	return nil
}

// Flags are the compiler's arguments building out from src (the Makefile
// uses the same).
func Flags(src, out string) []string {
	return []string{"-O2", "-Wall", "-fPIC", "-shared", "-o", out, src}
}

// Env is what a server's environment needs to run with the library lib
// and the clock file path.
func Env(lib, path string) []string {
	return []string{"LD_PRELOAD=" + lib, EnvFile + "=" + path}
}
