//go:build unix

package workerproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/worker"
)

// supervisedWorker starts the test binary as a supervised worker of the
// test word count on a free port, reporting to the socket sock, and
// returns its command and its assignment. At the end of the test it is
// killed if still running and its stderr logged.
func supervisedWorker(t *testing.T, dir, sock string, active bool, mod ...func(*Spec)) (*exec.Cmd, Spec) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	raw, _ := json.Marshal(e2eParams{Sentences: 1 << 30, Rate: 200})
	spec := Spec{Topology: "e2e", Factory: "e2e-wordcount", Params: raw, Worker: 0, Workers: 1, Listen: addr,
		HeartbeatMS: 50, LogLevel: "warn",
		Supervised: &Supervised{TopologyID: "t-1", Version: 3, Port: port, Active: active, Control: sock,
			Assignment: worker.Assignment{Worker: 0, Workers: []string{addr}}}}
	for _, m := range mod {
		m(&spec)
	}
	b, _ := json.Marshal(spec)
	file := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "--spec", file)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		t.Logf("worker output:\n%s", stderr.String())
	})
	return cmd, spec
}

// control is the supervisor's end of one control connection.
type control struct {
	t  *testing.T
	c  net.Conn
	sc *bufio.Scanner
}

func accept(t *testing.T, l net.Listener) *control {
	t.Helper()
	l.(*net.UnixListener).SetDeadline(time.Now().Add(2 * time.Minute))
	c, err := l.Accept()
	if err != nil {
		t.Fatalf("no worker dialled the control socket: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	return &control{t: t, c: c, sc: bufio.NewScanner(c)}
}

// next returns the next message that ok accepts, failing the test if the
// connection ends first; what names it.
func (c *control) next(what string, ok func(Message) bool) Message {
	c.t.Helper()
	for c.sc.Scan() {
		var m Message
		if err := json.Unmarshal(c.sc.Bytes(), &m); err != nil {
			c.t.Fatalf("unparseable line from the worker %q: %v", c.sc.Text(), err)
		}
		if ok(m) {
			return m
		}
	}
	c.t.Fatalf("the control connection ended (%v) while waiting for %s", c.sc.Err(), what)
	return Message{}
}

func (c *control) send(m Message) {
	c.t.Helper()
	b, _ := json.Marshal(m)
	if _, err := c.c.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

func emitted(m Message) int64 {
	var s e2eStats
	json.Unmarshal(m.Stats, &s)
	return s.Emitted
}

func heartbeat(m Message) bool { return m.Event == EventHeartbeat }

func shortTempDir(t *testing.T) string {
	// A unix socket's path must fit in about 100 bytes: t.TempDir's may not.
	dir, err := os.MkdirTemp("", "gale-w")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestSupervisedWorker runs a worker in supervised mode: it says who it
// is, heartbeats with its counters, starts inactive as its spec says,
// obeys activate, deactivate and reassign, keeps running when the
// supervisor's socket goes away and says hello again when it is back, and
// stops in order on "stop".
func TestSupervisedWorker(t *testing.T) {
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "ctl")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd, spec := supervisedWorker(t, dir, sock, false)
	asg := spec.Supervised.Assignment

	c := accept(t, l)
	hello := c.next("the hello", func(Message) bool { return true })
	if hello.Event != EventHello || hello.Topology != "t-1" || hello.Port != spec.Supervised.Port || hello.PID != cmd.Process.Pid ||
		hello.Version != 3 || hello.Fingerprint != Fingerprint(asg) || hello.Active == nil || *hello.Active {
		t.Fatalf("got first line %+v, want the hello of topology t-1, port %d, pid %d, version 3, fingerprint %s, inactive",
			hello, spec.Supervised.Port, cmd.Process.Pid, Fingerprint(asg))
	}

	// Started inactive: its spouts stay quiet over many heartbeats.
	first := c.next("a heartbeat of the stopped spouts", func(m Message) bool { return heartbeat(m) && m.Status.Stopped })
	for range 10 {
		m := c.next("a heartbeat", heartbeat)
		if emitted(m) != emitted(first) || m.Active == nil || *m.Active {
			t.Fatalf("inactive worker: emitted %d, then %d (active %v)", emitted(first), emitted(m), m.Active)
		}
		if m.Status == nil || m.Spouts == nil || m.Version != 3 || m.Fingerprint != Fingerprint(asg) {
			t.Fatalf("heartbeat %+v lacks the status, the spout counters, version 3 or the fingerprint", m)
		}
	}
	c.send(Message{Cmd: CmdActivate})
	c.next("sentences emitted once activated", func(m Message) bool { return heartbeat(m) && emitted(m) > emitted(first) })
	c.send(Message{Cmd: CmdDeactivate})
	c.next("the spouts stopped once deactivated", func(m Message) bool { return heartbeat(m) && m.Status.Stopped })

	// A reassignment that changes more than the peers' addresses is
	// refused, naming the version, and the worker goes on.
	bad := worker.Assignment{Worker: 0, Workers: []string{asg.Workers[0], "127.0.0.1:1"}}
	c.send(Message{Cmd: CmdReassign, Version: 4, Assignment: &bad})
	r := c.next("the answer to the reassignment", func(m Message) bool { return m.Event == EventReassigned })
	if r.Version != 4 || r.Error == "" || r.Fingerprint != Fingerprint(asg) {
		t.Fatalf("got %+v, want reassignment 4 refused, the fingerprint still %s", r, Fingerprint(asg))
	}
	if m := c.next("a heartbeat", heartbeat); m.Version != 3 {
		t.Fatalf("after a refused reassignment the worker reports version %d, want 3", m.Version)
	}
	// One that changes nothing of this worker's is taken.
	same := asg
	same.Version = 5
	c.send(Message{Cmd: CmdReassign, Version: 5, Assignment: &same})
	r = c.next("the answer to the reassignment", func(m Message) bool { return m.Event == EventReassigned })
	if r.Version != 5 || r.Error != "" || r.Fingerprint != Fingerprint(asg) {
		t.Fatalf("got %+v, want reassignment 5 taken, the fingerprint still %s", r, Fingerprint(asg))
	}
	if m := c.next("a heartbeat", heartbeat); m.Version != 5 {
		t.Fatalf("after reassignment 5 the worker reports version %d", m.Version)
	}

	// The supervisor goes away: the worker keeps serving its peers.
	c.c.Close()
	l.Close()
	peer, err := net.Dial("tcp", asg.Workers[0])
	if err != nil {
		t.Fatalf("the worker stopped listening for peers when its supervisor went away: %v", err)
	}
	peer.Close()
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the worker exited when its supervisor went away: %v", err)
	}
	l, err = net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c = accept(t, l)
	again := c.next("the hello", func(Message) bool { return true })
	if again.Event != EventHello || again.PID != cmd.Process.Pid || again.Version != 5 || *again.Active {
		t.Fatalf("got %+v, want the same worker's hello (pid %d, version 5, inactive)", again, cmd.Process.Pid)
	}

	c.send(Message{Cmd: CmdStop})
	c.next("the stopped event", func(m Message) bool { return m.Event == EventStopped })
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the worker exited with %v after stop, want 0", err)
	}
}

// TestSupervisedWorkerWithoutSupervisor starts a worker whose supervisor
// is not listening yet: it runs, dials until the socket appears, and
// SIGTERM stops it in order.
func TestSupervisedWorkerWithoutSupervisor(t *testing.T) {
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "ctl")
	cmd, spec := supervisedWorker(t, dir, sock, true)
	addr := spec.Supervised.Assignment.Workers[0]
	for deadline := time.Now().Add(2 * time.Minute); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never listened on %s without its supervisor: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := accept(t, l)
	if m := c.next("the hello", func(Message) bool { return true }); m.Event != EventHello || !*m.Active {
		t.Fatalf("got %+v, want the hello of an active worker", m)
	}
	c.next("sentences emitted", func(m Message) bool { return heartbeat(m) && emitted(m) > 0 })
	cmd.Process.Signal(syscall.SIGTERM)
	m := c.next("the stopped event", func(m Message) bool { return m.Event != EventHeartbeat })
	if m.Event != EventStopped {
		t.Fatalf("got %+v after SIGTERM, want the stopped event", m)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the worker exited with %v after SIGTERM, want 0", err)
	}
}

// TestSupervisedSpecValidate: a supervised spec names what is wrong.
func TestSupervisedSpecValidate(t *testing.T) {
	s := Spec{Topology: "e2e", Factory: "e2e-wordcount", Worker: 0, Workers: 1, Listen: "127.0.0.1:6700", HeartbeatMS: 50,
		Supervised: &Supervised{Port: 6701, Assignment: worker.Assignment{Worker: 1, Workers: []string{"a:1", "b:2"}}}}
	err := s.Validate()
	if err == nil {
		t.Fatal("an inconsistent supervised spec passed")
	}
	for _, want := range []string{`"supervised.topology_id" is empty`, `"supervised.control" is empty`,
		`places worker 1 of 2, the spec says 0 of 1`, `not on the slot's port 6701`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestSupervisedWorkerReportsItsProcess: the heartbeats of a running
// worker carry its process's use: CPU time that grows while it works,
// its heap and goroutines, its collections.
func TestSupervisedWorkerReportsItsProcess(t *testing.T) {
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "ctl")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	supervisedWorker(t, dir, sock, true)
	c := accept(t, l)
	first := c.next("a heartbeat with the process", func(m Message) bool { return heartbeat(m) && m.Process != nil })
	p := first.Process
	if p.HeapBytes <= 0 || p.Goroutines <= 0 || p.GCCount < 0 || p.GCPauseNanos < 0 {
		t.Fatalf("heartbeat's process %+v: want a heap and goroutines", p)
	}
	later := c.next("more CPU time", func(m Message) bool {
		return heartbeat(m) && m.Process != nil && m.Process.CPUSeconds > first.Process.CPUSeconds
	})
	if later.Process.GCCount < p.GCCount || later.Process.GCPauseNanos < p.GCPauseNanos {
		t.Errorf("the collections went down: %+v, then %+v", p, later.Process)
	}
}

// TestSupervisedWorkerServesMetrics: a worker serves its own /metrics on
// a free port of its host, which its heartbeats name: its process's Go
// and process series, its transport's, and its tasks' counters per
// component, growing as it works. With worker.metrics.port -1 it serves
// none and names none.
func TestSupervisedWorkerServesMetrics(t *testing.T) {
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "ctl")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	supervisedWorker(t, dir, sock, true)
	c := accept(t, l)
	m := c.next("a heartbeat naming the metrics port", func(m Message) bool { return heartbeat(m) && m.Process != nil })
	port := m.Process.MetricsPort
	if port == 0 {
		t.Fatalf("heartbeat's process %+v names no metrics port", m.Process)
	}
	scrape := func() string {
		t.Helper()
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %s\n%s", resp.Status, b)
		}
		return string(b)
	}
	emittedBy := func(body string) float64 {
		for line := range strings.Lines(body) {
			if strings.HasPrefix(line, `gale_worker_component_emitted_total{component="sentences",kind="spout",topology="e2e",topology_id="t-1"} `) {
				v, _ := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndexByte(line, ' ')+1:]), 64)
				return v
			}
		}
		return -1
	}
	body := scrape()
	for _, want := range []string{"go_goroutines ", "go_memstats_heap_inuse_bytes ", "go_gc_duration_seconds", "process_cpu_seconds_total ",
		`gale_transport_sent_bytes_total{topology="e2e",topology_id="t-1"}`, `gale_worker_bolt_executed_total{component="split",topology="e2e",topology_id="t-1"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("the worker's /metrics lacks %s:\n%s", want, body)
		}
	}
	first := emittedBy(body)
	if first < 0 {
		t.Fatalf("the worker's /metrics has no emitted count of spout sentences:\n%s", body)
	}
	for deadline := time.Now().Add(time.Minute); emittedBy(scrape()) <= first; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the spout's emitted count stayed at %v for a minute", first)
		}
	}

	dir2 := shortTempDir(t)
	sock2 := filepath.Join(dir2, "ctl")
	l2, err := net.Listen("unix", sock2)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	supervisedWorker(t, dir2, sock2, true, func(s *Spec) { s.Cluster = gale.Config{KeyMetricsPort: -1} })
	c2 := accept(t, l2)
	if m := c2.next("a heartbeat", func(m Message) bool { return heartbeat(m) && m.Process != nil }); m.Process.MetricsPort != 0 {
		t.Errorf("with worker.metrics.port -1 the worker names metrics port %d, want none", m.Process.MetricsPort)
	}
}
