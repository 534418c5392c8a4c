//go:build unix

package clitest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/gale-stream/gale/internal/proctest"
)

// Start runs this test binary as the command line under test (MainEnv)
// with args, in a process of its own, so that signals reach it and
// nothing else.
func Start(t *testing.T, args ...string) *proctest.Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), MainEnv+"=1")
	return proctest.Start(t, cmd)
}
