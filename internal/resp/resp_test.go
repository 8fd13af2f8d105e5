package resp

import (
	"bufio"
	"reflect"
	"strings"
	"testing"
)

func TestAppendCommand(t *testing.T) {
	got := string(AppendCommand([]byte("x"), "SET", "k", ""))
	if want := "x*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"; got != want {
		t.Errorf("AppendCommand = %q, want %q", got, want)
	}
}

func TestRead(t *testing.T) {
	for in, want := range map[string]any{
		"+OK\r\n":                       "OK",
		"-ERR wrong\r\n":                Error("ERR wrong"),
		":42\r\n":                       int64(42),
		"$5\r\nhe\r\nl\r\n":             "he\r\nl",
		"$-1\r\n":                       nil,
		"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n": []any{int64(1), []any{"x"}},
	} {
		got, err := Read(bufio.NewReader(strings.NewReader(in)))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Read(%q) = %#v, %v; want %#v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "\r\n", "?1\r\n", ":x\r\n", "$3\r\nab"} {
		if got, err := Read(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("Read(%q) = %#v, want an error", in, got)
		}
	}
}
