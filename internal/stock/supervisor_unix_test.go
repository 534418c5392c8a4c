//go:build unix

package stock

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gale-stream/gale/internal/cli/clitest"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/coord/etcdembed"
)

// TestSupervisorCommand runs `gale supervisor` against an embedded etcd:
// it prints its ready line with the id, host and slots, registers in
// etcd, stops in order on SIGTERM, and keeps its id in --dir, so that a
// restart with another --id is refused.
func TestSupervisorCommand(t *testing.T) {
	e, err := etcdembed.Start(etcdembed.Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"})
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

	p := clitest.Start(t, "supervisor", "--dir", dir, "--ports", "6790,6791", "--etcd", e.Endpoints[0], "--id", "sup-a")
	p.WaitLineContaining(t, "gale supervisor: sup-a on 127.0.0.1 slots 6790,6791")
	sups, err := store.Supervisors(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(sups) != 1 || sups[0].ID != "sup-a" || len(sups[0].Ports) != 2 || sups[0].Ports[0] != 6790 {
		t.Fatalf("supervisors in etcd: %+v, want sup-a with slots 6790, 6791", sups)
	}
	// gale supervisor status asks the supervisor itself.
	if code, out, errOut := runGale(t, "supervisor", "status", "--dir", dir); code != exitOK || !strings.Contains(out, "supervisor sup-a: 0 workers") {
		t.Errorf("supervisor status: exit %d, stdout %q, stderr %q; want 0 and sup-a with 0 workers", code, out, errOut)
	}
	if code, out, _ := runGale(t, "supervisor", "status", "--dir", dir, "--json"); code != exitOK || !strings.Contains(out, `"supervisor": "sup-a"`) {
		t.Errorf("supervisor status --json: exit %d, stdout %q; want 0 and sup-a", code, out)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if st := p.Wait(t); st.ExitCode() != exitOK {
		t.Fatalf("exit after SIGTERM: %v, want 0", st)
	}
	if code, _, errOut := runGale(t, "supervisor", "status", "--dir", dir); code != exitRuntime || !strings.Contains(errOut, "no supervisor answers") {
		t.Errorf("supervisor status of a stopped supervisor: exit %d, stderr %q; want %d saying no supervisor answers", code, errOut, exitRuntime)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "id")); err != nil || strings.TrimSpace(string(b)) != "sup-a" {
		t.Fatalf("--dir's id: %q, %v; want sup-a", b, err)
	}

	p = clitest.Start(t, "supervisor", "--dir", dir, "--etcd", e.Endpoints[0], "--id", "sup-b")
	if st := p.Wait(t); st.ExitCode() != exitRuntime || !strings.Contains(p.Stderr(), `is supervisor "sup-a"'s`) {
		t.Fatalf("a restart with another id: exit %v, stderr %q; want code 1 naming sup-a", st, p.Stderr())
	}
}

// TestSupervisorCommandBadTLSCert: a nimbus.tls.cert that holds no
// certificate is an error naming it, before the supervisor joins.
func TestSupervisorCommandBadTLSCert(t *testing.T) {
	dir, err := os.MkdirTemp("", "gale-c")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cert := filepath.Join(dir, "cert.pem")
	yaml := filepath.Join(dir, "gale.yaml")
	os.WriteFile(cert, []byte("not a certificate"), 0o600)
	os.WriteFile(yaml, []byte("nimbus.tls.cert: "+cert+"\n"), 0o600)
	p := clitest.Start(t, "supervisor", "--dir", filepath.Join(dir, "s"), "--file", yaml, "--etcd", "http://127.0.0.1:1")
	if st := p.Wait(t); st.ExitCode() != exitRuntime || !strings.Contains(p.Stderr(), "nimbus.tls.cert "+cert+" holds no PEM certificate") {
		t.Fatalf("exit %v, stderr %q; want code 1 naming the certificate file", st, p.Stderr())
	}
}

// TestSupervisorCommandRefusesWildcardHost: --host 0.0.0.0 (or ::) would
// register an address no peer can dial; it is refused before the
// supervisor keeps an id or dials etcd, saying what to pass.
func TestSupervisorCommandRefusesWildcardHost(t *testing.T) {
	for _, host := range []string{"0.0.0.0", "::", "[::]", "0:0::0"} {
		t.Run(host, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			code, _, errOut := runGale(t, "supervisor", "--dir", dir, "--host", host, "--etcd", "http://127.0.0.1:1")
			if code != exitUsage || !strings.Contains(errOut, "host "+host+" is the wildcard address") ||
				!strings.Contains(errOut, "this machine's address that the other machines reach") {
				t.Errorf("exit %d, stderr %q; want %d refusing %s and saying what to pass", code, errOut, exitUsage, host)
			}
			if _, err := os.Stat(filepath.Join(dir, "id")); err == nil {
				t.Errorf("the refused supervisor kept an id in %s", dir)
			}
		})
	}
}

// TestSupervisorDrainCommand: `gale supervisor drain --dir DIR` takes an
// idle supervisor out of etcd and says it is drained; the supervisor stays
// up until SIGTERM. Without a supervisor in DIR it says none answers.
func TestSupervisorDrainCommand(t *testing.T) {
	e, err := etcdembed.Start(etcdembed.Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"})
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

	if code, _, errOut := runGale(t, "supervisor", "drain"); code != exitUsage || !strings.Contains(errOut, "--dir is required") {
		t.Errorf("drain without --dir: exit %d, stderr %q; want %d asking for --dir", code, errOut, exitUsage)
	}
	if code, _, errOut := runGale(t, "supervisor", "drain", "--dir", dir); code != exitRuntime || !strings.Contains(errOut, "no supervisor answers") {
		t.Errorf("drain with no supervisor: exit %d, stderr %q; want %d saying no supervisor answers", code, errOut, exitRuntime)
	}
	p := clitest.Start(t, "supervisor", "--dir", dir, "--ports", "6792", "--etcd", e.Endpoints[0], "--id", "sup-d")
	p.WaitLineContaining(t, "gale supervisor: sup-d on 127.0.0.1 slots 6792")
	code, out, errOut := runGale(t, "supervisor", "drain", "--dir", dir)
	if code != exitOK || !strings.Contains(out, "supervisor sup-d left the cluster") || !strings.Contains(out, "supervisor sup-d drained") {
		t.Errorf("drain: exit %d, stdout %q, stderr %q; want 0, left and drained", code, out, errOut)
	}
	if sups, err := store.Supervisors(t.Context()); err != nil || len(sups) != 0 {
		t.Errorf("supervisors in etcd after the drain: %+v (%v); want none", sups, err)
	}
	if code, out, _ := runGale(t, "supervisor", "drain", "--dir", dir, "--json"); code != exitOK || !strings.Contains(out, `"drained": true`) {
		t.Errorf("drain --json of a drained supervisor: exit %d, stdout %q; want 0 and drained", code, out)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if st := p.Wait(t); st.ExitCode() != exitOK {
		t.Fatalf("exit after SIGTERM: %v, want 0", st)
	}
}
