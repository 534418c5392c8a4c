//go:build unix

package cli

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/proclist"
)

// TestDevChildDies: when a child of dev dies (here nimbus, whose port is
// taken), dev names it, stops the rest and exits 1, leaving no process
// behind.
func TestDevChildDies(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	dir := filepath.Join(t.TempDir(), "dev")
	p := startGale(t, "dev", "--dir", dir, "--etcd-port", "0", "--nimbus-port", strconv.Itoa(port),
		"--supervisors", "1", "--slot-base", strconv.Itoa(closedPort(t)), "--slots-per", "1")
	st := p.Wait(t)
	if st.ExitCode() != exitRuntime {
		t.Errorf("exit: %v, want code %d", st, exitRuntime)
	}
	stderr := p.Stderr()
	for _, w := range []string{"[etcd] gale etcd: serving on", "nimbus (pid ", "exited"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not contain %q", w)
		}
	}
	left, err := proclist.Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("processes left under %s: %v", dir, left)
	}
}

// TestDevFlags: bad flags are usage errors naming them, all at once.
func TestDevFlags(t *testing.T) {
	t.Parallel()
	code, _, stderr := runGale(t, "dev", "--supervisors", "-1", "--slots-per", "0", "--nimbus-port", "70000")
	if code != exitUsage {
		t.Errorf("exit code: got %d, want %d", code, exitUsage)
	}
	for _, w := range []string{"--supervisors", "--slots-per", "--nimbus-port"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not contain %q", w)
		}
	}
	code, _, stderr = runGale(t, "dev", "--slot-base", "65530", "--supervisors", "2")
	if code != exitUsage || !strings.Contains(stderr, "65537") {
		t.Errorf("slots past 65535: exit %d, stderr %q; want %d and the last port named", code, stderr, exitUsage)
	}
}
