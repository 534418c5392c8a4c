//go:build unix

package stock

import (
	"net"
	"os"
	"os/exec"
	"testing"

	"github.com/gale-stream/gale/internal/proctest"
)

// startGale runs this test binary as the stock gale with args, in a
// process of its own, so that signals reach it and nothing else.
func startGale(t *testing.T, args ...string) *proctest.Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), galeMainEnv+"=1")
	return proctest.Start(t, cmd)
}

// closedPort is a port of 127.0.0.1 nothing listens on (it did a moment
// ago).
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}
