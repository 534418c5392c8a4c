package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/transport"
	"github.com/gale-stream/gale/internal/workerproc"
)

// Config is what a supervisor runs with.
type Config struct {
	// ID is the supervisor's id (LoadID keeps one per directory).
	ID string
	// Dir holds the supervisor's state: its id, state.json, the control
	// socket, artifacts/<sha256> and workers/<port>/ (spec, log).
	Dir string
	// Host is the address its workers listen on and their peers dial.
	Host string
	// Ports are its slots (supervisor.slots.ports).
	Ports []int
	// Store is the coordination store; the supervisor does not close it.
	Store *coord.Store
	// Cluster is the cluster's config layer (gale.yaml), handed to every
	// worker.
	Cluster gale.Config

	// WorkerTimeout, StartTimeout, WorkerHeartbeat, ReportEvery and
	// LeaseTTL are supervisor.worker.timeout.secs,
	// supervisor.worker.start.timeout.secs,
	// worker.heartbeat.frequency.secs,
	// supervisor.heartbeat.frequency.secs and
	// nimbus.supervisor.timeout.secs (FromCluster sets them).
	WorkerTimeout, StartTimeout, WorkerHeartbeat, ReportEvery, LeaseTTL time.Duration
	// ArtifactRetention is supervisor.artifact.retention.secs: how long
	// an artifact that no assignment here names and no worker runs is
	// kept before it is deleted (zero: deleted once unused; negative:
	// kept forever). FromCluster sets it.
	ArtifactRetention time.Duration
	// StopGrace is how long a worker told to stop has before SIGTERM, and
	// then before SIGKILL (default 30 s).
	StopGrace time.Duration

	// GaleVersion is recorded in the membership; WireVersion (default
	// this binary's) is the wire version an artifact must have.
	GaleVersion string
	WireVersion int
	// WorkerArgs come before "--spec FILE" on a worker's command line
	// (default: "worker", the artifact's hidden subcommand).
	WorkerArgs []string
	// WorkerLogLevel is the workers' log level (default info).
	WorkerLogLevel string
	// DialOptions are for the connection to nimbus (default: plaintext).
	DialOptions []grpc.DialOption
	Logger      *slog.Logger
}

// FromCluster sets c's timings from the cluster's effective config.
func (c *Config) FromCluster(eff *config.Effective) {
	secs := func(key string) time.Duration {
		n, _ := eff.Int(key)
		return time.Duration(n) * time.Second
	}
	c.WorkerTimeout = secs(config.SupervisorWorkerTimeoutSecs)
	c.StartTimeout = secs(config.SupervisorWorkerStartTimeoutSecs)
	c.WorkerHeartbeat = secs(config.WorkerHeartbeatFrequencySecs)
	c.ReportEvery = secs(config.SupervisorHeartbeatFrequencySecs)
	c.LeaseTTL = secs(config.NimbusSupervisorTimeoutSecs)
	c.ArtifactRetention = secs(config.SupervisorArtifactRetentionSecs)
}

// Supervisor runs the workers that assignments place on its slots.
type Supervisor struct {
	cfg    Config
	log    *slog.Logger
	sock   string
	nimbus *nimbusConn
	ready  chan struct{}

	wg          sync.WaitGroup         // every goroutine of Run
	status      atomic.Pointer[[]byte] // the latest report, as JSON, for the status socket
	connsMu     sync.Mutex
	conns       map[*ctlConn]struct{}
	connsClosed bool

	// Owned by Run's loop.
	procs     map[int]*proc
	arts      map[string]ArtifactState
	states    []WorkerState
	desired   []Desired
	assigned  map[string]bool // the topologies with an assignment, anywhere
	known     bool            // desired has been read from etcd
	reported  []WorkerState   // the states of the last report sent
	logged    map[string]bool
	launchErr map[int]string
	crashes   map[int]int           // consecutive quick exits, by port
	restarts  map[int]*slotRestarts // by port (restarts.go)
	counters  *counterBook          // the topologies' totals (counters.go)

	// A worker its peers refused (its assignment is not theirs) is
	// started again only from assignments read after its exit: refusals
	// counts such exits, read the refusals counted when the read that
	// gave desired began, and refresh asks watch for a read. A supervisor
	// cut off from etcd holds assignments nimbus may have moved away
	// since (its lease expired): restarting from them would start a stale
	// copy of a moved worker, which the new assignment's workers refuse,
	// again and again. A worker that crashed is started again at once
	// from what the supervisor holds, etcd reachable or not, as Storm's
	// supervisor does from its local state.
	refusals, read uint64
	refresh        chan uint64
	held           uint64 // the refusals count of the last held launch logged

	// draining: asked to drain (drain.go), the supervisor has left the
	// cluster and starts no worker. drainReq carries the requests from
	// the drain socket; drainMu the progress it serves.
	draining bool
	drainReq chan struct{}
	drainMu  struct {
		sync.Mutex
		cur drainProgress
	}
}

// joinTimeout bounds the supervisor's first registration in etcd.
const joinTimeout = 30 * time.Second

// quickExit: a worker that exits sooner after its start counts as
// crashing, and is restarted with backoff.
const quickExit = 30 * time.Second

// proc is a worker process the supervisor knows.
type proc struct {
	Observed
	spec           string // its spec file, on its command line
	conn           *ctlConn
	stopAt, termAt time.Time
	pending        *Desired // the reassignment sent
	beat           workerproc.Message
	closedAt       time.Time // when its control connection closed; zero while connected
	refused        bool      // it failed because its peers refused its assignment
}

// exitPoll is how often the supervisor looks for the exit of a worker
// whose control connection closed, for up to exitWatch: a worker closes
// it as it exits, and its slot is free again at once.
const (
	exitPoll  = 20 * time.Millisecond
	exitWatch = 2 * time.Second
)

// reportGap is how long a report due at once (a worker's first ack, a
// change of a worker's state) waits for more of the same to send one.
const reportGap = 20 * time.Millisecond

// CheckHost checks a supervisor's host (--host): the address its workers
// listen on and that it registers for their peers to dial, so it must be
// one the other machines reach. A wildcard (0.0.0.0, ::) is refused: it
// would have every peer dial itself.
func CheckHost(host string) error {
	if host == "" {
		return errors.New("no host (--host): give this machine's address that the other machines reach (its IP or hostname)")
	}
	if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("host %s is the wildcard address, which no peer can dial: its workers listen on the host and peers dial it there; "+
			"give this machine's address that the other machines reach, its IP or hostname (--host 10.0.0.1), or 127.0.0.1 for a cluster on one machine", host)
	}
	return nil
}

// New checks cfg and returns a supervisor; Run runs it.
func New(cfg Config) (*Supervisor, error) {
	var errs []error
	if cfg.ID == "" {
		errs = append(errs, errors.New("no supervisor id"))
	}
	if cfg.Dir == "" {
		errs = append(errs, errors.New("no directory (--dir)"))
	} else if abs, err := filepath.Abs(cfg.Dir); err != nil {
		errs = append(errs, fmt.Errorf("directory %q: %w", cfg.Dir, err))
	} else {
		// Absolute: workers run the artifacts under it from their own
		// directories, and are found again by the paths they run.
		cfg.Dir = abs
	}
	if err := CheckHost(cfg.Host); err != nil {
		errs = append(errs, err)
	}
	if len(cfg.Ports) == 0 {
		errs = append(errs, errors.New("no slots (supervisor.slots.ports or --ports)"))
	}
	for i, p := range cfg.Ports {
		if p <= 0 || p > 65535 {
			errs = append(errs, fmt.Errorf("slot port %d is not a TCP port (1–65535)", p))
		}
		if slices.Contains(cfg.Ports[:i], p) {
			errs = append(errs, fmt.Errorf("slot port %d is given twice", p))
		}
	}
	if cfg.Store == nil {
		errs = append(errs, errors.New("no coordination store"))
	}
	for name, d := range map[string]time.Duration{
		config.SupervisorWorkerTimeoutSecs: cfg.WorkerTimeout, config.SupervisorWorkerStartTimeoutSecs: cfg.StartTimeout,
		config.WorkerHeartbeatFrequencySecs: cfg.WorkerHeartbeat, config.SupervisorHeartbeatFrequencySecs: cfg.ReportEvery,
		config.NimbusSupervisorTimeoutSecs: cfg.LeaseTTL,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be > 0, got %v", name, d))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 30 * time.Second
	}
	if cfg.WireVersion == 0 {
		cfg.WireVersion = transport.ProtocolVersion
	}
	if cfg.WorkerArgs == nil {
		cfg.WorkerArgs = []string{"worker"}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	token, err := clusterToken(cfg.Cluster)
	if err != nil {
		return nil, err
	}
	s := &Supervisor{cfg: cfg, log: cfg.Logger.With("component", "supervisor", "supervisor", cfg.ID),
		sock:   filepath.Join(cfg.Dir, "supervisor.sock"),
		nimbus: &nimbusConn{store: cfg.Store, opts: cfg.DialOptions, token: token}, ready: make(chan struct{}),
		conns: map[*ctlConn]struct{}{}, procs: map[int]*proc{}, logged: map[string]bool{}, launchErr: map[int]string{}, crashes: map[int]int{},
		restarts: map[int]*slotRestarts{}, drainReq: make(chan struct{}, 1)}
	s.drainMu.cur = drainProgress{changed: make(chan struct{})}
	// A unix socket's path has a limit of about 104 bytes (108 on Linux).
	if len(s.sock) > 100 {
		return nil, fmt.Errorf("supervisor: the control socket %s is longer than 100 bytes: use a shorter --dir", s.sock)
	}
	return s, nil
}

// Ready is closed once the supervisor has registered in etcd.
func (s *Supervisor) Ready() <-chan struct{} { return s.ready }

// Run registers the supervisor, adopts the workers of its local state
// that still run, and runs the workers assigned to it until ctx is done.
// Then it stops in order: it closes its control socket and its
// connections to the workers and waits for its goroutines. It does not
// revoke its lease, which expires after its TTL
// (nimbus.supervisor.timeout.secs): its workers keep running and stay
// assigned to it, and a supervisor restarted in the same directory
// within the TTL adopts them, as after a kill -9. Only a drain (Drain)
// leaves the cluster at once. Call it once.
func (s *Supervisor) Run(ctx context.Context) error {
	for _, d := range []string{s.cfg.Dir, filepath.Join(s.cfg.Dir, "artifacts"), filepath.Join(s.cfg.Dir, "workers")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("supervisor: %w", err)
		}
	}
	unlock, err := lockDir(s.cfg.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	s.arts = localArtifacts(filepath.Join(s.cfg.Dir, "artifacts"))
	if err := s.adopt(); err != nil {
		return err
	}
	// A socket left by a supervisor killed with SIGKILL is in the way.
	if err := os.Remove(s.sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("supervisor: %w", err)
	}
	ln, err := net.Listen("unix", s.sock)
	if err != nil {
		return fmt.Errorf("supervisor: control socket: %w", err)
	}
	defer ln.Close()
	sock := StatusSocket(s.cfg.Dir)
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("supervisor: %w", err)
	}
	sln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("supervisor: status socket: %w", err)
	}
	defer sln.Close()
	dsock := DrainSocket(s.cfg.Dir)
	if err := os.Remove(dsock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("supervisor: %w", err)
	}
	dln, err := net.Listen("unix", dsock)
	if err != nil {
		return fmt.Errorf("supervisor: drain socket: %w", err)
	}
	defer dln.Close()
	s.setStatus(s.report())
	jctx, jcancel := context.WithTimeout(ctx, joinTimeout)
	mem, err := s.cfg.Store.JoinSupervisor(jctx, coord.Supervisor{ID: s.cfg.ID, Host: s.cfg.Host, Ports: s.cfg.Ports,
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GaleVersion: s.cfg.GaleVersion, WireVersion: s.cfg.WireVersion,
		Started: time.Now()}, s.cfg.LeaseTTL)
	jcancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while joining
		}
		return fmt.Errorf("supervisor: register in etcd (given up after %s; is etcd running at gale.etcd.endpoints or --etcd?): %w", joinTimeout, err)
	}
	// A stop leaves the lease to its TTL, as a kill -9 does: the workers
	// stay assigned here for a restart to adopt. (After a drain the
	// lease is revoked already.)
	defer mem.Abandon()
	defer s.nimbus.close()
	close(s.ready)
	s.log.Info("supervisor registered", "host", s.cfg.Host, "ports", s.cfg.Ports, "adopted", len(s.procs))

	lctx, cancel := context.WithCancel(ctx)
	events := make(chan ctlEvent, 256)
	assigns := make(chan assignmentsRead, 1)
	s.refresh = make(chan uint64, 1)
	dls := make(chan dlResult, len(s.cfg.Ports)+1)
	reports := make(chan *nimbuspb.ReportRequest, 1)
	s.wg.Go(func() { s.serveControl(lctx, ln, events) })
	s.wg.Go(func() { s.serveStatus(sln) })
	s.wg.Go(func() { s.serveDrain(lctx, dln) })
	s.wg.Go(func() { s.watch(lctx, assigns) })
	s.wg.Go(func() { s.reporter(lctx, reports) })
	defer func() {
		ln.Close()
		sln.Close()
		dln.Close()
		s.closeConns()
		cancel()
		s.wg.Wait()
	}()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	report := time.NewTicker(s.cfg.ReportEvery)
	defer report.Stop()
	// exits: polling for the exit of workers whose connection closed;
	// soon: a report due at once.
	exits := time.NewTimer(exitPoll)
	exits.Stop()
	soon := time.NewTimer(reportGap)
	soon.Stop()
	soonSet := false
	sendReport := func() {
		select {
		case <-reports:
		default:
		}
		r := s.report()
		s.reported = slices.Clone(s.states)
		s.setStatus(r)
		reports <- r
	}
	for {
		select {
		case <-ctx.Done():
			if s.draining {
				s.log.Info("supervisor stopping", "workers", len(s.procs))
			} else {
				s.log.Info("supervisor stopping; its workers keep running, assigned here until its lease expires",
					"workers", len(s.procs), "lease_ttl", s.cfg.LeaseTTL)
			}
			return nil
		case <-s.drainReq:
			if s.draining {
				continue
			}
			// Leaving the cluster: nimbus moves the workers at once.
			s.log.Info("supervisor draining: leaving the cluster; nimbus moves its workers, which stop here as they move", "workers", len(s.procs))
			mem.Close()
			s.draining = true
		case r := <-assigns:
			s.desired, s.known, s.read = DesiredFor(s.cfg.ID, r.assignments), true, r.refusals
			s.assigned = make(map[string]bool, len(r.assignments))
			for _, a := range r.assignments {
				s.assigned[a.Topology] = true
			}
		case <-tick.C:
			s.checkProcs()
		case <-exits.C:
			s.checkProcs()
			if s.exiting(time.Now()) {
				exits.Reset(exitPoll)
			}
		case ev := <-events:
			reconcile, urgent := s.handle(ev)
			if ev.closed && s.exiting(time.Now()) {
				s.checkProcs()
				exits.Reset(exitPoll)
				reconcile = true
			}
			if urgent && !soonSet {
				soon.Reset(reportGap)
				soonSet = true
			}
			if !reconcile {
				continue
			}
		case r := <-dls:
			if r.err != nil {
				s.log.Error("artifact download failed", "artifact", r.sha, "err", r.err)
				s.arts[r.sha] = ArtifactState{Err: r.err.Error(), FailedAt: time.Now()}
			} else {
				s.log.Info("artifact downloaded", "artifact", r.sha)
				s.arts[r.sha] = ArtifactState{Ready: true}
			}
		case <-report.C:
			sendReport()
			continue
		case <-soon.C:
			soonSet = false
			sendReport()
			continue
		}
		s.reconcile(lctx, dls)
		if s.draining {
			s.publishDrain()
		}
		if !soonSet && !sameStates(s.states, s.reported) {
			// A worker started, stopped or changed state: nimbus hears of
			// it now, not a report period later.
			soon.Reset(reportGap)
			soonSet = true
		}
	}
}

// exiting reports whether a live worker's control connection closed less
// than exitWatch ago: it is probably exiting.
func (s *Supervisor) exiting(now time.Time) bool {
	for _, p := range s.procs {
		if p.Alive && p.conn == nil && !p.closedAt.IsZero() && now.Sub(p.closedAt) < exitWatch {
			return true
		}
	}
	return false
}

// sameStates compares the workers' states as a report shows them,
// without the reasons (which carry clocks).
func sameStates(a, b []WorkerState) bool {
	return slices.EqualFunc(a, b, func(x, y WorkerState) bool {
		return x.Port == y.Port && x.Topology == y.Topology && x.State == y.State
	})
}

type dlResult struct {
	sha string
	err error
}

// assignmentsRead is one read of the assignments, begun once the run
// loop had counted refusals workers refused by their peers.
type assignmentsRead struct {
	assignments []coord.Assignment
	refusals    uint64
}

// watch sends the assignments to out whenever they change, once at the
// start, and when the run loop asks on s.refresh, retrying a failed read.
func (s *Supervisor) watch(ctx context.Context, out chan assignmentsRead) {
	changes := s.cfg.Store.Changes(ctx, coord.AssignmentsPrefix)
	var asked uint64
	for {
		select {
		case _, ok := <-changes:
			if !ok {
				return
			}
		case n := <-s.refresh:
			asked = max(asked, n)
		}
		refusals := asked // what this read answers
		for fails := 0; ; fails++ {
			as, err := s.cfg.Store.Assignments(ctx)
			if err == nil {
				select {
				case <-out:
				default:
				}
				out <- assignmentsRead{as, refusals}
				break
			}
			if ctx.Err() != nil {
				return
			}
			if fails == 0 {
				s.log.Warn("cannot read the assignments; retrying", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(time.Duration(fails+1)*200*time.Millisecond, 2*time.Second)):
			}
		}
	}
}

// adopt takes the workers of the local state that still run.
func (s *Supervisor) adopt() error {
	st, err := readState(filepath.Join(s.cfg.Dir, "state.json"))
	if err != nil {
		return err
	}
	now := time.Now()
	for _, w := range st.Workers {
		if reap(w.PID, w.Spec) {
			s.log.Info("worker of the local state is gone", "port", w.Port, "pid", w.PID, "topology", w.Topology)
			continue
		}
		s.log.Info("adopting worker", "port", w.Port, "pid", w.PID, "topology", w.Topology)
		// It counts as heard from now: it has supervisor.worker.timeout.secs
		// to connect.
		s.procs[w.Port] = &proc{Observed: Observed{Port: w.Port, PID: w.PID, Running: w.Running,
			LaunchedAt: w.LaunchedAt, LastBeat: now, Alive: true}, spec: w.Spec}
		s.restarts[w.Port] = &slotRestarts{topology: w.Running.Topology, restarts: w.Restarts}
	}
	return s.saveState()
}

func (s *Supervisor) saveState() error {
	st := localState{Supervisor: s.cfg.ID}
	for _, port := range slices.Sorted(maps.Keys(s.procs)) {
		p := s.procs[port]
		if !p.Alive {
			continue
		}
		st.Workers = append(st.Workers, savedProc{Port: p.Port, PID: p.PID, Topology: p.Running.Topology,
			Version: p.Running.Version, LaunchedAt: p.LaunchedAt, Spec: p.spec, Running: p.Running,
			Restarts: s.restartsOf(p.Port, p.Running.Topology)})
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	if err := writeFileAtomic(filepath.Join(s.cfg.Dir, "state.json"), b, 0o600); err != nil {
		return fmt.Errorf("supervisor: save the local state: %w", err)
	}
	return nil
}

func (s *Supervisor) save() {
	if err := s.saveState(); err != nil {
		s.log.Error("cannot save the local state", "err", err)
	}
}

// checkProcs notes the workers that exited and escalates stops.
func (s *Supervisor) checkProcs() {
	now := time.Now()
	changed := false
	for _, p := range s.procs {
		if !p.Alive {
			continue
		}
		if reap(p.PID, p.spec) {
			p.Alive, p.Connected = false, false
			changed = true
			s.exited(p)
			s.retired(p) // its counters stay in its topology's totals
			if p.refused {
				s.refusals++
				select { // replaces a request not taken yet
				case <-s.refresh:
				default:
				}
				s.refresh <- s.refusals
			}
			if p.Stopping {
				s.log.Info("worker stopped", "port", p.Port, "pid", p.PID, "topology", p.Running.Topology)
				continue
			}
			// A worker that keeps exiting soon after its start is started
			// again at once the first time, then after 1 s, 2 s, … 30 s.
			if now.Sub(p.LaunchedAt) < quickExit {
				s.crashes[p.Port]++
			} else {
				s.crashes[p.Port] = 1
			}
			if n := s.crashes[p.Port]; n > 1 {
				p.RetryAt = now.Add(min(time.Second<<min(n-2, 5), 30*time.Second))
			}
			s.log.Warn("worker exited", "port", p.Port, "pid", p.PID, "topology", p.Running.Topology,
				"log", filepath.Join(s.cfg.Dir, "workers", strconv.Itoa(p.Port), "worker.log"), "restart_in", max(p.RetryAt.Sub(now), 0))
			continue
		}
		if !p.Stopping {
			continue
		}
		switch {
		case p.termAt.IsZero() && now.Sub(p.stopAt) >= s.cfg.StopGrace:
			s.log.Warn("worker did not stop; sending SIGTERM", "port", p.Port, "pid", p.PID)
			signal(p.PID, p.spec, sigTerm)
			p.termAt = now
		case !p.termAt.IsZero() && now.Sub(p.termAt) >= s.cfg.StopGrace:
			s.log.Warn("worker did not stop; sending SIGKILL", "port", p.Port, "pid", p.PID)
			signal(p.PID, p.spec, sigKill)
			p.termAt = now
		}
	}
	if changed {
		s.save()
	}
}

// handle takes a line from a worker, and says whether to reconcile and
// whether to report to nimbus at once (a worker's first ack).
func (s *Supervisor) handle(ev ctlEvent) (reconcile, urgent bool) {
	now := time.Now()
	if ev.closed {
		for _, p := range s.procs {
			if p.conn == ev.conn {
				p.conn, p.Connected, p.closedAt = nil, false, now
			}
		}
		return false, false
	}
	m := ev.msg
	if m.Event == workerproc.EventHello {
		p := s.procs[m.Port]
		switch {
		case p != nil && p.Alive && p.PID == m.PID && p.Running.Topology == m.Topology:
			p.conn, p.Connected, p.LastBeat, p.closedAt = ev.conn, true, now, time.Time{}
			if m.Active != nil {
				p.Running.Active = *m.Active
			}
			if p.pending != nil {
				// The answer to a reassignment was lost with the old
				// connection: the hello tells whether it was taken.
				if m.Fingerprint == workerproc.Fingerprint(p.pending.Assignment) {
					running := *p.pending
					running.Active = p.Running.Active
					p.Running = running
					s.save()
				}
				p.pending, p.ReassignSent = nil, 0
			}
			if m.Fingerprint != workerproc.Fingerprint(p.Running.Assignment) {
				// It runs other peers than the local state says (a
				// reassignment not saved): Step reassigns it.
				s.log.Warn("worker's assignment differs from the local state", "port", m.Port, "pid", m.PID)
				p.Running.Assignment.Workers = nil
			}
		case p == nil || !p.Alive:
			s.log.Warn("stopping a worker this supervisor does not know", "port", m.Port, "pid", m.PID, "topology", m.Topology)
			ev.conn.send(workerproc.Message{Cmd: workerproc.CmdStop})
			s.procs[m.Port] = &proc{Observed: Observed{Port: m.Port, PID: m.PID, Running: Desired{Port: m.Port, Topology: m.Topology},
				LaunchedAt: now, LastBeat: now, Alive: true, Connected: true, Stopping: true}, conn: ev.conn, stopAt: now}
		default:
			s.log.Warn("ignored a worker that claims a slot another runs", "port", m.Port, "pid", m.PID, "running", p.PID)
			ev.conn.c.Close()
		}
		return true, false
	}
	var p *proc
	for _, q := range s.procs {
		if q.conn == ev.conn {
			p = q
		}
	}
	if p == nil {
		return false, false
	}
	switch m.Event {
	case workerproc.EventHeartbeat, workerproc.EventStopped:
		first := p.LastBeat.IsZero() || p.beat.Time.IsZero()
		firstAck := acked(p.beat) == 0 && acked(m) > 0
		p.LastBeat, p.beat = now, m
		if m.Active != nil {
			p.Running.Active = *m.Active
		}
		// The first heartbeat makes a starting worker valid.
		return first, firstAck
	case workerproc.EventFailed:
		s.log.Error("worker failed", "port", p.Port, "pid", p.PID, "err", m.Error, "refused", m.Refused)
		p.refused = p.refused || m.Refused
		return false, false
	case workerproc.EventReassigned:
		if p.pending == nil || p.pending.Version != m.Version {
			return false, false
		}
		if m.Error != "" {
			s.log.Warn("worker refused its reassignment; restarting it", "port", p.Port, "version", m.Version, "err", m.Error)
			p.ReassignRefused = m.Version
		} else {
			s.log.Info("reassigned worker", "port", p.Port, "pid", p.PID, "version", m.Version)
			running := *p.pending
			running.Active = p.Running.Active
			p.Running = running
			s.save()
		}
		p.ReassignSent, p.pending = 0, nil
		return true, false
	}
	return false, false
}

// acked is the trees a heartbeat says the worker's spouts acked.
func acked(m workerproc.Message) int64 {
	var n int64
	for _, sp := range m.Spouts {
		n += sp.Acked
	}
	return n
}

func (s *Supervisor) observed() []Observed {
	os := make([]Observed, 0, len(s.procs))
	for _, port := range slices.Sorted(maps.Keys(s.procs)) {
		os = append(os, s.procs[port].Observed)
	}
	return os
}

// reconcile runs Step and carries out its actions.
func (s *Supervisor) reconcile(ctx context.Context, dls chan<- dlResult) {
	if !s.known {
		return // never act on an empty picture: the assignments are not read yet
	}
	now := time.Now()
	plan := Step(s.desired, s.observed(), s.arts, now, StepConfig{
		Timeouts: Timeouts{Worker: s.cfg.WorkerTimeout, Start: s.cfg.StartTimeout, DownloadRetry: 5 * time.Second,
			ArtifactRetention: s.cfg.ArtifactRetention},
		Ports: s.cfg.Ports, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, WireVersion: s.cfg.WireVersion,
	})
	// Launches wait for assignments read since a worker's peers last
	// refused it.
	hold := s.read < s.refusals
	if hold {
		for i, w := range plan.Workers {
			if slices.ContainsFunc(plan.Actions, func(a Action) bool { return a.Kind == Launch && a.Port == w.Port }) {
				plan.Workers[i].State, plan.Workers[i].Why = Waiting, "a worker's peers refused its assignment: waiting to read the assignments from etcd again before starting one"
			}
		}
	}
	if s.draining {
		for i, w := range plan.Workers {
			if p := s.procs[w.Port]; (p == nil || !p.Alive) && w.State != Exited {
				plan.Workers[i].State, plan.Workers[i].Why = Waiting, "draining: not started here; waiting for nimbus to move it to another supervisor"
			}
		}
	}
	s.states = plan.Workers
	for sha, a := range s.arts {
		if since := plan.Unused[sha]; !since.Equal(a.UnusedSince) {
			a.UnusedSince = since
			s.arts[sha] = a
		}
	}
	for _, w := range plan.Workers {
		if w.State == Refused {
			if key := fmt.Sprint(w); !s.logged[key] {
				s.logged[key] = true
				s.log.Error("refusing a worker", "port", w.Port, "topology", w.Topology, "why", w.Why)
			}
		}
	}
	for _, a := range plan.Actions {
		p := s.procs[a.Port]
		switch a.Kind {
		case Download:
			if s.draining {
				continue
			}
			sha := a.Artifact.SHA256
			s.arts[sha] = ArtifactState{Downloading: true}
			s.log.Info("downloading artifact", "artifact", sha, "size", a.Artifact.Size)
			art := a.Artifact
			s.wg.Go(func() {
				err := s.download(ctx, art)
				select {
				case dls <- dlResult{sha, err}:
				case <-ctx.Done():
				}
			})
		case Launch:
			if s.draining {
				continue // the drain starts no worker: nimbus moves it
			}
			if hold {
				if s.held != s.refusals {
					s.held = s.refusals
					s.log.Info("holding a worker's start until the assignments are read again", "port", a.Port, "topology", a.Desired.Topology)
				}
				continue
			}
			s.launch(*a.Desired, now)
		case Kill:
			// A topology assigned nowhere was killed, after the kill's
			// wait: its workers stop without draining again, each waiting
			// for trees that need its peers, which stop too.
			noDrain := !s.assigned[p.Running.Topology]
			s.log.Info("stopping worker", "port", a.Port, "pid", p.PID, "topology", p.Running.Topology, "why", a.Why, "drain", !noDrain)
			p.Stopping, p.StopWhy, p.stopAt = true, a.Why, now
			if p.conn == nil || p.conn.send(workerproc.Message{Cmd: workerproc.CmdStop, NoDrain: noDrain}) != nil {
				signal(p.PID, p.spec, sigTerm)
				p.termAt = now
			}
		case Reassign:
			d := *a.Desired
			if p.conn.send(workerproc.Message{Cmd: workerproc.CmdReassign, Version: d.Version, Assignment: &d.Assignment}) == nil {
				p.ReassignSent, p.pending = d.Version, &d
			}
		case Activate, Deactivate:
			cmd := workerproc.CmdActivate
			if a.Kind == Deactivate {
				cmd = workerproc.CmdDeactivate
			}
			if p.conn.send(workerproc.Message{Cmd: cmd}) == nil {
				p.Running.Active = a.Kind == Activate
			}
		case Forget:
			delete(s.procs, a.Port)
			s.save()
		case DeleteArtifact:
			s.deleteArtifact(a.Artifact.SHA256, now)
		}
	}
}

// launch starts a worker for d.
func (s *Supervisor) launch(d Desired, now time.Time) {
	pid, spec, err := s.start(d)
	if err != nil {
		if _, serr := os.Stat(s.artifactPath(d.Artifact.SHA256)); serr != nil {
			delete(s.arts, d.Artifact.SHA256) // gone from the store: fetch it again
		}
		if s.launchErr[d.Port] != err.Error() {
			s.launchErr[d.Port] = err.Error()
			s.log.Error("cannot launch worker", "port", d.Port, "topology", d.Topology, "err", err)
		}
		return
	}
	delete(s.launchErr, d.Port)
	s.log.Info("launched worker", "port", d.Port, "pid", pid, "topology", d.Topology, "version", d.Version)
	s.launched(d.Port, d.Topology)
	s.procs[d.Port] = &proc{Observed: Observed{Port: d.Port, PID: pid, Running: d, LaunchedAt: now, Alive: true}, spec: spec}
	s.save()
}

// start writes d's spec and starts `ARTIFACT worker --spec FILE`, its
// output appended to workers/<port>/worker.log.
func (s *Supervisor) start(d Desired) (pid int, spec string, err error) {
	listen := net.JoinHostPort(s.cfg.Host, strconv.Itoa(d.Port))
	// A port another process holds (a worker this supervisor lost track
	// of, until it says hello and is stopped) would only make the worker
	// fail.
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return 0, "", fmt.Errorf("slot %d is in use by another process: %w", d.Port, err)
	}
	l.Close()
	dir := filepath.Join(s.cfg.Dir, "workers", strconv.Itoa(d.Port))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, "", err
	}
	params, err := json.Marshal(d.Params)
	if err != nil {
		return 0, "", err
	}
	ws := workerproc.Spec{
		Topology: d.Name,
		// internal/cli registers every topology of a binary under "run:"
		// and its name.
		Factory: "run:" + d.Factory, Params: params, Config: gale.Config(d.Config), Cluster: s.cfg.Cluster,
		Worker: d.Assignment.Worker, Workers: len(d.Assignment.Workers),
		Listen:      listen,
		HeartbeatMS: int(s.cfg.WorkerHeartbeat / time.Millisecond), LogLevel: s.cfg.WorkerLogLevel,
		Supervised: &workerproc.Supervised{TopologyID: d.Topology, Version: d.Version, Port: d.Port, Active: d.Active,
			Control: s.sock, Assignment: d.Assignment, Counts: s.countsPath(d.Port)},
	}
	b, err := json.MarshalIndent(ws, "", "  ")
	if err != nil {
		return 0, "", err
	}
	spec = filepath.Join(dir, "spec.json")
	if err := writeFileAtomic(spec, b, 0o600); err != nil {
		return 0, "", err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "worker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, "", err
	}
	defer logf.Close() // the worker has its own copy
	args := append(slices.Clone(s.cfg.WorkerArgs), "--spec", spec)
	cmd := exec.Command(s.artifactPath(d.Artifact.SHA256), args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	pid, err = startProcess(cmd)
	if err != nil {
		return 0, "", fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return pid, spec, nil
}
