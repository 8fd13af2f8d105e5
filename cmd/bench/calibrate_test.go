package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/locklab/locklab/calibrate"
	"github.com/locklab/locklab/cmd/internal/cli"
)

func TestCalibrateJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"calibrate", "--backends", "mem", "--duration", "200ms", "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("calibrate: %v\n%s", err, stderr.String())
	}
	var f calibrate.Figures
	if err := json.Unmarshal(stdout.Bytes(), &f); err != nil {
		t.Fatalf("--json output is not the figures: %v\n%s", err, stdout.String())
	}
	if f.Mem == nil || f.Mem.Rate <= 0 || f.Redis != nil {
		t.Errorf("figures %s, want the mem ceiling only", stdout.String())
	}
}

func TestCalibrateBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--clients", "many"}, {"extra"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"calibrate"}, args...), &stdout, &stderr)
		var ue *cli.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("calibrate %v = %v, want a usage error", args, err)
		}
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"calibrate", "--backends", "mem,consul"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), `unknown backend "consul"`) {
		t.Errorf("calibrate --backends mem,consul = %v", err)
	}
}
