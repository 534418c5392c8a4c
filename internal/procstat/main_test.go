package procstat

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary a process that waits for its stdin to
// close, with a path under a directory among its arguments.
const helperEnv = "GALE_PROC_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Stdin.Read(make([]byte, 1))
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
