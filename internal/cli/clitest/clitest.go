// Package clitest runs a Gale command line in a test: the helpers that
// internal/cli's tests and those of the stock binary's commands
// (internal/stock) share. Only tests import it.
package clitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// MainEnv, set to 1, makes a test binary whose TestMain checks it the
// command line under test (os.Exit(run(os.Args[1:], ...))): how a
// test starts it as a process of its own, and how the commands that
// start this program again (run --workers, dev, the benches) find it.
const MainEnv = "GALE_CMD_TEST_AS_GALE"

// RunFunc runs a command line (without the program name) and returns its
// exit code, as cli.Run does.
type RunFunc func(args []string, stdout, stderr io.Writer) int

// SyncBuffer is a bytes.Buffer safe for concurrent writes: a command
// writes its live lines (a monitor goroutine) and warnings (executors)
// to stderr from different goroutines, as os.Stderr allows.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Run runs the command line args in this process and returns its exit
// code, stdout and stderr; the test's log gets the stderr.
func Run(t testing.TB, run RunFunc, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut SyncBuffer
	code = run(args, &out, &errOut)
	stdout, stderr = out.String(), errOut.String()
	t.Logf("gale %s → exit %d\nstderr:\n%s", strings.Join(args, " "), code, stderr)
	return code, stdout, stderr
}

// DecodeOne decodes s, a command's stdout, into v, failing the test
// unless s is exactly one JSON document.
func DecodeOne(t testing.TB, s string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not a JSON document: %v\n%s", err, s)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("stdout has more than one JSON document (then %q, err %v):\n%s", extra, err, s)
	}
}

// ExitCase is a command line and the exit code it must give.
type ExitCase struct {
	Name string
	Args []string
	Code int
	// Stderr must contain each of these.
	Stderr []string
}

// ExitCodes runs each case in parallel: the exit code must be the
// case's, stderr contain its strings, and a success (code 0) print help
// on stdout and nothing on stderr.
func ExitCodes(t *testing.T, run RunFunc, cases []ExitCase) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := Run(t, run, tt.Args...)
			if code != tt.Code {
				t.Errorf("exit code: got %d, want %d", code, tt.Code)
			}
			for _, want := range tt.Stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not contain %q", want)
				}
			}
			if tt.Code == 0 {
				if !strings.Contains(stdout, "Usage:") {
					t.Errorf("stdout has no help (no %q):\n%s", "Usage:", stdout)
				}
				if stderr != "" {
					t.Errorf("stderr: got %q, want nothing", stderr)
				}
			}
		})
	}
}

// ClosedPort is a port of 127.0.0.1 nothing listens on (it did a moment
// ago).
func ClosedPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}
