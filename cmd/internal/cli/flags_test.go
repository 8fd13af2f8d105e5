package cli

import (
	"errors"
	"flag"
	"io"
	"slices"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantPos  []string
		wantDur  time.Duration
		wantOut  string
		wantQ    bool
		wantErr  bool
		wantHelp bool
	}{
		{name: "flags first", args: []string{"--duration", "5s", "a"}, wantPos: []string{"a"}, wantDur: 5 * time.Second},
		{name: "flags after", args: []string{"a", "--duration", "5s"}, wantPos: []string{"a"}, wantDur: 5 * time.Second},
		{name: "interspersed", args: []string{"a", "-q", "b", "--out=x", "c"}, wantPos: []string{"a", "b", "c"}, wantOut: "x", wantQ: true},
		{name: "dashes end flags", args: []string{"-q", "--", "cmd", "--duration", "9s"}, wantPos: []string{"cmd", "--duration", "9s"}, wantQ: true},
		{name: "dashes after positional", args: []string{"a", "--", "-q"}, wantPos: []string{"a", "-q"}},
		{name: "dashes as a value", args: []string{"--out", "--", "a"}, wantPos: []string{"a"}, wantOut: "--"},
		{name: "bool then dashes", args: []string{"-q", "--out", "o", "--", "--out", "p"}, wantPos: []string{"--out", "p"}, wantOut: "o", wantQ: true},
		{name: "none", args: nil, wantPos: []string{}},
		{name: "lone dash is positional", args: []string{"-", "-q"}, wantPos: []string{"-"}, wantQ: true},
		{name: "unknown flag after positional", args: []string{"a", "--durration", "5s"}, wantErr: true},
		{name: "missing value", args: []string{"a", "--duration"}, wantErr: true},
		{name: "help anywhere", args: []string{"a", "--help"}, wantHelp: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			dur := fs.Duration("duration", 0, "")
			out := fs.String("out", "", "")
			q := fs.Bool("q", false, "")
			pos, err := ParseFlags(fs, tt.args)
			switch {
			case tt.wantHelp:
				if !errors.Is(err, flag.ErrHelp) {
					t.Fatalf("err %v, want flag.ErrHelp", err)
				}
				return
			case tt.wantErr:
				var ue *UsageError
				if !errors.As(err, &ue) {
					t.Fatalf("err %v, want a *UsageError", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !slices.Equal(pos, tt.wantPos) {
				t.Errorf("positional %q, want %q", pos, tt.wantPos)
			}
			if !slices.Equal(fs.Args(), tt.wantPos) {
				t.Errorf("fs.Args() %q, want %q", fs.Args(), tt.wantPos)
			}
			if *dur != tt.wantDur || *out != tt.wantOut || *q != tt.wantQ {
				t.Errorf("duration %v out %q q %v, want %v %q %v", *dur, *out, *q, tt.wantDur, tt.wantOut, tt.wantQ)
			}
		})
	}
}
