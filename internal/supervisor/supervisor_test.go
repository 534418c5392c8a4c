//go:build unix

package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/coord/etcdembed"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/procstat"
	"github.com/gale-stream/gale/internal/transport"
	"github.com/gale-stream/gale/internal/workerproc"
)

// The test binary is the artifact: run with workerEnv set, it is a worker
// (`ARTIFACT worker --spec FILE`).
const workerEnv = "GALE_SUPERVISOR_TEST_WORKER"

func init() {
	workerproc.Register("run:ticks", ticksFactory)
}

// ticksFactory builds a small acked topology: a spout emitting a tuple
// every 10 ms, a bolt acking it.
func ticksFactory(json.RawMessage) (*workerproc.Built, error) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("ticks", func() gale.Spout { return &tickSpout{} }, 1)
	b.SetBolt("sink", func() gale.Bolt { return &sinkBolt{} }, 1).ShuffleGrouping("ticks")
	topo, err := b.Build()
	if err != nil {
		return nil, err
	}
	return &workerproc.Built{Topology: topo}, nil
}

type tickSpout struct {
	gale.BaseSpout
	n    int
	last time.Time
}

func (*tickSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("n") }

func (s *tickSpout) Open(_ *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.Collector = c
	return nil
}

func (s *tickSpout) NextTuple() {
	if time.Since(s.last) < 10*time.Millisecond {
		time.Sleep(time.Millisecond) // an idle spout, not a busy loop
		return
	}
	s.last = time.Now()
	s.n++
	s.Collector.Emit(s.n, s.n)
}

type sinkBolt struct{ gale.BaseBolt }

func (*sinkBolt) DeclareOutputFields(gale.OutputDeclarer) {}
func (b *sinkBolt) Execute(t *gale.Tuple)                 { b.Collector.Ack(t) }

// fakeNimbus serves Download of one artifact and collects Reports: the
// part of nimbus a supervisor talks to.
type fakeNimbus struct {
	nimbuspb.UnimplementedNimbusServer
	sha  string
	data []byte

	mu        sync.Mutex
	downloads int
	reports   []*nimbuspb.ReportRequest
	changed   chan struct{}
	auth      map[string][]string // the authorization metadata of each call, by method
}

// called records the authorization metadata of a call to method.
func (n *fakeNimbus) called(ctx context.Context, method string) {
	md, _ := metadata.FromIncomingContext(ctx)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.auth == nil {
		n.auth = make(map[string][]string)
	}
	n.auth[method] = append(n.auth[method], strings.Join(md.Get("authorization"), ","))
}

func (n *fakeNimbus) Download(r *nimbuspb.DownloadRequest, stream grpc.ServerStreamingServer[nimbuspb.Chunk]) error {
	n.called(stream.Context(), "Download")
	n.mu.Lock()
	n.downloads++
	n.mu.Unlock()
	if r.Sha256 != n.sha {
		return errors.New("no such artifact")
	}
	for b := n.data; len(b) > 0; {
		k := min(len(b), 1<<20)
		if err := stream.Send(&nimbuspb.Chunk{Data: b[:k]}); err != nil {
			return err
		}
		b = b[k:]
	}
	return nil
}

func (n *fakeNimbus) Report(ctx context.Context, r *nimbuspb.ReportRequest) (*nimbuspb.ReportResponse, error) {
	n.called(ctx, "Report")
	n.mu.Lock()
	n.reports = append(n.reports, r)
	n.mu.Unlock()
	select {
	case n.changed <- struct{}{}:
	default:
	}
	return &nimbuspb.ReportResponse{}, nil
}

// waitReport waits for a report that ok accepts, among those received
// from now on.
func (n *fakeNimbus) waitReport(t *testing.T, what string, ok func(*nimbuspb.ReportRequest) bool) *nimbuspb.ReportRequest {
	t.Helper()
	n.mu.Lock()
	seen := len(n.reports)
	n.mu.Unlock()
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	for {
		n.mu.Lock()
		rs := slices.Clone(n.reports[seen:])
		seen = len(n.reports)
		n.mu.Unlock()
		for _, r := range rs {
			if ok(r) {
				return r
			}
		}
		select {
		case <-n.changed:
		case <-deadline.C:
			var last *nimbuspb.ReportRequest
			if len(rs) > 0 {
				last = rs[len(rs)-1]
			}
			t.Fatalf("no report after 2 minutes with %s; the last: %v", what, last)
		}
	}
}

// testCluster is an embedded etcd, a store on it, and a fake nimbus
// leader serving the test binary as the artifact.
type testCluster struct {
	etcd    *etcdembed.Etcd
	etcdDir string
	store   *coord.Store
	nimbus  *fakeNimbus
	art     coord.Artifact
}

func newTestCluster(t *testing.T) *testCluster {
	t.Helper()
	etcdDir := t.TempDir()
	e, err := etcdembed.Start(etcdembed.Config{Dir: etcdDir, ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	tc := &testCluster{etcd: e, etcdDir: etcdDir}
	t.Cleanup(func() {
		if tc.etcd != nil {
			tc.etcd.Close()
		}
	})
	c, err := coord.Dial(e.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	store := coord.NewStore(c)
	t.Cleanup(store.Close)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	n := &fakeNimbus{sha: hex.EncodeToString(sum[:]), data: data, changed: make(chan struct{}, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	nimbuspb.RegisterNimbusServer(srv, n)
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(ln) })
	t.Cleanup(func() { srv.Stop(); wg.Wait() })
	ctx := t.Context()
	mem, err := store.JoinNimbus(ctx, coord.Nimbus{ID: "n1", Addr: ln.Addr().String(), Started: time.Now()}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mem.Close)
	if _, err := store.Campaign(ctx, mem); err != nil {
		t.Fatal(err)
	}
	art := coord.Artifact{SHA256: n.sha, Size: int64(len(data)), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		WireVersion: transport.ProtocolVersion}
	t.Setenv(workerEnv, "1") // the workers this test's supervisors start
	tc.store, tc.nimbus, tc.art = store, n, art
	return tc
}

// supervisorConfig is a supervisor on two free ports in dir.
func (tc *testCluster) supervisorConfig(t *testing.T, dir string, ports []int) Config {
	return Config{ID: "s1", Dir: dir, Host: "127.0.0.1", Ports: ports, Store: tc.store,
		WorkerTimeout: 30 * time.Second, StartTimeout: 2 * time.Minute, WorkerHeartbeat: 100 * time.Millisecond,
		ReportEvery: 100 * time.Millisecond, LeaseTTL: 10 * time.Second, StopGrace: 10 * time.Second,
		WorkerLogLevel: "warn", Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// run runs a supervisor until the returned stop is called (or the test
// ends).
func runSupervisor(t *testing.T, cfg Config) (stop func()) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("supervisor: %v", err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("supervisor: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func freePorts(t *testing.T, n int) []int {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// shortDir is a directory with a short path: the control socket's must
// fit in about 100 bytes.
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "gale-s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Workers outlive their supervisor by design: whatever a test
		// left running under dir is killed here, so that no process
		// outlives the test.
		ps, err := procstat.Under(dir)
		if err != nil {
			t.Errorf("list the processes under %s: %v", dir, err)
		}
		for _, p := range ps {
			t.Logf("killing pid %d left running under %s: %v", p.PID, dir, p.Args)
			syscall.Kill(p.PID, syscall.SIGKILL)
		}
		os.RemoveAll(dir)
	})
	return dir
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// worker returns the report of port's worker, if any.
func workerOn(r *nimbuspb.ReportRequest, port int) *nimbuspb.WorkerReport {
	for _, w := range r.Workers {
		if int(w.Port) == port {
			return w
		}
	}
	return nil
}

func validOn(port int, pid *int32, emitting bool) func(*nimbuspb.ReportRequest) bool {
	return func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, port)
		ok := w != nil && w.State == string(Valid) && (*pid == 0 || w.Pid == *pid) && (!emitting || w.Acked > 0)
		if ok && *pid == 0 {
			*pid = w.Pid
		}
		return ok
	}
}

// TestSupervisor runs a supervisor with a real etcd and real worker
// processes: it downloads the artifact and launches a worker for an
// assignment, whose acked counts reach nimbus in its reports; it starts
// the worker again after a kill -9; stopped, it leaves the worker
// running, and a new supervisor in the same directory adopts it without
// a restart (the same pid); once the assignment is deleted the worker
// stops.
func TestSupervisor(t *testing.T) {
	tc := newTestCluster(t)
	dir := shortDir(t)
	ports := freePorts(t, 2)
	cfg := tc.supervisorConfig(t, dir, ports)
	stopA := runSupervisor(t, cfg)
	ctx := t.Context()

	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[1]}}}
	if err := tc.store.PutAssignment(ctx, asg); err != nil {
		t.Fatal(err)
	}
	launched := time.Now()
	var pid int32
	first := tc.nimbus.waitReport(t, "a valid worker acking on the slot", validOn(ports[1], &pid, true))
	checkComponents(t, workerOn(first, ports[1]))
	w1 := workerOn(first, ports[1])
	if w1.GetRestarts() != 0 || w1.GetStartedUnixMs() < launched.UnixMilli()-1000 || w1.GetStartedUnixMs() > time.Now().UnixMilli() {
		t.Errorf("the first worker: %d restarts, started at %d; want 0, between %d and now", w1.GetRestarts(), w1.GetStartedUnixMs(), launched.UnixMilli())
	}
	if info, err := os.Stat(filepath.Join(dir, "artifacts", tc.art.SHA256)); err != nil || info.Mode().Perm() != 0o755 {
		t.Fatalf("artifact stored: %v, %v; want mode 0755", info, err)
	}

	// The status socket serves the same report, on the machine.
	var st *nimbuspb.ReportRequest
	for deadline := time.Now().Add(time.Minute); ; {
		var err error
		if st, err = ReadStatus(ctx, dir); err == nil {
			if w := workerOn(st, ports[1]); w != nil && w.Pid == pid && w.State == "valid" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status socket did not serve the valid worker %d within a minute: %v, %v", pid, st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Supervisor != "s1" {
		t.Errorf("the status names supervisor %q, want s1", st.Supervisor)
	}

	// A crash: the supervisor starts it again.
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var pid2 int32
	second := tc.nimbus.waitReport(t, "a new valid worker after the kill -9", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[1])
		return w != nil && w.Pid != pid && validOn(ports[1], &pid2, true)(r)
	})
	w2 := workerOn(second, ports[1])
	if w2.GetRestarts() != 1 || w2.GetStartedUnixMs() < w1.GetStartedUnixMs() {
		t.Errorf("the worker started again: %d restarts, started at %d; want 1, after the first's %d", w2.GetRestarts(), w2.GetStartedUnixMs(), w1.GetStartedUnixMs())
	}

	// The supervisor stops: its worker does not.
	stopA()
	if !alive(int(pid2)) {
		t.Fatalf("worker %d stopped with its supervisor", pid2)
	}
	if _, err := ReadStatus(ctx, dir); err == nil {
		t.Error("ReadStatus answered after the supervisor stopped, want an error")
	}
	stopB := runSupervisor(t, cfg)
	adopted := pid2
	r := tc.nimbus.waitReport(t, "the same worker, adopted and valid", validOn(ports[1], &adopted, true))
	if w := workerOn(r, ports[1]); w.Pid != pid2 {
		t.Fatalf("the new supervisor runs pid %d on the slot, want the adopted %d", w.Pid, pid2)
	}
	// The adopted worker keeps its start and its slot's restarts.
	if w := workerOn(r, ports[1]); w.GetRestarts() != 1 || w.GetStartedUnixMs() != w2.GetStartedUnixMs() {
		t.Errorf("the adopted worker: %d restarts, started at %d; want 1, %d", w.GetRestarts(), w.GetStartedUnixMs(), w2.GetStartedUnixMs())
	}
	tc.nimbus.mu.Lock()
	downloads := tc.nimbus.downloads
	tc.nimbus.mu.Unlock()
	if downloads != 1 {
		t.Errorf("the artifact was downloaded %d times, want once: the second supervisor has it locally", downloads)
	}

	// Deactivated, then activated again: the same worker, told so.
	asg.Version, asg.Active = 2, false
	if err := tc.store.PutAssignment(ctx, asg); err != nil {
		t.Fatal(err)
	}
	var quiet int64
	run := 0
	tc.nimbus.waitReport(t, "the spouts quiet over 10 reports", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[1])
		if w == nil || w.Pid != pid2 {
			t.Fatalf("after a deactivation the slot runs %v, want pid %d", w, pid2)
		}
		if w.Acked != quiet {
			quiet, run = w.Acked, 0
		}
		run++
		return run >= 10
	})
	asg.Version, asg.Active = 3, true
	if err := tc.store.PutAssignment(ctx, asg); err != nil {
		t.Fatal(err)
	}
	tc.nimbus.waitReport(t, "more acked once activated", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[1])
		if w == nil || w.Pid != pid2 {
			t.Fatalf("after an activation the slot runs %v, want pid %d", w, pid2)
		}
		return w.Acked > quiet
	})

	// The assignment is withdrawn: the worker stops.
	if err := tc.store.DeleteAssignment(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	tc.nimbus.waitReport(t, "no worker", func(r *nimbuspb.ReportRequest) bool { return len(r.Workers) == 0 })
	if alive(int(pid2)) {
		t.Fatalf("worker %d still runs after its assignment was deleted", pid2)
	}
	stopB()
}

// TestSupervisorRefusesForeignArtifact: an assignment whose artifact was
// built for another platform is refused with a clear reason in the
// report, never downloaded, never launched.
func TestSupervisorRefusesForeignArtifact(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 1)
	runSupervisor(t, tc.supervisorConfig(t, shortDir(t), ports))
	art := tc.art
	art.GOOS, art.GOARCH = "plan9", "arm"
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	r := tc.nimbus.waitReport(t, "the worker refused", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[0])
		return w != nil && w.State == string(Refused)
	})
	if w := workerOn(r, ports[0]); !strings.Contains(w.Reason, "built for plan9/arm") || w.Pid != 0 {
		t.Errorf("got %+v, want refused, no pid, the reason naming plan9/arm", w)
	}
	tc.nimbus.mu.Lock()
	defer tc.nimbus.mu.Unlock()
	if tc.nimbus.downloads != 0 {
		t.Errorf("downloaded an artifact it cannot run %d times", tc.nimbus.downloads)
	}
}

// TestSupervisorRejectsCorruptArtifact: a download whose bytes do not
// match the recorded checksum is not stored nor run, and the report says
// why.
func TestSupervisorRejectsCorruptArtifact(t *testing.T) {
	tc := newTestCluster(t)
	tc.nimbus.data = append(slices.Clone(tc.nimbus.data[:len(tc.nimbus.data)-1]), tc.nimbus.data[len(tc.nimbus.data)-1]^1)
	ports := freePorts(t, 1)
	dir := shortDir(t)
	runSupervisor(t, tc.supervisorConfig(t, dir, ports))
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	r := tc.nimbus.waitReport(t, "the download's failure", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[0])
		return w != nil && strings.Contains(w.Reason, "SHA-256")
	})
	if w := workerOn(r, ports[0]); w.State != string(Waiting) || w.Pid != 0 {
		t.Errorf("got %+v, want waiting, no pid", w)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "artifacts")); len(ents) != 0 {
		t.Errorf("the artifact store holds %v after a corrupt download, want nothing", ents)
	}
}

// TestSupervisorRestartsHungWorker: a worker that stops heartbeating
// (SIGSTOP) is timed out after supervisor.worker.timeout.secs, killed
// (SIGKILL reaches a stopped process) and started again.
func TestSupervisorRestartsHungWorker(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 1)
	cfg := tc.supervisorConfig(t, shortDir(t), ports)
	cfg.WorkerTimeout, cfg.StopGrace = 2*time.Second, time.Second
	runSupervisor(t, cfg)
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	var pid int32
	tc.nimbus.waitReport(t, "a valid worker", validOn(ports[0], &pid, true))
	if err := syscall.Kill(int(pid), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(int(pid), syscall.SIGKILL) })
	tc.nimbus.waitReport(t, "the hung worker stopping, timed out", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[0])
		return w != nil && w.Pid == pid && w.State == string(Stopping) && strings.Contains(w.Reason, "timed-out")
	})
	var pid2 int32
	r := tc.nimbus.waitReport(t, "a new valid worker", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[0])
		return w != nil && w.Pid != pid && validOn(ports[0], &pid2, true)(r)
	})
	if n := workerOn(r, ports[0]).GetRestarts(); n != 1 {
		t.Errorf("the worker started again after a missed heartbeat reports %d restarts, want 1", n)
	}
	if alive(int(pid)) {
		t.Errorf("the hung worker %d still exists", pid)
	}
}

// TestSupervisorDoesNotAdoptReusedPID: a pid in the local state that
// another process has taken is not adopted, nor signalled; the slot gets
// a worker of its own.
func TestSupervisorDoesNotAdoptReusedPID(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 1)
	dir := shortDir(t)
	other := exec.Command("sleep", "300")
	if err := other.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	st := localState{Supervisor: "s1", Workers: []savedProc{{Port: ports[0], PID: other.Process.Pid, Topology: "t1", Version: 1,
		LaunchedAt: time.Now(), Spec: filepath.Join(dir, "workers", strconv.Itoa(ports[0]), "spec.json"),
		Running: DesiredFor("s1", []coord.Assignment{asg})[0]}}}
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	runSupervisor(t, tc.supervisorConfig(t, dir, ports))
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	var pid int32
	tc.nimbus.waitReport(t, "a valid worker", validOn(ports[0], &pid, true))
	if int(pid) == other.Process.Pid {
		t.Fatalf("adopted pid %d, which runs sleep", pid)
	}
	if !alive(other.Process.Pid) {
		t.Fatalf("the process that reused the pid was killed")
	}
}

// TestSupervisorDirLocked: a second supervisor in a directory in use is
// refused, naming the directory.
func TestSupervisorDirLocked(t *testing.T) {
	tc := newTestCluster(t)
	dir := shortDir(t)
	cfg := tc.supervisorConfig(t, dir, freePorts(t, 1))
	runSupervisor(t, cfg)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "another supervisor runs in "+dir) {
		t.Fatalf("a second supervisor in %s: got %v, want refused", dir, err)
	}
}

// TestSupervisorSteadyStateWritesNothing: a supervisor running a worker,
// heartbeating, keeping its lease alive and reporting to nimbus makes no
// etcd write: the raft index stands still over many lease keep-alives.
func TestSupervisorSteadyStateWritesNothing(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 1)
	cfg := tc.supervisorConfig(t, shortDir(t), ports)
	cfg.LeaseTTL = time.Second // a keep-alive every third of a second
	runSupervisor(t, cfg)
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	var pid int32
	tc.nimbus.waitReport(t, "a valid worker", validOn(ports[0], &pid, true))
	before := tc.etcd.RaftIndex()
	start := time.Now()
	n := 0
	tc.nimbus.waitReport(t, "30 reports over at least 3 s", func(r *nimbuspb.ReportRequest) bool {
		if !validOn(ports[0], &pid, false)(r) {
			t.Fatalf("the worker changed: %v", r)
		}
		n++
		return n >= 30 && time.Since(start) >= 3*time.Second
	})
	if after := tc.etcd.RaftIndex(); after != before {
		t.Errorf("raft index moved from %d to %d in steady state", before, after)
	}
}

// TestSupervisorStopsUnknownWorker: a worker on a slot that the
// supervisor's local state does not list (the state was lost) is told to
// stop when it says hello, and the slot then gets a worker of the
// supervisor's own.
func TestSupervisorStopsUnknownWorker(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 1)
	dir := shortDir(t)
	cfg := tc.supervisorConfig(t, dir, ports)
	stopA := runSupervisor(t, cfg)
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	var pid int32
	tc.nimbus.waitReport(t, "a valid worker", validOn(ports[0], &pid, true))
	stopA()
	t.Cleanup(func() { syscall.Kill(int(pid), syscall.SIGKILL) })
	if err := os.Remove(filepath.Join(dir, "state.json")); err != nil {
		t.Fatal(err)
	}
	runSupervisor(t, cfg)
	var pid2 int32
	tc.nimbus.waitReport(t, "a new valid worker", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[0])
		return w != nil && w.Pid != pid && validOn(ports[0], &pid2, true)(r)
	})
	if alive(int(pid)) {
		t.Errorf("the unknown worker %d still runs", pid)
	}
}

// TestSupervisorReassignsWhenAPeerMoves: when one worker of a topology
// moves to another slot, the worker that stays is reassigned in place
// (the same pid, the new assignment's fingerprint), the moved one is
// started on its new slot and stopped on its old one, and the two
// exchange tuples: the moved spout's tuples are acked.
func TestSupervisorReassignsWhenAPeerMoves(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 3)
	runSupervisor(t, tc.supervisorConfig(t, shortDir(t), ports))
	slot := func(p int) coord.Slot { return coord.Slot{Supervisor: "s1", Host: "127.0.0.1", Port: p} }
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{slot(ports[0]), slot(ports[1])}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	// The spout runs on worker 1 (executors in id order, round-robin:
	// sink on worker 0, ticks on worker 1).
	var pid0, pid1 int32
	tc.nimbus.waitReport(t, "both workers valid, worker 1 acking", func(r *nimbuspb.ReportRequest) bool {
		return validOn(ports[0], &pid0, false)(r) && validOn(ports[1], &pid1, true)(r)
	})

	asg.Version, asg.Workers = 2, []coord.Slot{slot(ports[0]), slot(ports[2])}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	want := workerproc.Fingerprint(DesiredFor("s1", []coord.Assignment{asg})[0].Assignment)
	var pid2 int32
	tc.nimbus.waitReport(t, "worker 0 reassigned in place, worker 1 acking on its new slot", func(r *nimbuspb.ReportRequest) bool {
		w0 := workerOn(r, ports[0])
		if w0 == nil || w0.Pid != pid0 {
			t.Fatalf("worker 0 is %v, want pid %d kept", w0, pid0)
		}
		return w0.AssignmentFingerprint == want && workerOn(r, ports[1]) == nil && validOn(ports[2], &pid2, true)(r)
	})
	if alive(int(pid1)) {
		t.Errorf("worker 1's old copy %d still runs", pid1)
	}
}

// TestSupervisorSurvivesEtcdRestart: while etcd is down the worker runs
// on, untouched; once etcd is back the supervisor sees assignment
// changes again.
func TestSupervisorSurvivesEtcdRestart(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 1)
	runSupervisor(t, tc.supervisorConfig(t, shortDir(t), ports))
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	var pid int32
	tc.nimbus.waitReport(t, "a valid worker", validOn(ports[0], &pid, true))
	url := tc.etcd.Endpoints[0]
	tc.etcd.Close()
	tc.etcd = nil
	n := 0
	tc.nimbus.waitReport(t, "the worker valid over 20 reports without etcd", func(r *nimbuspb.ReportRequest) bool {
		if !validOn(ports[0], &pid, false)(r) {
			t.Fatalf("without etcd the worker changed: %v", r)
		}
		n++
		return n >= 20
	})
	e, err := etcdembed.Start(etcdembed.Config{Dir: tc.etcdDir, ClientURL: url})
	if err != nil {
		t.Fatal(err)
	}
	tc.etcd = e
	asg.Version, asg.Active = 2, false
	var deadline = time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err := tc.store.PutAssignment(ctx, asg)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd back, but the assignment cannot be written: %v", err)
		}
	}
	if err := tc.store.DeleteAssignment(t.Context(), "t1"); err != nil {
		t.Fatal(err)
	}
	tc.nimbus.waitReport(t, "no worker once the assignment is deleted", func(r *nimbuspb.ReportRequest) bool { return len(r.Workers) == 0 })
	if alive(int(pid)) {
		t.Errorf("worker %d runs on after its assignment was deleted", pid)
	}
}

// TestSupervisorReportsChangesAtOnce: with report and heartbeat periods
// far longer than the test, nimbus still hears of a new worker's first
// acks, and of its end once its assignment is withdrawn: the worker
// heartbeats at its first ack, and the supervisor reports a first ack
// and every change of a worker's state without waiting for its period.
func TestSupervisorReportsChangesAtOnce(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 1)
	cfg := tc.supervisorConfig(t, shortDir(t), ports)
	cfg.ReportEvery, cfg.WorkerHeartbeat, cfg.WorkerTimeout = time.Hour, time.Hour, 2*time.Hour
	runSupervisor(t, cfg)
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	var pid int32
	tc.nimbus.waitReport(t, "a valid worker that acked", validOn(ports[0], &pid, true))
	if err := tc.store.DeleteAssignment(t.Context(), "t1"); err != nil {
		t.Fatal(err)
	}
	tc.nimbus.waitReport(t, "no worker", func(r *nimbuspb.ReportRequest) bool { return len(r.Workers) == 0 })
	if alive(int(pid)) {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		t.Fatalf("worker %d still runs (or is a zombie) after its assignment was deleted: /proc/%d/stat %s", pid, pid, st)
	}
}

// TestSupervisorRestartsACrashedWorkerWithoutEtcd: a worker killed while
// etcd cannot be read is started again at once from the assignments the
// supervisor holds, as Storm's supervisor does from its local state, so
// the topology keeps flowing through an etcd outage. (A worker its peers
// refused as stale waits for a fresh read instead; the partition tests
// of internal/clustertest show that.)
func TestSupervisorRestartsACrashedWorkerWithoutEtcd(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 1)
	runSupervisor(t, tc.supervisorConfig(t, shortDir(t), ports))
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	var pid int32
	tc.nimbus.waitReport(t, "a valid worker", validOn(ports[0], &pid, true))
	tc.etcd.Close()
	tc.etcd = nil
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var pid2 int32
	tc.nimbus.waitReport(t, "a new valid worker with etcd down", func(r *nimbuspb.ReportRequest) bool {
		w := workerOn(r, ports[0])
		return w != nil && w.Pid != pid && validOn(ports[0], &pid2, true)(r)
	})
}

// checkComponents checks that a report from a worker of the ticks
// topology carries its per-component counters: the spout's trees, the
// bolt's tuples executed and acked, the spout's counters matching the
// worker's totals.
func checkComponents(t *testing.T, w *nimbuspb.WorkerReport) {
	t.Helper()
	cs := w.GetComponents()
	if len(cs) != 2 || cs[0].GetComponent() != "sink" || cs[1].GetComponent() != "ticks" {
		t.Fatalf("components %v, want sink and ticks", cs)
	}
	sink, ticks := cs[0], cs[1]
	if sink.GetKind() != "bolt" || sink.GetTasks() != 1 || sink.GetExecuted() == 0 || sink.GetAcked() == 0 ||
		sink.GetFailed() != 0 || sink.GetExecuteSamples() == 0 || sink.GetProcessSamples() == 0 || sink.GetQueueCapacity() == 0 {
		t.Errorf("sink: %v, want a bolt that executed and acked tuples, one of them timed to its ack, and its queue's capacity", sink)
	}
	if ticks.GetKind() != "spout" || ticks.GetAcked() != w.GetAcked() || ticks.GetEmitted() != w.GetEmitted() ||
		ticks.GetTimedOut() != w.GetTimedOut() || ticks.GetCompleteLatency() == nil {
		t.Errorf("ticks: %v, want the spout's counters, as the worker's totals (%d emitted, %d acked, %d timed out)",
			ticks, w.GetEmitted(), w.GetAcked(), w.GetTimedOut())
	}
}

// TestSupervisorReportsTheWorkerProcesses: the reports carry each worker
// process's own use of the machine, from its heartbeats: CPU time, heap,
// goroutines, collections, and the bytes it exchanged with its peer.
func TestSupervisorReportsTheWorkerProcesses(t *testing.T) {
	tc := newTestCluster(t)
	ports := freePorts(t, 2)
	runSupervisor(t, tc.supervisorConfig(t, shortDir(t), ports))
	asg := coord.Assignment{Topology: "t1", Name: "ticks", Version: 1, Active: true, Artifact: tc.art, Factory: "ticks",
		Workers: []coord.Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: ports[0]}, {Supervisor: "s1", Host: "127.0.0.1", Port: ports[1]}}}
	if err := tc.store.PutAssignment(t.Context(), asg); err != nil {
		t.Fatal(err)
	}
	r := tc.nimbus.waitReport(t, "both workers valid, with bytes exchanged", func(r *nimbuspb.ReportRequest) bool {
		for _, port := range ports {
			w := workerOn(r, port)
			if w == nil || w.State != string(Valid) || w.GetBytesIn() == 0 || w.GetBytesOut() == 0 || w.GetCpuSeconds() == 0 {
				return false
			}
		}
		return true
	})
	for _, port := range ports {
		w := workerOn(r, port)
		if w.GetHeapBytes() <= 0 || w.GetGoroutines() <= 0 || w.GetGcCount() < 0 || w.GetGcPauseNanos() < 0 || w.GetStartedUnixMs() == 0 {
			t.Errorf("worker on %d: heap %d, %d goroutines, %d GCs (%d ns), started %d: want a heap, goroutines and a start",
				port, w.GetHeapBytes(), w.GetGoroutines(), w.GetGcCount(), w.GetGcPauseNanos(), w.GetStartedUnixMs())
		}
	}
	// The bytes one worker sent are about those its peer received (the
	// frames in flight between two reports aside): both count the frames.
	a, b := workerOn(r, ports[0]), workerOn(r, ports[1])
	if a.GetBytesOut() > 2*b.GetBytesIn()+1<<20 || b.GetBytesOut() > 2*a.GetBytesIn()+1<<20 {
		t.Errorf("bytes out/in: %d/%d and %d/%d, want each worker's out near its peer's in", a.GetBytesOut(), a.GetBytesIn(), b.GetBytesOut(), b.GetBytesIn())
	}
}
