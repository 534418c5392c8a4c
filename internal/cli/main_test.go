package cli

import (
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/examples/wordcount"
	"github.com/gale-stream/gale/internal/cli/clitest"
)

// TestMain checks that no command leaves a goroutine behind. Run's
// signal.Notify starts os/signal's watcher goroutine (top function
// os/signal.signal_recv, and runtime.ensureSigM), which lives for the rest of
// the process; goleak v1.3.0 already treats both as standard-library
// goroutines, so no IgnoreTopFunction is needed.
//
// Run with clitest.MainEnv set, the test binary is gale itself: `gale run
// --workers` starts its worker processes from this binary, and the signal
// tests run it in a process of its own.
func TestMain(m *testing.M) {
	if os.Getenv(clitest.MainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

// testOptions are the command line under test: a program with the word
// count and the tests' own topology, as a user's would be.
var testOptions = Options{Name: "gale", Topologies: []Topology{
	{Name: "wordcount", Short: "the classic word count", Build: wordcount.Build},
	{Name: "stuck", Short: "trees that never complete (tests)", Build: buildStuck},
}}

// run runs the command line under test.
func run(args []string, stdout, stderr io.Writer) int {
	return Run(args, stdout, stderr, testOptions)
}

// runGale runs the command line args in this process and returns its exit code,
// stdout and stderr.
func runGale(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, run, args...)
}
