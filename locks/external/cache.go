package external

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/locklab/locklab/clients"
)

// PythonEnv names an interpreter to run the Python clients with instead of
// /usr/bin/python3 (Debian's lock modules are installed for that one; a
// pyenv python3 first on PATH does not see them).
const PythonEnv = "LOCKLAB_PYTHON"

// Python returns the interpreter the Python clients run with: $LOCKLAB_PYTHON,
// else /usr/bin/python3.
func Python() string {
	if py := os.Getenv(PythonEnv); py != "" {
		return py
	}
	return "/usr/bin/python3"
}

// CuratorJars are the Debian jars (/usr/share/java) the Curator client
// compiles and runs against.
var CuratorJars = []string{"curator-client", "curator-framework", "curator-recipes", "guava",
	"netty-all", "slf4j-api", "slf4j-nop", "zookeeper", "zookeeper-jute"}

const javaDir = "/usr/share/java"

var (
	cacheOnce sync.Once
	cacheDir  string
	cacheErr  error
	javacMu   sync.Mutex
)

// materialize returns p's argv, writing the embedded clients to the cache
// directory first (once per content version) and compiling Java there.
func materialize(p program) ([]string, error) {
	cacheOnce.Do(func() { cacheDir, cacheErr = writeClients() })
	if cacheErr != nil {
		return nil, cacheErr
	}
	switch p.lang {
	case "python":
		return append([]string{Python(), filepath.Join(cacheDir, "python", p.file)}, p.args...), nil
	case "java":
		cp, err := compileJava(p.file)
		if err != nil {
			return nil, err
		}
		// stdout is the protocol: the JVM's own warnings (unified logging
		// writes them to stdout by default) go to stderr, and no
		// hsperfdata file is kept (its "locked by another process" warning
		// was the first line a client printed once).
		return append([]string{"java", "-Xlog:disable", "-Xlog:all=warning:stderr", "-XX:-UsePerfData",
			"-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp, p.file}, p.args...), nil
	}
	return nil, fmt.Errorf("unknown language %q", p.lang)
}

// writeClients copies clients.Files to <user cache>/locklab/clients/<hash>.
func writeClients() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(clients.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := clients.Files.ReadFile(path)
		fmt.Fprintf(h, "%s %d\n", path, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("client programs: %w", err)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "locklab", "clients", hex.EncodeToString(h.Sum(nil))[:16])
	err = fs.WalkDir(clients.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, path)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := clients.Files.ReadFile(path)
		if err != nil {
			return err
		}
		return writeAtomic(dst, b)
	})
	if err != nil {
		return "", fmt.Errorf("client programs: write to %s: %w", dir, err)
	}
	return dir, nil
}

// writeAtomic writes b to path through a temporary file, so two harnesses
// writing the same cache never see half a file.
func writeAtomic(path string, b []byte) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	f.Close()
	return os.Rename(f.Name(), path)
}

// compileJava compiles class (java/<class>.java) into the cache once and
// returns the classpath to run it with.
func compileJava(class string) (string, error) {
	jars := make([]string, len(CuratorJars))
	for i, j := range CuratorJars {
		jars[i] = filepath.Join(javaDir, j+".jar")
		if _, err := os.Stat(jars[i]); err != nil {
			return "", fmt.Errorf("missing %s: install libcurator-recipes-java (make deps)", jars[i])
		}
	}
	out := filepath.Join(cacheDir, "java", "classes")
	cp := strings.Join(append([]string{out}, jars...), ":")
	javacMu.Lock()
	defer javacMu.Unlock()
	if _, err := os.Stat(filepath.Join(out, class+".class")); err == nil {
		return cp, nil
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return "", fmt.Errorf("javac not found: install default-jdk-headless (make deps)")
	}
	tmp, err := os.MkdirTemp(filepath.Join(cacheDir, "java"), ".classes-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(cacheDir, "java", class+".java")
	b, err := exec.Command(javac, "-cp", strings.Join(jars, ":"), "-d", tmp, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("javac %s: %v: %s", src, err, strings.TrimSpace(string(b)))
	}
	if err := os.Rename(tmp, out); err != nil && !os.IsExist(err) {
		if _, serr := os.Stat(filepath.Join(out, class+".class")); serr != nil {
			return "", fmt.Errorf("javac output: %w", err)
		}
	}
	return cp, nil
}
