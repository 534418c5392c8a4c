package supervisor

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/internal/workerproc"
)

// The test binary is also the artifact the supervisor tests run: with
// GALE_SUPERVISOR_TEST_WORKER set it is `ARTIFACT worker --spec FILE`.
func TestMain(m *testing.M) {
	if os.Getenv("GALE_SUPERVISOR_TEST_WORKER") == "1" {
		args := os.Args[1:]
		if len(args) > 0 && args[0] == "worker" {
			args = args[1:]
		}
		os.Exit(workerproc.RunProcess("supervisor test worker", args))
	}
	if os.Getenv(hogEnv) == "1" {
		hog()
	}
	goleak.VerifyTestMain(m)
}
