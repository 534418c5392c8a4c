//go:build unix

package clitest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/gale-stream/gale/internal/testutil"
)

// Start runs this test binary as the command line under test (MainEnv)
// with args, in a process of its own, so that signals reach it and
// nothing else.
func Start(t *testing.T, args ...string) *testutil.Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), MainEnv+"=1")
	return testutil.StartProc(t, cmd)
}
