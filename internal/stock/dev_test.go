//go:build unix

package stock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/cli/clitest"
	"github.com/gale-stream/gale/internal/devcluster"
	"github.com/gale-stream/gale/internal/freeport"
	"github.com/gale-stream/gale/internal/procstat"
	"github.com/gale-stream/gale/internal/testutil"
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
	p := clitest.Start(t, "dev", "--dir", dir, "--etcd-port", "0", "--nimbus-port", strconv.Itoa(port),
		"--supervisors", "1", "--slot-base", strconv.Itoa(clitest.ClosedPort(t)), "--slots-per", "1")
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
	left, err := procstat.Under(dir)
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
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	code, _, stderr = runGale(t, "dev", "--file", missing)
	if code != exitRuntime || !strings.Contains(stderr, missing) || strings.Contains(stderr, "[etcd]") {
		t.Errorf("missing --file: exit %d, stderr %q; want %d naming it, before anything starts", code, stderr, exitRuntime)
	}
	code, _, stderr = runGale(t, "dev", "--slot-base", "65530", "--supervisors", "2")
	if code != exitUsage || !strings.Contains(stderr, "65537") {
		t.Errorf("slots past 65535: exit %d, stderr %q; want %d and the last port named", code, stderr, exitUsage)
	}
}

// fakeClusterEnv makes this test binary, run as gale, answer the
// nimbus and supervisor commands with stand-ins, so that dev's own work is
// tested whatever those commands do: a nimbus that listens, and a
// supervisor that starts a worker in a session of its own and leaves it
// running when stopped, as the real one does.
const fakeClusterEnv = "GALE_CLI_TEST_FAKE_CLUSTER"

// fakeInheritEnv gives the fake supervisor's worker the supervisor's
// stderr, which it then holds open after the supervisor exits.
const fakeInheritEnv = "GALE_CLI_TEST_FAKE_INHERIT"

// fakeCrashEnv names the directory suffix of the fake supervisor that
// exits with status 3 once the file crash-now appears beside its directory.
const fakeCrashEnv = "GALE_CLI_TEST_FAKE_CRASH"

func init() {
	if os.Getenv(fakeClusterEnv) != "1" || len(os.Args) < 2 {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	flags := func(args []string) map[string]string {
		m := make(map[string]string)
		for i := 0; i+1 < len(args); i += 2 {
			m[args[i]] = args[i+1]
		}
		return m
	}
	switch os.Args[1] {
	case "nimbus":
		f := flags(os.Args[2:])
		ln, err := net.Listen("tcp", net.JoinHostPort(f["--host"], f["--port"]))
		if err != nil {
			fmt.Fprintln(os.Stderr, "gale:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "gale nimbus: serving on %s (id fake)\n", ln.Addr())
		<-ctx.Done()
		ln.Close()
		os.Exit(0)
	case "supervisor":
		f := flags(os.Args[2:])
		// As a real supervisor's, the worker runs a program under the
		// supervisor's directory (there, its artifact).
		prog := filepath.Join(f["--dir"], "artifacts", "fake")
		if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "gale:", err)
			os.Exit(1)
		}
		if err := os.Symlink(os.Args[0], prog); err != nil && !errors.Is(err, os.ErrExist) {
			fmt.Fprintln(os.Stderr, "gale:", err)
			os.Exit(1)
		}
		w := exec.Command(prog, "fake-worker", "--spec", filepath.Join(f["--dir"], "worker.json"))
		w.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if os.Getenv(fakeInheritEnv) == "1" {
			w.Stderr = os.Stderr // holds dev's pipe after the supervisor exits
		}
		if err := w.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "gale:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "gale supervisor: worker pid %d; slots %s\n", w.Process.Pid, f["--ports"])
		if d := os.Getenv(fakeCrashEnv); d != "" && strings.HasSuffix(f["--dir"], d) {
			// Crash once ready, as a supervisor might, after dev's
			// "ready" line (a file the test writes).
			for {
				if _, err := os.Stat(filepath.Join(filepath.Dir(f["--dir"]), "crash-now")); err == nil {
					os.Exit(3)
				}
				select {
				case <-ctx.Done():
					os.Exit(0)
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
		<-ctx.Done()
		os.Exit(0) // the worker keeps running
	case "fake-worker":
		<-ctx.Done()
		os.Exit(0)
	}
}

// TestDevStopsEverything: on SIGINT dev stops its supervisors, the
// workers they left running, nimbus and etcd: no process is left, even
// when a worker holds its supervisor's stderr open.
func TestDevStopsEverything(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "dev")
	cmd := exec.Command(os.Args[0], "dev", "--json", "--dir", dir, "--etcd-port", "0",
		"--nimbus-port", strconv.Itoa(clitest.ClosedPort(t)), "--supervisors", "2", "--slots-per", "1",
		"--slot-base", strconv.Itoa(clitest.ClosedPort(t)))
	cmd.Env = append(os.Environ(), clitest.MainEnv+"=1", fakeClusterEnv+"=1", fakeInheritEnv+"=1")
	p := testutil.StartProc(t, cmd)
	p.WaitLineContaining(t, "the cluster is ready")
	running, err := procstat.Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	// dev, etcd, nimbus, two supervisors and their two workers.
	workers := 0
	for _, r := range running {
		if r.Args[1] == "fake-worker" {
			workers++
		}
	}
	if len(running) != 7 || workers != 2 {
		t.Errorf("processes under %s: got %d with %d workers, want 7 with 2: %v", dir, len(running), workers, running)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if st := p.Wait(t); st.ExitCode() != exitOK {
		t.Errorf("exit: %v, want code 0", st)
	}
	var r devcluster.Report
	clitest.DecodeOne(t, p.Stdout.String(), &r)
	if r.Dir != dir || r.Temporary || len(r.Supervisors) != 2 || r.Nimbus.PID == 0 || !strings.HasPrefix(r.Etcd.Addr, "http://127.0.0.1:") {
		t.Errorf("report: %+v", r)
	}
	left, err := procstat.Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("processes left under %s: %v", dir, left)
	}
	if !strings.Contains(p.Stderr(), "[supervisor-1] gale supervisor: worker pid") {
		t.Errorf("stderr has no supervisor output, prefixed")
	}
}

// TestDevSupervisorDies: a supervisor that dies while the cluster runs is
// named; dev stops the rest (the workers included) and exits 1.
func TestDevSupervisorDies(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "dev")
	cmd := exec.Command(os.Args[0], "dev", "--dir", dir, "--etcd-port", "0",
		"--nimbus-port", strconv.Itoa(clitest.ClosedPort(t)), "--supervisors", "2", "--slots-per", "1",
		"--slot-base", strconv.Itoa(clitest.ClosedPort(t)))
	cmd.Env = append(os.Environ(), clitest.MainEnv+"=1", fakeClusterEnv+"=1", fakeCrashEnv+"=supervisor-1")
	p := testutil.StartProc(t, cmd)
	p.WaitLineContaining(t, "the cluster is ready")
	if err := os.WriteFile(filepath.Join(dir, "crash-now"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := p.Wait(t); st.ExitCode() != exitRuntime {
		t.Errorf("exit: %v, want code %d", st, exitRuntime)
	}
	if !strings.Contains(p.Stderr(), "supervisor-1 (pid ") || !strings.Contains(p.Stderr(), "exit status 3") {
		t.Errorf("stderr does not name supervisor-1 and how it exited")
	}
	left, err := procstat.Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("processes left under %s: %v", dir, left)
	}
}

// TestDevNimbuses: --nimbuses 2 starts two nimbuses on --nimbus-port and
// the next port, one after the other, reports both, and stops both.
func TestDevNimbuses(t *testing.T) {
	t.Parallel()
	port, err := freeport.Consecutive(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "dev")
	cmd := exec.Command(os.Args[0], "dev", "--json", "--dir", dir, "--etcd-port", "0", "--nimbuses", "2",
		"--nimbus-port", strconv.Itoa(port), "--supervisors", "1", "--slots-per", "1", "--slot-base", strconv.Itoa(clitest.ClosedPort(t)), "--ui-port", "0")
	cmd.Env = append(os.Environ(), clitest.MainEnv+"=1", fakeClusterEnv+"=1")
	p := testutil.StartProc(t, cmd)
	p.WaitLineContaining(t, "the cluster is ready")
	running, err := procstat.Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	nimbuses := 0
	for _, r := range running {
		if len(r.Args) > 1 && r.Args[1] == "nimbus" {
			nimbuses++
		}
	}
	if nimbuses != 2 {
		t.Errorf("%d nimbus processes under %s, want 2: %v", nimbuses, dir, running)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if st := p.Wait(t); st.ExitCode() != exitOK {
		t.Errorf("exit: %v, want code 0", st)
	}
	var r devcluster.Report
	clitest.DecodeOne(t, p.Stdout.String(), &r)
	want := []string{"127.0.0.1:" + strconv.Itoa(port), "127.0.0.1:" + strconv.Itoa(port+1)}
	if len(r.Nimbuses) != 2 || r.Nimbuses[0].Addr != want[0] || r.Nimbuses[1].Addr != want[1] || r.Nimbus != r.Nimbuses[0] ||
		r.Nimbuses[0].Dir == r.Nimbuses[1].Dir || r.Nimbuses[1].PID == 0 {
		t.Errorf("report's nimbuses %+v (nimbus %+v): want two at %v, the first as nimbus, each its own directory", r.Nimbuses, r.Nimbus, want)
	}
	for _, w := range []string{"[nimbus-0] gale nimbus: serving on", "[nimbus-1] gale nimbus: serving on"} {
		if !strings.Contains(p.Stderr(), w) {
			t.Errorf("stderr lacks %q", w)
		}
	}
	left, err := procstat.Under(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("processes left under %s: %v", dir, left)
	}
	code, _, stderr := runGale(t, "dev", "--nimbuses", "0")
	if code != exitUsage || !strings.Contains(stderr, "--nimbuses") {
		t.Errorf("--nimbuses 0: exit %d, stderr %q: want %d naming it", code, stderr, exitUsage)
	}
}
