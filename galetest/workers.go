package galetest

// Multi-process runs: a topology in N worker processes, each a re-run of
// the test binary, as `gale worker` runs in a deployment. The machinery
// is internal/workerproc's; this file only adapts it to tests.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/workerproc"
)

// workerEnv marks a process StartWorkers started as a worker.
const workerEnv = "GALETEST_WORKER"

// ErrNoStats is returned by Workers.Stats for a worker that has not sent
// stats yet.
var ErrNoStats = errors.New("galetest: no stats from the worker yet")

// RegisterTopology makes a topology buildable in the worker processes that
// StartWorkers launches from this test binary. Call it from init or from
// TestMain before RunWorkerIfChild; it panics if name is registered twice.
//
// build runs once in every worker process. It gets the Params given to
// StartWorkers as JSON (nil if they were nil) and returns the topology,
// its config layer (may be nil) and a stats function (may be nil). The
// stats function is called for every heartbeat, concurrently with the
// topology's components, so it must be safe for that (use atomics); its
// result, any JSON-marshalable value, is what Workers.Stats unmarshals.
func RegisterTopology(name string, build func(params json.RawMessage) (*gale.Topology, gale.Config, func() any, error)) {
	workerproc.Register(name, func(params json.RawMessage) (*workerproc.Built, error) {
		topo, conf, stats, err := build(params)
		if err != nil {
			return nil, err
		}
		return &workerproc.Built{Topology: topo, Config: conf, Stats: stats}, nil
	})
}

// RunWorkerIfChild must be called first in TestMain, before goleak or
// anything else that looks at the process:
//
//	func TestMain(m *testing.M) {
//		galetest.RunWorkerIfChild()
//		goleak.VerifyTestMain(m)
//	}
//
// In a process StartWorkers started as a worker it runs that worker until
// it is told to stop and then exits the process (status 0 when it stopped
// cleanly, 1 when the worker failed, 2 for a bad command line or spec);
// the tests do not run there. Everywhere else it returns at once.
func RunWorkerIfChild() {
	if os.Getenv(workerEnv) != "1" {
		return
	}
	// A worker process is a test binary's main, not library code: exiting
	// here is how it ends, as TestMain ends with os.Exit(m.Run()).
	os.Exit(workerproc.RunProcess("galetest worker", os.Args[1:]))
}

// WorkersOptions configure StartWorkers.
type WorkersOptions struct {
	// Params are marshalled to JSON and given to the registered build
	// function in every worker.
	Params any
	// Config is a topology config layer on top of the one build returns.
	Config gale.Config
	// Restart starts a worker whose process dies (Kill, a crash) again on
	// the same address, as a supervisor would.
	Restart bool
	// HeartbeatInterval is how often each worker reports its status and
	// stats; default 50ms. WaitFor conditions are checked this often.
	HeartbeatInterval time.Duration
	// LogLevel is the least level of the workers' logs that reach the
	// test log: debug, info, warn (the default) or error.
	LogLevel string
	// StopTimeout bounds each phase of Stop, the drain and the exit;
	// default 10s.
	StopTimeout time.Duration
}

// Workers is a topology's worker processes, started by StartWorkers. Its
// methods are safe for concurrent use, except that Kill and WaitFor, which
// fail the test, must be called from the test's goroutine.
type Workers struct {
	t           testing.TB
	c           *workerproc.Cluster
	n           int
	restart     bool
	stopTimeout time.Duration
	log         *lineLogger

	mu struct {
		sync.Mutex
		workers  []workerState
		failures []string // "failed" events, in arrival order
		killed   []int    // workers Kill killed, in order
	}
	changed chan struct{} // a token after each heartbeat; capacity 1

	stopOnce   sync.Once
	stopErr    error
	stopCalled atomic.Bool // by the test, not only by the cleanup
}

// WorkerStatus is a worker's state as of one heartbeat.
type WorkerStatus struct {
	// Pending is the number of trees this worker's spouts have in flight.
	Pending int
	// Inflight is the number of tuples and tree messages (acks, fails)
	// queued in this worker and not yet processed.
	Inflight int64
	// WireBytesSent counts bytes written to peers, frame headers included;
	// WireTuplesSent the tuples sent to them; WireBytesReceived the bytes
	// read from them.
	WireBytesSent     int64
	WireTuplesSent    int64
	WireBytesReceived int64
	// Stopped reports that the worker is deactivated and every spout
	// executor has seen it: no new trees start there.
	Stopped bool
	// PeersConnected is how many peers this worker has a connection to.
	PeersConnected int
	// Errors counts the errors components reported or caused.
	Errors int64
}

// workerState is what the latest message from one worker said.
type workerState struct {
	incarnation int
	status      WorkerStatus
	stats       json.RawMessage
}

// StartWorkers launches n worker processes running the topology
// registered under name (RegisterTopology), each a re-run of this test
// binary, and returns once every one has started its share. Executors are
// placed round-robin over the components sorted by id, each component's
// executors in order, and acker a on worker a mod n (one acker per worker
// unless topology.acker.executors is set).
//
// The workers' logs (stderr) go to the test log line by line. Stop is
// registered with t.Cleanup, so the processes never outlive the test; a
// test that does not call Stop itself has the errors it would have
// returned reported by the cleanup. StartWorkers fails the test if the
// workers cannot be started.
func StartWorkers(t testing.TB, name string, n int, opts WorkersOptions) *Workers {
	t.Helper()
	if n < 1 {
		t.Fatalf("galetest: StartWorkers %q: n must be ≥ 1, got %d", name, n)
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 50 * time.Millisecond
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "warn"
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 10 * time.Second
	}
	var params json.RawMessage
	if opts.Params != nil {
		b, err := json.Marshal(opts.Params)
		if err != nil {
			t.Fatalf("galetest: StartWorkers %q: params: %v", name, err)
		}
		params = b
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("galetest: StartWorkers %q: %v", name, err)
	}
	spec := workerproc.Spec{
		Topology:    name,
		Factory:     name,
		Params:      params,
		Config:      opts.Config,
		HeartbeatMS: max(1, int(opts.HeartbeatInterval/time.Millisecond)),
		LogLevel:    opts.LogLevel,
	}
	// The spec is checked here, where the test can say what is wrong,
	// rather than in a worker that would exit before its handshake.
	check := spec
	check.Worker, check.Workers, check.Listen = 0, n, "127.0.0.1:0"
	if err := check.Validate(); err != nil {
		t.Fatalf("galetest: StartWorkers %q: %v", name, err)
	}
	w := &Workers{
		t:           t,
		n:           n,
		restart:     opts.Restart,
		stopTimeout: opts.StopTimeout,
		log:         &lineLogger{t: t},
		changed:     make(chan struct{}, 1),
	}
	w.mu.workers = make([]workerState, n)
	c, err := workerproc.Launch(workerproc.LaunchConfig{
		Exe:       exe,
		Env:       []string{workerEnv + "=1"},
		Spec:      spec,
		N:         n,
		Dir:       t.TempDir(),
		Stderr:    w.log,
		OnMessage: w.take,
		Restart:   opts.Restart,
	})
	if err != nil {
		// Launch has waited for every process it started: nothing logs
		// after this.
		w.log.close()
		t.Fatalf("galetest: StartWorkers %q: %v", name, err)
	}
	w.c = c
	t.Cleanup(func() {
		if err := w.stop(); err != nil && !w.stopCalled.Load() {
			t.Errorf("galetest: stopping the workers of %q: %v", name, err)
		}
	})
	return w
}

// take records a worker's message; it runs on that worker's reading
// goroutine.
func (w *Workers) take(worker, incarnation int, m workerproc.Message) {
	w.mu.Lock()
	s := &w.mu.workers[worker]
	if incarnation < s.incarnation {
		w.mu.Unlock()
		return // a late line from a process already replaced
	}
	s.incarnation = incarnation
	if m.Event == workerproc.EventFailed {
		w.mu.failures = append(w.mu.failures, fmt.Sprintf("worker %d (start %d) failed: %s", worker, incarnation+1, m.Error))
	}
	if m.Status != nil {
		s.status = WorkerStatus(*m.Status)
	}
	if m.Stats != nil {
		s.stats = m.Stats
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *Workers) checkIndex(i int) {
	if i < 0 || i >= w.n {
		panic(fmt.Sprintf("galetest: no worker %d: there are %d, numbered from 0", i, w.n))
	}
}

// Kill sends SIGKILL to worker i's current process. With
// WorkersOptions.Restart it is started again on the same address; its
// Status and Stats then come from the new process once it heartbeats.
// Kill fails the test if the process has already exited.
func (w *Workers) Kill(i int) {
	w.t.Helper()
	w.checkIndex(i)
	if err := w.c.Kill(i); err != nil {
		w.t.Fatalf("galetest: kill worker %d: %v", i, err)
	}
	w.mu.Lock()
	w.mu.killed = append(w.mu.killed, i)
	w.mu.Unlock()
}

// Restarts is how many times workers were started again after their
// process died.
func (w *Workers) Restarts() int { return w.c.Restarts() }

// Status is worker i's status as of its latest heartbeat (the zero value
// before the first).
func (w *Workers) Status(i int) WorkerStatus {
	w.checkIndex(i)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.workers[i].status
}

// Stats unmarshals the stats of worker i's latest heartbeat into v. It
// returns ErrNoStats if the worker has sent none yet. After a restart the
// stats are those of the new process, which start afresh.
func (w *Workers) Stats(i int, v any) error {
	w.checkIndex(i)
	w.mu.Lock()
	raw := w.mu.workers[i].stats
	w.mu.Unlock()
	if raw == nil {
		return fmt.Errorf("worker %d: %w", i, ErrNoStats)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("galetest: worker %d's stats: %w", i, err)
	}
	return nil
}

// WaitFor waits until cond returns true, calling it now and after every
// heartbeat from any worker. It fails the test, naming what, if timeout
// passes first, or at once if a worker fails and Restart is off. cond
// usually reads Status and Stats; it must not block.
func (w *Workers) WaitFor(what string, timeout time.Duration, cond func() bool) {
	w.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		if !w.restart {
			w.mu.Lock()
			failures := strings.Join(w.mu.failures, "; ")
			w.mu.Unlock()
			if failures != "" {
				w.t.Fatalf("galetest: waiting for %s: %s", what, failures)
			}
		}
		select {
		case <-w.changed:
		case <-deadline.C:
			w.t.Fatalf("galetest: timed out after %s waiting for %s; %s", timeout, what, w.describe())
		}
	}
}

// describe summarises every worker's latest report for a failure message.
func (w *Workers) describe() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for i, s := range w.mu.workers {
		if i > 0 {
			b.WriteString("; ")
		}
		stats := string(s.stats)
		if len(stats) > 300 {
			stats = stats[:300] + "…"
		}
		fmt.Fprintf(&b, "worker %d (start %d): %+v stats %s", i, s.incarnation+1, s.status, stats)
	}
	for _, f := range w.mu.failures {
		b.WriteString("; ")
		b.WriteString(f)
	}
	return b.String()
}

// Stop deactivates the spouts, waits (up to StopTimeout) until no worker
// has a tree in flight, stops the workers (killing those that do not exit
// within StopTimeout) and waits for every process and goroutine it owns.
// It returns the errors of workers that failed or exited badly over the
// run (not those Kill killed) and a drain that did not finish, which it
// cannot after Kill without Restart. Stop is idempotent: later calls
// return the first call's result.
func (w *Workers) Stop() error {
	w.stopCalled.Store(true)
	return w.stop()
}

func (w *Workers) stop() error {
	w.stopOnce.Do(func() {
		w.stopErr = w.c.Stop(w.stopTimeout)
		w.mu.Lock()
		killed := w.mu.killed
		w.mu.Unlock()
		if w.stopErr != nil && !w.restart && len(killed) > 0 {
			w.stopErr = fmt.Errorf("%w (workers %v were killed and not restarted: they could not drain)", w.stopErr, killed)
		}
		// Every process has been waited for, so its stderr is all
		// copied: log what is left and drop anything later.
		w.log.close()
	})
	return w.stopErr
}

// lineLogger passes what the workers write to stderr to t.Log, a line at
// a time. The workers share it; a line is one worker's as long as each
// write is whole lines, which slog's are.
type lineLogger struct {
	t      testing.TB
	mu     sync.Mutex
	buf    []byte
	closed bool
}

func (l *lineLogger) Write(p []byte) (int, error) {
	var lines []string
	l.mu.Lock()
	if !l.closed {
		l.buf = append(l.buf, p...)
		for {
			i := bytes.IndexByte(l.buf, '\n')
			if i < 0 {
				break
			}
			lines = append(lines, string(l.buf[:i]))
			l.buf = l.buf[i+1:]
		}
		if len(l.buf) == 0 {
			l.buf = nil
		}
	}
	l.mu.Unlock()
	for _, line := range lines {
		l.t.Log(line)
	}
	return len(p), nil
}

// close logs an unfinished last line and makes later writes no-ops, so
// nothing reaches t.Log after the test.
func (l *lineLogger) close() {
	l.mu.Lock()
	rest := string(l.buf)
	l.buf, l.closed = nil, true
	l.mu.Unlock()
	if rest != "" {
		l.t.Log(rest)
	}
}
