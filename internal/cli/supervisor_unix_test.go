//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gale-stream/gale/internal/coord"
)

// TestSupervisorCommand runs `gale supervisor` against an embedded etcd:
// it prints its ready line with the id, host and slots, registers in
// etcd, stops in order on SIGTERM, and keeps its id in --dir, so that a
// restart with another --id is refused.
func TestSupervisorCommand(t *testing.T) {
	e, err := coord.StartEmbedded(coord.EmbeddedConfig{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := coord.Dial(e.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	store := coord.NewStore(c)
	defer store.Close()
	dir, err := os.MkdirTemp("", "gale-c")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)

	p := startGale(t, "supervisor", "--dir", dir, "--ports", "6790,6791", "--etcd", e.Endpoints[0], "--id", "sup-a")
	p.WaitLineContaining(t, "gale supervisor: sup-a on 127.0.0.1 slots 6790,6791")
	sups, err := store.Supervisors(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(sups) != 1 || sups[0].ID != "sup-a" || len(sups[0].Ports) != 2 || sups[0].Ports[0] != 6790 {
		t.Fatalf("supervisors in etcd: %+v, want sup-a with slots 6790, 6791", sups)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if st := p.Wait(t); st.ExitCode() != exitOK {
		t.Fatalf("exit after SIGTERM: %v, want 0", st)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "id")); err != nil || strings.TrimSpace(string(b)) != "sup-a" {
		t.Fatalf("--dir's id: %q, %v; want sup-a", b, err)
	}

	p = startGale(t, "supervisor", "--dir", dir, "--etcd", e.Endpoints[0], "--id", "sup-b")
	if st := p.Wait(t); st.ExitCode() != exitRuntime || !strings.Contains(p.Stderr(), `is supervisor "sup-a"'s`) {
		t.Fatalf("a restart with another id: exit %v, stderr %q; want code 1 naming sup-a", st, p.Stderr())
	}
}
