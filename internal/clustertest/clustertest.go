// Package clustertest runs a whole Gale cluster of real processes for
// end-to-end tests: the gale binary, built once per test binary, runs
// `gale dev` on free ports of 127.0.0.1 (etcd, nimbus and supervisors as
// its child processes, and the workers the supervisors start), and the
// test drives it with the binary's own commands (`gale submit`, `gale
// list`, …). Import it only from tests.
//
// A test package calls Main from its TestMain, then Start in a test:
//
//	func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }
//
//	func TestX(t *testing.T) {
//		c := clustertest.Start(t, clustertest.Options{Supervisors: 2})
//		c.Gale(t, "submit", "wordcount", "--nimbus", c.Nimbus)
//		...
//	}
//
// Launch is the other way (unix only): a Fleet of processes the test owns
// one by one (etcd, nimbuses, supervisors, each a Proc to kill, pause,
// stop and restart), for the failure tests. Its processes are made by a
// Host's Command, so that a test may run them inside network namespaces
// (internal/netnstest's Host.Command).
package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gale-stream/gale/internal/devcluster"
	"github.com/gale-stream/gale/internal/freeport"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/procstat"
)

// RaceEnv set to 1 builds the gale binary with the race detector, so
// that the cluster's processes check themselves too (slower: workers run
// several times slower under it).
const RaceEnv = "GALE_CLUSTERTEST_RACE"

// galePath is the gale binary Main built.
var galePath string

// Main builds the gale binary (./cmd/gale of this module) into a
// temporary directory, runs the tests, checks for leaked goroutines and
// removes the binary; it returns the exit code for os.Exit.
func Main(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gale-clustertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustertest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	galePath = filepath.Join(dir, "gale")
	if runtime.GOOS == "windows" {
		galePath += ".exe"
	}
	if err := build(galePath, "github.com/gale-stream/gale/cmd/gale"); err != nil {
		fmt.Fprintln(os.Stderr, "clustertest: build gale:", err)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "clustertest: leaked goroutines:", err)
			code = 1
		}
	}
	return code
}

// build builds the package pkg into the binary out, with -race when
// RaceEnv says so, its output going to stderr.
func build(out, pkg string) error {
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		goCmd = "go"
	}
	args := []string{"build", "-o", out}
	if os.Getenv(RaceEnv) == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command(goCmd, append(args, pkg)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// BuildProgram builds the main package pkg (an import path: a user's
// program, such as github.com/gale-stream/gale/examples/readme) into the
// test's temporary directory and returns the binary's path.
func BuildProgram(t testing.TB, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), path.Base(pkg))
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	if err := build(out, pkg); err != nil {
		t.Fatalf("clustertest: build %s: %v", pkg, err)
	}
	return out
}

// Binary is the path of the gale binary Main built.
func Binary() string {
	if galePath == "" {
		panic("clustertest: call clustertest.Main from TestMain")
	}
	return galePath
}

// Has says whether the gale binary has the subcommand name.
func Has(name string) bool {
	return exec.Command(Binary(), "help", name).Run() == nil
}

// Options shape a cluster.
type Options struct {
	// Supervisors is the number of supervisors (default 2).
	Supervisors int
	// SlotsPer is each supervisor's worker slots (default 2).
	SlotsPer int
	// Config is the cluster's gale.yaml (YAML text), given to nimbus and
	// every supervisor; empty for none.
	Config string
	// Nimbuses is the number of nimbuses Launch starts (default 1);
	// Start's dev cluster has one.
	Nimbuses int
	// Host is where Launch starts the processes (default: 127.0.0.1,
	// with exec.CommandContext); Start ignores it.
	Host Host
	// EtcdTLS runs a fleet's etcd secured as the README's deployment
	// does: TLS, and no client without a certificate of the fleet's CA
	// (etcd's --client-cert-auth). Config gets gale.etcd.tls.ca, .cert
	// and .key, naming the CA and a client certificate; Start ignores it.
	EtcdTLS bool
}

// Command makes the command that runs prog with args: the shape of
// exec.CommandContext (the default) and of netnstest's Host.Command,
// which runs it inside a network namespace.
type Command func(ctx context.Context, prog string, args ...string) *exec.Cmd

// Host is where a process of a Fleet runs: how its command is made and
// the address it binds and advertises.
type Host struct {
	// Addr is the address to bind (default 127.0.0.1).
	Addr string
	// Command makes the process's command (default exec.CommandContext).
	// The process must be the command's own (a wrapper must exec it, as
	// ip netns exec does): Proc signals the command's pid.
	Command Command
}

func (h Host) withDefaults() Host {
	if h.Addr == "" {
		h.Addr = "127.0.0.1"
	}
	if h.Command == nil {
		h.Command = exec.CommandContext
	}
	return h
}

// Cluster is a running `gale dev`.
type Cluster struct {
	// Dir holds the cluster's state.
	Dir string
	// Nimbus is nimbus's address, host:port; Etcd etcd's client URL.
	Nimbus, Etcd string
	// UI is the base URL of dev's REST API (/api/v1) and /metrics.
	UI string
	// The processes: dev itself and its children.
	DevPID, EtcdPID, NimbusPID int
	SupervisorPIDs             []int
	// SupervisorPorts are each supervisor's slots.
	SupervisorPorts [][]int

	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{} // dev exited; waitErr set
	err    error
	once   sync.Once
	stop   error
}

// startAttempts bounds the retries of a start that lost a port it had
// found free to another process.
const startAttempts = 4

// readyTimeout bounds a cluster's start, the supervisors registered with
// nimbus included.
const readyTimeout = 3 * time.Minute

// Start starts a dev cluster and waits until nimbus leads and lists
// every supervisor. The cluster stops at the end of the test (Stop),
// which fails the test if a process of it is left running.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Supervisors == 0 {
		o.Supervisors = 2
	}
	if o.SlotsPer == 0 {
		o.SlotsPer = 2
	}
	// Short: supervisors keep unix sockets under it (108 bytes at most).
	dir, err := os.MkdirTemp("", "gale-ct-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for attempt := 1; ; attempt++ {
		c, err := start(filepath.Join(dir, strconv.Itoa(attempt)), o)
		if err == nil {
			t.Cleanup(func() {
				if err := c.Stop(); err != nil {
					t.Error(err)
				}
				if t.Failed() {
					t.Logf("gale dev stderr:\n%s", c.stderr.String())
				}
			})
			if err := c.waitRegistered(o.Supervisors); err != nil {
				t.Fatal(err)
			}
			return c
		}
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			t.Fatal(err)
		}
		t.Logf("clustertest: attempt %d: %v; again with other ports", attempt, err)
	}
}

var errPortTaken = errors.New("a port was taken")

func start(dir string, o Options) (*Cluster, error) {
	ports, err := freePorts(3, 1)
	if err != nil {
		return nil, err
	}
	slots, err := freePorts(1, o.Supervisors*o.SlotsPer)
	if err != nil {
		return nil, err
	}
	args := []string{"dev", "--json", "--dir", dir,
		"--supervisors", strconv.Itoa(o.Supervisors), "--slots-per", strconv.Itoa(o.SlotsPer),
		"--etcd-port", strconv.Itoa(ports[0]), "--nimbus-port", strconv.Itoa(ports[1]),
		"--slot-base", strconv.Itoa(slots[0]), "--ui-port", strconv.Itoa(ports[2])}
	if o.Config != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		p := filepath.Join(dir, "test.yaml")
		if err := os.WriteFile(p, []byte(o.Config), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "--file", p)
	}
	cmd := exec.Command(Binary(), args...)
	c := &Cluster{Dir: dir, cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = c.stderr
	// Through an io.Pipe, not StdoutPipe: Wait may return while the
	// reader is still at it.
	out, w := io.Pipe()
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c.DevPID = cmd.Process.Pid
	decoded := make(chan devcluster.Report, 1)
	go func() { // ends with dev's stdout, closed once dev has exited
		var d devcluster.Report // what `gale dev --json` prints once the cluster is ready
		if json.NewDecoder(out).Decode(&d) == nil {
			decoded <- d
		}
		io.Copy(io.Discard, out)
	}()
	go func() { // ends when dev exits
		c.err = cmd.Wait()
		w.Close()
		close(c.exited)
	}()
	tm := time.NewTimer(readyTimeout)
	defer tm.Stop()
	select {
	case d := <-decoded:
		c.Nimbus, c.Etcd, c.UI = d.Nimbus.Addr, d.Etcd.Addr, d.UI
		c.EtcdPID, c.NimbusPID = d.Etcd.PID, d.Nimbus.PID
		for _, s := range d.Supervisors {
			c.SupervisorPIDs = append(c.SupervisorPIDs, s.PID)
			c.SupervisorPorts = append(c.SupervisorPorts, s.Ports)
		}
		return c, nil
	case <-c.exited:
		err := fmt.Errorf("gale dev exited before the cluster was ready: %v\nstderr:\n%s", c.err, c.stderr.String())
		if strings.Contains(c.stderr.String(), "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		c.killAll()
		return nil, err
	case <-tm.C:
		c.killAll()
		return nil, fmt.Errorf("gale dev: the cluster was not ready within %s\nstderr:\n%s", readyTimeout, c.stderr.String())
	}
}

// freePorts finds groups of n consecutive ports of 127.0.0.1 that are
// free (bindable) at the moment: one port each group's first.
func freePorts(groups, n int) ([]int, error) {
	var out []int
	for tries := 0; len(out) < groups; tries++ {
		if tries == 100 {
			return nil, fmt.Errorf("clustertest: no %d groups of %d free consecutive ports found in 100 tries", groups, n)
		}
		base, err := freeport.Consecutive(n)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, base) {
			out = append(out, base)
		}
	}
	return out, nil
}

// waitRegistered polls nimbus until it names a leader and lists n
// supervisors.
func (c *Cluster) waitRegistered(n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	conn, err := grpc.NewClient(c.Nimbus, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := nimbuspb.NewNimbusClient(conn)
	var last string
	err = Poll(ctx, func() bool {
		info, err := client.ClusterInfo(ctx, &nimbuspb.ClusterInfoRequest{})
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("leader %q, %d supervisors", info.LeaderAddr, len(info.Supervisors))
		return info.LeaderAddr != "" && len(info.Supervisors) == n
	})
	if err != nil {
		return fmt.Errorf("clustertest: nimbus at %s did not lead with %d supervisors within %s (last: %s)", c.Nimbus, n, readyTimeout, last)
	}
	return nil
}

// Poll calls ok every 50 ms until it returns true (nil) or ctx is done
// (ctx's error).
func Poll(ctx context.Context, ok func() bool) error {
	tk := time.NewTicker(50 * time.Millisecond)
	defer tk.Stop()
	for {
		if ok() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tk.C:
		}
	}
}

// Workers are the cluster's processes other than dev and its children:
// the workers its supervisors started.
func (c *Cluster) Workers() ([]int, error) {
	ps, err := procstat.Under(c.Dir)
	if err != nil {
		return nil, err
	}
	ours := append([]int{c.DevPID, c.EtcdPID, c.NimbusPID}, c.SupervisorPIDs...)
	var out []int
	for _, p := range ps {
		if !slices.Contains(ours, p.PID) {
			out = append(out, p.PID)
		}
	}
	return out, nil
}

// Gale runs the gale binary with args, up to two minutes, and returns its
// exit code and output; it logs the command line and stderr.
func (c *Cluster) Gale(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runGale(t, args...)
}

// runGale runs the gale binary with args, up to two minutes, and returns
// its exit code and output; it logs the command line and stderr.
func runGale(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runGaleLogged(t, true, args...)
}

// runGaleLogged is runGale that logs a run that exits 0 only if always.
func runGaleLogged(t testing.TB, always bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("gale %s: %v", strings.Join(args, " "), err)
	}
	if always || code != 0 {
		t.Logf("gale %s → exit %d\nstderr:\n%s", strings.Join(args, " "), code, errOut.String())
	}
	return code, out.String(), errOut.String()
}

// Topology is a row of `gale list --json`.
type Topology struct {
	Name          string `json:"name"`
	ID            string `json:"id"`
	Status        string `json:"status"`
	PendingReason string `json:"pending_reason"`
	Workers       int    `json:"workers"`
	// WorkersRunning: those the supervisors report valid.
	WorkersRunning int   `json:"workers_running"`
	Executors      int   `json:"executors"`
	Tasks          int   `json:"tasks"`
	UptimeSecs     int64 `json:"uptime_secs"`
	Emitted        int64 `json:"emitted"`
	Acked          int64 `json:"acked"`
	Failed         int64 `json:"failed"`
}

// List runs `gale list --json` against the cluster and returns its
// topologies; a failure fails the test.
func (c *Cluster) List(t testing.TB) []Topology {
	t.Helper()
	code, out, _ := c.Gale(t, "list", "--json", "--nimbus", c.Nimbus)
	if code != 0 {
		t.Fatalf("gale list: exit %d", code)
	}
	ts, err := decodeList(out)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func decodeList(out string) ([]Topology, error) {
	var l struct {
		Topologies []Topology `json:"topologies"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		return nil, fmt.Errorf("gale list --json: %v\n%s", err, out)
	}
	return l.Topologies, nil
}

// Stop stops dev with SIGTERM, which stops the cluster in order, and
// waits for it; it reports an error if dev failed or a process of the
// cluster is left running (and kills it). Stop is idempotent.
func (c *Cluster) Stop() error {
	c.once.Do(func() {
		c.stop = c.stopOnce()
	})
	return c.stop
}

func (c *Cluster) stopOnce() error {
	var errs []error
	c.cmd.Process.Signal(syscall.SIGTERM)
	tm := time.NewTimer(2 * time.Minute)
	defer tm.Stop()
	select {
	case <-c.exited:
		if c.err != nil {
			errs = append(errs, fmt.Errorf("gale dev: %v", c.err))
		}
	case <-tm.C:
		errs = append(errs, errors.New("gale dev did not stop within 2 minutes of SIGTERM"))
	}
	if left := c.killAll(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes of the cluster left running after gale dev stopped (killed): %v", left))
	}
	return errors.Join(errs...)
}

// killAll kills dev and every process under the cluster's directory and
// returns the pids of those still running, dev aside.
func (c *Cluster) killAll() []int {
	c.cmd.Process.Kill()
	<-c.exited
	ps, _ := procstat.Under(c.Dir)
	var left []int
	for _, p := range ps {
		left = append(left, p.PID)
		if proc, err := os.FindProcess(p.PID); err == nil {
			proc.Kill()
		}
	}
	return left
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
