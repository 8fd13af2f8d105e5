// Package deploy reads locklab's Kubernetes Indexed Job manifests
// (deploy/k8s/*.yaml) and runs them on the local Docker engine the way the
// Job would: one container of the manifest's image per completion index,
// with the manifest's command, args and environment, JOB_COMPLETION_INDEX
// set, and the results volume bound to a host folder; then it merges the
// shards with `chaos VERB merge`. `make deploy-local` and the package's test
// run a manifest through it, so the manifest and its verification cannot
// drift apart. docs/deploy.md is the user's guide.
// It imports nothing of locklab: it runs the chaos binary and never
// imports atlas, explore or the commands; only deploy/runlocal imports it
// (docs/architecture.md).
package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ShardsEnv is the variable that tells the entry point (deploy/entrypoint.sh)
// the shard count; a Job's manifest sets it to its completions.
const ShardsEnv = "LOCKLAB_SHARDS"

// ResultsEnv names the entry point's results folder inside the container;
// DefaultResults when unset.
const (
	ResultsEnv     = "LOCKLAB_RESULTS"
	DefaultResults = "/results"
)

// Job is what a run needs of an Indexed Job manifest: its one container and
// how many indices it runs.
type Job struct {
	File string // the manifest it was read from
	Name string // metadata.name
	// Completions is the number of indices (0 .. Completions-1), each one
	// shard; Parallelism how many run at once (default Completions, as in
	// Kubernetes).
	Completions, Parallelism int
	Image                    string
	// Command replaces the image's entry point when set; Args are its
	// arguments (Kubernetes' command and args).
	Command, Args []string
	Env           []EnvVar
	// Results is the container path of the results volume; SubPath the
	// folder of the volume mounted there ("" for its root).
	Results, SubPath string
}

// EnvVar is one name: value of a container's env list.
type EnvVar struct {
	Name  string `yaml:"name"`
	Value string `yaml:"value"`
}

// Verb is the chaos verb the Job runs (atlas, explore): the first argument
// that is not an entry point option. "" when Command replaces the entry
// point.
func (j *Job) Verb() string {
	if len(j.Command) > 0 {
		return ""
	}
	for i := 0; i < len(j.Args); i++ {
		switch a := j.Args[i]; {
		case a == "--index" || a == "--shards":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// Getenv is the value of the container's variable name, and whether it is
// set.
func (j *Job) Getenv(name string) (string, bool) {
	for _, e := range j.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// manifest is the part of a batch/v1 Job that a run reads.
type manifest struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    *int   `yaml:"completions"`
		Parallelism    *int   `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				Containers []struct {
					Name         string   `yaml:"name"`
					Image        string   `yaml:"image"`
					Command      []string `yaml:"command"`
					Args         []string `yaml:"args"`
					Env          []EnvVar `yaml:"env"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
						SubPath   string `yaml:"subPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// ReadJob reads the Indexed Job of the manifest file (the first document of
// kind Job; other documents, a PersistentVolumeClaim, are skipped). It
// fails, naming the file, line and field, unless the Job is Indexed, has
// one container with an image, sets LOCKLAB_SHARDS to its completions and
// mounts a volume at the entry point's results folder.
func ReadJob(file string) (*Job, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s: no document of kind Job", file)
			}
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		var m manifest
		if err := doc.Decode(&m); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if m.Kind == "Job" {
			return job(file, &doc, &m)
		}
	}
}

// job checks m and returns its Job; doc gives the line numbers.
func job(file string, doc *yaml.Node, m *manifest) (*Job, error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s: %s", file, line(doc, field), field, fmt.Sprintf(format, args...))
	}
	if m.APIVersion != "batch/v1" {
		return nil, bad("apiVersion", "%q, want batch/v1", m.APIVersion)
	}
	s := &m.Spec
	if s.CompletionMode != "Indexed" {
		return nil, bad("spec.completionMode", "%q, want Indexed (each pod is one shard, numbered by JOB_COMPLETION_INDEX)", s.CompletionMode)
	}
	if s.Completions == nil || *s.Completions < 1 {
		return nil, bad("spec.completions", "want the number of shards, at least 1")
	}
	j := &Job{File: file, Name: m.Metadata.Name, Completions: *s.Completions, Parallelism: *s.Completions}
	if s.Parallelism != nil {
		if *s.Parallelism < 1 {
			return nil, bad("spec.parallelism", "%d, want at least 1", *s.Parallelism)
		}
		j.Parallelism = min(*s.Parallelism, j.Completions)
	}
	cs := s.Template.Spec.Containers
	if len(cs) != 1 {
		return nil, bad("spec.template.spec.containers", "%d containers, want one (the shard)", len(cs))
	}
	c := cs[0]
	if c.Image == "" {
		return nil, bad("spec.template.spec.containers", "container %q names no image", c.Name)
	}
	j.Image, j.Command, j.Args, j.Env = c.Image, c.Command, c.Args, c.Env
	if v, ok := j.Getenv(ShardsEnv); !ok || v != strconv.Itoa(j.Completions) {
		return nil, bad("spec.template.spec.containers", "env %s is %q, want %d, the completions: the entry point maps index i to --shard i+1/%s",
			ShardsEnv, v, j.Completions, ShardsEnv)
	}
	j.Results = DefaultResults
	if v, ok := j.Getenv(ResultsEnv); ok {
		j.Results = v
	}
	found := false
	for _, vm := range c.VolumeMounts {
		if path.Clean(vm.MountPath) == path.Clean(j.Results) {
			j.SubPath, found = vm.SubPath, true
		}
	}
	if !found {
		return nil, bad("spec.template.spec.containers", "no volumeMounts entry at %s, where the shards write their results", j.Results)
	}
	return j, nil
}

// line is the line of the dotted field in doc, or of the deepest part of it
// that exists (a missing field is reported where it belongs).
func line(doc *yaml.Node, field string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	at := n.Line
	for _, key := range strings.Split(field, ".") {
		next := (*yaml.Node)(nil)
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					at, next = n.Content[i].Line, n.Content[i+1]
				}
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return at
}
