package bench

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/internal/testutil"
)

// spinEnv, set to a duration, makes the test binary burn that much CPU and exit
// instead of running tests: a child process for TestRunCountsChildCPU.
const spinEnv = "GALE_BENCH_TEST_SPIN_CPU"

func TestMain(m *testing.M) {
	if d := os.Getenv(spinEnv); d != "" {
		os.Exit(spinCPU(d))
	}
	goleak.VerifyTestMain(m)
}

// spinCPU burns CPU in one goroutine until this process has used d of CPU time (not
// wall time, so a busy machine only makes it take longer), and returns the exit code.
func spinCPU(d string) int {
	want, err := time.ParseDuration(d)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", spinEnv, err)
		return 2
	}
	deadline := time.Now().Add(time.Minute) // in case the machine starves this process
	x := uint64(1)
	for time.Now().Before(deadline) {
		for range 1_000_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		cpu, _, err := rusage()
		if err != nil {
			fmt.Fprintf(os.Stderr, "spin: %v\n", err)
			return 2
		}
		if cpu >= want {
			fmt.Fprintln(os.Stderr, x) // keeps the loop from being optimised away
			return 0
		}
	}
	fmt.Fprintf(os.Stderr, "spin: did not get %v of CPU within a minute\n", want)
	return 3
}

// testSeed returns the seed for a randomized test and logs how to replay it.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	return testutil.Seed(t)
}
