package cli

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/examples/wordcount"
)

// TestMain checks that no command leaves a goroutine behind. Run's
// signal.Notify starts os/signal's watcher goroutine (top function
// os/signal.signal_recv, and runtime.ensureSigM), which lives for the rest of
// the process; goleak v1.3.0 already treats both as standard-library
// goroutines, so no IgnoreTopFunction is needed.
//
// Run with galeMainEnv set, the test binary is gale itself: `gale bench
// --workers` starts its worker processes from this binary, and the signal
// tests run it in a process of its own.
func TestMain(m *testing.M) {
	if os.Getenv(galeMainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

const galeMainEnv = "GALE_CMD_TEST_AS_GALE"

// testOptions are the command line under test: gale with the stock
// binary's topologies and the tests' own.
var testOptions = Options{Name: "gale", Topologies: []Topology{
	{Name: "wordcount", Short: "the classic word count", Build: wordcount.Build},
	{Name: "stuck", Short: "trees that never complete (tests)", Build: buildStuck},
}}

// run runs the command line under test.
func run(args []string, stdout, stderr io.Writer) int {
	return Run(args, stdout, stderr, testOptions)
}

// syncBuffer is a bytes.Buffer safe for concurrent writes: a bench run writes
// its live lines (monitor goroutine) and warnings (executors) to stderr from
// different goroutines, as os.Stderr allows.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runGale runs the command line args in this process and returns its exit code,
// stdout and stderr.
func runGale(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut syncBuffer
	code = run(args, &out, &errOut)
	stdout, stderr = out.String(), errOut.String()
	t.Logf("gale %s → exit %d\nstderr:\n%s", strings.Join(args, " "), code, stderr)
	return code, stdout, stderr
}
