package stock

import (
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/cli/clitest"
)

// TestMain checks that no command leaves a goroutine behind (os/signal's
// watcher, which Run starts and which lives for the rest of the process,
// is a standard-library goroutine to goleak).
//
// Run with clitest.MainEnv set, the test binary is the stock gale itself:
// `gale bench --workers`, dev and the benches start their worker, nimbus
// and supervisor processes from this binary.
func TestMain(m *testing.M) {
	if os.Getenv(clitest.MainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

// Exit codes, as internal/cli's.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
)

// testOptions are the command line under test: the stock gale.
var testOptions = Options(cli.Options{Name: "gale", Topologies: Topologies})

// run runs the command line under test.
func run(args []string, stdout, stderr io.Writer) int {
	return cli.Run(args, stdout, stderr, testOptions)
}

// runGale runs the command line args in this process and returns its exit code,
// stdout and stderr.
func runGale(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(t, run, args...)
}
