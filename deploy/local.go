package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LabelRun labels the containers of one local run (its value is the run's
// id), so they can all be removed at its end.
const LabelRun = "org.locklab.deploy.run"

// Local says where a local run of a Job keeps its files.
type Local struct {
	// Volume is the host folder standing for the Job's results volume:
	// the container's results folder is Volume/<subPath>.
	Volume string
	// Chaos is the host's chaos binary, which merges the shards.
	Chaos string
	// Logger gets one line per shard started and finished. Default: none.
	Logger *slog.Logger
}

// Shard is how one index of a local run went.
type Shard struct {
	Index int
	Dir   string // its results folder on the host
	Log   string // the container's stdout and stderr
	Wall  time.Duration
}

// Outcome is a finished local run: the shards, the merged folder, and the
// merge's own output (the atlas summary).
type Outcome struct {
	Shards []Shard
	Merged string
	Output string
	Wall   time.Duration // shards only, not the merge
}

// ShardDir is the host folder of index i's results: the entry point writes
// <results>/shard-<i+1>.
func (l Local) ShardDir(j *Job, i int) string {
	return filepath.Join(l.Volume, filepath.FromSlash(j.SubPath), "shard-"+strconv.Itoa(i+1))
}

// DockerArgs is the `docker run` command line (after "docker") of index i:
// the container named name and labelled with run, the Job's image, command,
// args and env, JOB_COMPLETION_INDEX=i, the volume bound at the results
// folder.
func (l Local) DockerArgs(j *Job, i int, name, run string) ([]string, error) {
	vol, err := filepath.Abs(filepath.Join(l.Volume, filepath.FromSlash(j.SubPath)))
	if err != nil {
		return nil, err
	}
	a := []string{"run", "--rm", "--name", name, "--label", LabelRun + "=" + run,
		"-e", "JOB_COMPLETION_INDEX=" + strconv.Itoa(i)}
	for _, e := range j.Env {
		a = append(a, "-e", e.Name+"="+e.Value)
	}
	a = append(a, "-v", vol+":"+j.Results)
	if len(j.Command) > 0 {
		a = append(a, "--entrypoint", j.Command[0])
	}
	a = append(a, j.Image)
	if len(j.Command) > 1 {
		a = append(a, j.Command[1:]...)
	}
	return append(a, j.Args...), nil
}

// Run runs every index of j as a container, at most j.Parallelism at once
// (as the Job controller does), then merges the shards into Volume/<subPath>/merged
// with `chaos VERB merge`. A shard that fails, or ctx ending, stops the
// others; every container of the run is removed before Run returns.
func (l Local) Run(ctx context.Context, j *Job) (*Outcome, error) {
	log := l.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	verb := j.Verb()
	if verb == "" {
		return nil, fmt.Errorf("%s: the container's args name no chaos verb (atlas, explore) to merge", j.File)
	}
	if l.Chaos == "" {
		return nil, errors.New("deploy: no chaos binary to merge the shards with")
	}
	root := filepath.Join(l.Volume, filepath.FromSlash(j.SubPath))
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	run := runID()
	defer removeContainers(run, log)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := &Outcome{Shards: make([]Shard, j.Completions)}
	slots := make(chan struct{}, j.Parallelism)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range j.Completions {
		sh := &out.Shards[i]
		sh.Index, sh.Dir, sh.Log = i, l.ShardDir(j, i), filepath.Join(root, fmt.Sprintf("shard-%d.log", i+1))
		args, err := l.DockerArgs(j, i, fmt.Sprintf("locklab-%s-%d", run, i), run)
		if err != nil {
			return nil, err
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			log.Info("shard started", "index", i, "docker", strings.Join(args, " "))
			t0 := time.Now()
			err := docker(ctx, sh.Log, args)
			sh.Wall = time.Since(t0)
			if err != nil {
				cancel(fmt.Errorf("index %d: %w (log %s)", i, err, sh.Log))
				return
			}
			log.Info("shard done", "index", i, "wall", sh.Wall.Round(time.Millisecond))
		}()
	}
	wg.Wait()
	out.Wall = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return out, err
	}
	out.Merged = filepath.Join(root, "merged")
	margs := []string{verb, "merge", "--out", out.Merged}
	for _, sh := range out.Shards {
		margs = append(margs, sh.Dir)
	}
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, l.Chaos, margs...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	out.Output = buf.String()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w\n%s", l.Chaos, strings.Join(margs, " "), err, out.Output)
	}
	return out, nil
}

// docker runs `docker args...` with its output appended to logFile; an
// error carries the log's last lines.
func docker(ctx context.Context, logFile string, args []string) error {
	f, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = f, f
	// On cancel, SIGTERM: the client passes it to the container, where
	// chaos stops its runs and writes what it has (the shard resumes).
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(logFile)
		return fmt.Errorf("docker run: %w\n%s", err, tail(b, 20))
	}
	return nil
}

// removeContainers stops (SIGTERM, then SIGKILL after 20s) and removes
// every container labelled with run: a docker client that is killed does
// not stop its container, and --rm does not remove one whose client was
// killed.
func removeContainers(run string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, "docker", "ps", "-aq", "--filter", "label="+LabelRun+"="+run).Output()
	if err != nil {
		log.Warn("list containers", "run", run, "err", err)
		return
	}
	ids := strings.Fields(string(b))
	if len(ids) == 0 {
		return
	}
	if out, err := exec.CommandContext(ctx, "docker", append([]string{"stop", "-t", "20"}, ids...)...).CombinedOutput(); err != nil {
		log.Warn("stop containers", "run", run, "err", err, "output", string(out))
	}
	if out, err := exec.CommandContext(ctx, "docker", append([]string{"rm", "-f"}, ids...)...).CombinedOutput(); err != nil &&
		!strings.Contains(string(out), "No such container") {
		log.Warn("remove containers", "run", run, "err", err, "output", string(out))
	}
}

// Leftovers lists the containers labelled with run that still exist.
func Leftovers(ctx context.Context, run string) ([]string, error) {
	label := LabelRun
	if run != "" {
		label += "=" + run
	}
	b, err := exec.CommandContext(ctx, "docker", "ps", "-a", "--filter", "label="+label, "--format", "{{.Names}}").Output()
	if err != nil {
		return nil, fmt.Errorf("docker ps: %w", err)
	}
	return strings.Fields(string(b)), nil
}

func runID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// tail is the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
