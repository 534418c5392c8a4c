package coordination

import (
	"context"
	"errors"
	"fmt"
	wordbench "github.com/gale-stream/gale/internal/bench"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/procstat"
)

// Timeouts of the phases that wait for nimbus or etcd: generous, for a
// busy machine; a phase that takes longer is broken, not slow.
const (
	leaderTimeout   = time.Minute
	joinTimeout     = 5 * time.Minute
	scheduleTimeout = 5 * time.Minute
	// detectSlack is added to the supervisor timeout.
	detectSlack = 2 * time.Minute
	// progressEvery is how often the steady state prints a progress line.
	progressEvery = 10 * time.Second
)

// Run runs the experiment cfg describes and returns what it measured.
// The report is returned however the run ended, with what it measured
// until then; the error, also in Report.Error, says what went wrong. Run
// stops every process and goroutine it started before it returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	r := newReport(cfg)
	if err := cfg.Validate(); err != nil {
		r.Error = err.Error()
		return r, err
	}
	b := &bench{cfg: cfg, r: r, log: &lineWriter{w: cfg.Log}, view: newView()}
	err := b.run(ctx)
	if cerr := b.close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r, err
}

// bench is one run: what it started, in the order it stops them.
type bench struct {
	cfg  Config
	r    *Report
	log  *lineWriter
	view *view
	c    counters

	dir          string
	etcd, nimbus *child
	// ctx is done when the caller's is or a child exits (the cause says
	// which); cancel ends it, and wg waits for the goroutines on it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	obs     *clientv3.Client // the bench's own view of etcd
	obsS    *coord.Store
	clients []*clientv3.Client // the supervisors' leases', shared
	stores  []*coord.Store
	admin   *grpc.ClientConn // Submit and ClusterInfo, not counted
	conns   []*grpc.ClientConn
	sups    []*supervisor
}

func (b *bench) run(parent context.Context) (err error) {
	b.ctx, b.cancel = context.WithCancelCause(parent)
	defer func() {
		if err != nil && b.ctx.Err() != nil {
			// Say why the phase's wait ended: a child's exit or the caller.
			if cause := context.Cause(b.ctx); cause != nil && !errors.Is(err, cause) {
				err = fmt.Errorf("%w (%v)", err, cause)
			}
		}
	}()
	if err := b.start(); err != nil {
		return err
	}
	if err := b.join(); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	id, err := b.schedule()
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	if err := b.steady(); err != nil {
		return fmt.Errorf("steady state: %w", err)
	}
	if err := b.detect(id); err != nil {
		return fmt.Errorf("detection: %w", err)
	}
	return nil
}

// start starts etcd and nimbus, connects to both, and waits for nimbus
// to lead.
func (b *bench) start() error {
	dir, err := os.MkdirTemp("", "gale-bench-coordination-")
	if err != nil {
		return err
	}
	b.dir = dir
	conf := fmt.Sprintf("%s: %d\n%s: %d\n",
		config.NimbusSupervisorTimeoutSecs, int(b.cfg.SupervisorTimeout.Seconds()),
		config.SupervisorHeartbeatFrequencySecs, int(b.cfg.ReportEvery.Seconds()))
	confFile := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		return err
	}
	b.etcd, err = startChild(b.cfg, b.log, "etcd", " etcd: serving on ",
		"etcd", "--dir", filepath.Join(dir, "etcd"), "--listen", "http://127.0.0.1:0")
	if err != nil {
		return err
	}
	etcdURL, err := b.etcd.await(b.ctx)
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	b.nimbus, err = startChild(b.cfg, b.log, "nimbus", " nimbus: serving on ",
		"nimbus", "--dir", filepath.Join(dir, "nimbus"), "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--etcd", etcdURL, "--file", confFile)
	if err != nil {
		return err
	}
	addr, err := b.nimbus.await(b.ctx)
	if err != nil {
		return err
	}
	b.log.printf("gale bench coordination: etcd on %s (pid %d), nimbus on %s (pid %d)", etcdURL, b.etcd.pid(), addr, b.nimbus.pid())
	b.watchChildren()

	if b.obs, err = coord.Dial([]string{etcdURL}); err != nil {
		return err
	}
	b.obsS = coord.NewStore(b.obs)
	b.wg.Go(func() { b.view.watch(b.ctx, b.obsS, b.log) })
	for range min(b.cfg.EtcdClients, b.cfg.Supervisors) {
		c, err := coord.Dial([]string{etcdURL})
		if err != nil {
			return err
		}
		b.clients = append(b.clients, c)
		b.stores = append(b.stores, coord.NewStore(c))
	}
	if b.admin, err = grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		return err
	}
	for range b.cfg.conns() {
		c, err := dialCounted(addr, &b.c)
		if err != nil {
			return err
		}
		b.conns = append(b.conns, c)
	}
	leader, err := b.awaitCluster(leaderTimeout, "nimbus to lead", func(ci *nimbuspb.ClusterInfoResponse) bool { return ci.GetLeaderId() != "" })
	if err != nil {
		return err
	}
	b.log.printf("gale bench coordination: nimbus %s leads", leader.GetLeaderId())
	return nil
}

// watchChildren ends b.ctx, with the reason, when etcd or nimbus exits.
func (b *bench) watchChildren() {
	b.wg.Go(func() {
		select {
		case <-b.etcd.done:
			b.cancel(b.etcd.exited())
		case <-b.nimbus.done:
			b.cancel(b.nimbus.exited())
		case <-b.ctx.Done():
		}
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for nimbus: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// awaitCluster polls nimbus's ClusterInfo until ok holds, for at most
// timeout.
func (b *bench) awaitCluster(timeout time.Duration, what string, ok func(*nimbuspb.ClusterInfoResponse) bool) (*nimbuspb.ClusterInfoResponse, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	api := nimbuspb.NewNimbusClient(b.admin)
	tk := time.NewTicker(50 * time.Millisecond)
	defer tk.Stop()
	var last error
	for {
		ci, err := api.ClusterInfo(ctx, &nimbuspb.ClusterInfoRequest{})
		if err == nil && ok(ci) {
			return ci, nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-tk.C:
		case <-ctx.Done():
			if b.ctx.Err() == nil {
				return nil, fmt.Errorf("waited %v for %s (last error: %v)", timeout, what, last)
			}
			return nil, b.ctx.Err()
		}
	}
}

// status reads etcd's raft index and revision, within 10 s.
func (b *bench) status(ctx context.Context) (uint64, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return coord.Status(ctx, b.obs)
}

// joinParallel is how many supervisors join at once.
const joinParallel = 32

// join makes every supervisor a member, then starts their reports.
func (b *bench) join() error {
	idx0, _, err := b.status(b.ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(b.ctx, joinTimeout)
	defer cancel()
	b.sups = make([]*supervisor, b.cfg.Supervisors)
	start := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	next := make(chan int)
	for range joinParallel {
		wg.Go(func() {
			for i := range next {
				rec := newSupervisor(i, b.cfg.WorkersPer, b.cfg.GaleVersion, b.cfg.WireVersion)
				m, err := b.stores[i%len(b.stores)].JoinSupervisor(ctx, rec, b.cfg.SupervisorTimeout)
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("supervisor %s: %w", rec.ID, err))
					mu.Unlock()
					cancel()
					continue
				}
				b.sups[i] = &supervisor{rec: rec, m: m, done: make(chan struct{})}
			}
		})
	}
feed:
	for i := range b.cfg.Supervisors {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.r.JoinS = time.Since(start).Seconds()
	idx1, _, err := b.status(b.ctx)
	if err != nil {
		return err
	}
	b.r.JoinRaftEntries = idx1 - idx0
	if _, err := b.awaitCluster(joinTimeout, "nimbus to list every supervisor", func(ci *nimbuspb.ClusterInfoResponse) bool {
		return len(ci.GetSupervisors()) >= b.cfg.Supervisors
	}); err != nil {
		return err
	}
	b.r.JoinSeenS = time.Since(start).Seconds()
	b.log.printf("gale bench coordination: join: %d supervisors in %.2fs (%d raft entries); nimbus listed them all after %.2fs",
		b.cfg.Supervisors, b.r.JoinS, b.r.JoinRaftEntries, b.r.JoinSeenS)

	for i, s := range b.sups {
		s.client = nimbuspb.NewNimbusClient(b.conns[i%len(b.conns)])
		ctx, stop := context.WithCancel(b.ctx)
		s.stop = stop
		seed := uint64(i)
		b.wg.Go(func() { report(ctx, s, b.view, b.cfg.ReportEvery, &b.c, seed) })
	}
	return nil
}

// schedule submits the topology, and the filler, and waits for their
// assignments. It returns the topology's id.
func (b *bench) schedule() (string, error) {
	id, took, err := b.submit("bench", b.cfg.TopologyWorkers, true)
	if err != nil {
		return "", err
	}
	b.r.ScheduleS = took
	b.r.Workers = b.cfg.TopologyWorkers
	b.log.printf("gale bench coordination: schedule: %d workers assigned %.3fs after submit began (submit took %.3fs)",
		b.cfg.TopologyWorkers, b.r.ScheduleS, b.r.SubmitS)
	if fill := b.cfg.Supervisors*b.cfg.WorkersPer - b.cfg.TopologyWorkers - b.cfg.WorkersPer; b.cfg.Fill && fill > 0 {
		_, took, err := b.submit("filler", fill, false)
		if err != nil {
			return "", err
		}
		b.r.FillerWorkers, b.r.FillerScheduleS = fill, took
		b.r.Workers += fill
		b.log.printf("gale bench coordination: schedule: the filler's %d workers assigned %.3fs after submit began", fill, took)
	}
	return id, nil
}

// submit submits topology name of workers workers and waits until its
// assignment places them all; it returns its id and the time from the
// start of Submit until the assignment was read. main records Submit's
// own time in the report.
func (b *bench) submit(name string, workers int, main bool) (string, float64, error) {
	ctx, cancel := context.WithTimeout(b.ctx, scheduleTimeout)
	defer cancel()
	start := time.Now()
	id, err := submit(ctx, nimbuspb.NewNimbusClient(b.admin), name, workers, b.cfg.GaleVersion, b.cfg.WireVersion)
	if err != nil {
		return "", 0, err
	}
	returned := time.Now()
	_, at, err := b.view.await(ctx, func(asgs []coord.Assignment) bool {
		a, ok := find(asgs, id)
		return ok && len(a.Workers) == workers
	})
	if err != nil {
		if b.ctx.Err() == nil {
			return "", 0, fmt.Errorf("topology %s (%s): no assignment of its %d workers in etcd within %v of its submission", name, id, workers, scheduleTimeout)
		}
		return "", 0, err
	}
	if main {
		b.r.SubmitS = returned.Sub(start).Seconds()
		b.r.ScheduleAfterSubmitS = max(0, at.Sub(returned).Seconds())
	}
	return id, at.Sub(start).Seconds(), nil
}

// sleep waits d or until b.ctx is done, and says which.
func (b *bench) sleep(d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-b.ctx.Done():
		return false
	}
}

// steady measures etcd, nimbus and the reports for cfg.Steady, after
// letting every supervisor report its workers once.
func (b *bench) steady() error {
	if !b.sleep(b.cfg.settle()) {
		return b.ctx.Err()
	}
	// The CPU of nimbus, etcd and this process (the simulated
	// supervisors), in that order.
	cpuOf := func() [3]time.Duration {
		var out [3]time.Duration
		for i, pid := range []int{b.nimbus.pid(), b.etcd.pid(), os.Getpid()} {
			d, err := procstat.CPU(pid)
			if err != nil && b.r.NimbusCPUError == "" {
				b.r.NimbusCPUError = err.Error()
			}
			out[i] = d
		}
		return out
	}
	idx0, rev0, err := b.status(b.ctx)
	if err != nil {
		return err
	}
	cpu0, snap0, start := cpuOf(), b.c.snapshot(), time.Now()
	b.r.RaftIndexStart, b.r.RevisionStart = idx0, rev0
	b.log.printf("gale bench coordination: steady state for %v: raft index %d, revision %d", b.cfg.Steady, idx0, rev0)
	measure := func(ctx context.Context) error {
		idx, rev, err := b.status(ctx)
		if err != nil {
			return err
		}
		el := time.Since(start)
		d := b.c.snapshot().sub(snap0)
		sec := el.Seconds()
		b.r.SteadyS = sec
		b.r.RaftIndexEnd, b.r.RevisionEnd = idx, rev
		b.r.EtcdWritesPerS = float64(idx-idx0) / sec
		cpu := cpuOf()
		b.r.NimbusCPUSPerS = (cpu[0] - cpu0[0]).Seconds() / sec
		b.r.EtcdCPUSPerS = (cpu[1] - cpu0[1]).Seconds() / sec
		b.r.BenchCPUSPerS = (cpu[2] - cpu0[2]).Seconds() / sec
		b.r.ReportsPerS = float64(d.reports) / sec
		b.r.ReportFailures = d.failures
		if e := b.c.firstErr.Load(); e != nil {
			b.r.ReportError = *e
		}
		b.r.WorkerSummariesPerS = float64(d.workers) / sec
		b.r.RPCProtoBytesPerS = float64(d.protoBytes) / sec
		b.r.RPCBytesPerS = float64(d.wireOut) / sec
		b.r.RPCBytesInPerS = float64(d.wireIn) / sec
		return nil
	}
	end := start.Add(b.cfg.Steady)
	for {
		left := time.Until(end)
		if left <= 0 {
			break
		}
		if !b.sleep(min(left, progressEvery)) {
			// Cut short: report what the steady state was until now, if
			// etcd still answers.
			_ = measure(context.Background())
			return b.ctx.Err()
		}
		if err := measure(b.ctx); err != nil {
			return err
		}
		b.log.printf("gale bench coordination: steady %.0fs/%.0fs: raft index +%d, revision +%d; nimbus %.4f cpu s/s; %.1f reports/s, %s bytes/s on the wire",
			b.r.SteadyS, b.cfg.Steady.Seconds(), b.r.RaftIndexEnd-idx0, b.r.RevisionEnd-rev0, b.r.NimbusCPUSPerS,
			b.r.ReportsPerS, wordbench.Commas(int64(b.r.RPCBytesPerS)))
	}
	return nil
}

// detect kills a supervisor that runs workers of topology id (its
// keep-alives and reports stop) and measures until its lease expires and
// until nimbus's new assignment moves its workers.
func (b *bench) detect(id string) error {
	asgs, _, _ := b.view.get()
	old, ok := find(asgs, id)
	if !ok || len(old.Workers) == 0 {
		return fmt.Errorf("topology %s has no assignment to take a supervisor from", id)
	}
	victim := old.Workers[0].Supervisor
	var sup *supervisor
	for _, s := range b.sups {
		if s.rec.ID == victim {
			sup = s
		}
	}
	if sup == nil {
		return fmt.Errorf("the assignment of %s names supervisor %q, which the bench does not simulate", id, victim)
	}
	for _, w := range old.Workers {
		if w.Supervisor == victim {
			b.r.KilledWorkers++
		}
	}
	b.r.Killed = victim
	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.SupervisorTimeout+detectSlack)
	defer cancel()
	sups := b.obsS.Changes(ctx, coord.SupervisorsPrefix)
	present := func() (bool, error) {
		ss, err := b.obsS.Supervisors(ctx)
		if err != nil {
			return false, err
		}
		for _, s := range ss {
			if s.ID == victim {
				return true, nil
			}
		}
		return false, nil
	}
	// The first receive is the watch's start: from here on, the delete
	// is seen.
	select {
	case <-sups:
	case <-ctx.Done():
		return ctx.Err()
	}
	if ok, err := present(); err != nil || !ok {
		return fmt.Errorf("supervisor %s is not a member before its death (%v)", victim, err)
	}
	b.log.printf("gale bench coordination: detection: killing %s, which runs %d of the topology's workers", victim, b.r.KilledWorkers)
	start := time.Now()
	sup.m.Abandon()
	sup.stop()
	<-sup.done
	var gone, moved time.Time
	var moves int
	for gone.IsZero() || moved.IsZero() {
		asgs, at, changed := b.view.get()
		if a, ok := find(asgs, id); ok && moved.IsZero() && len(a.Workers) == len(old.Workers) &&
			!slicesContainsSupervisor(a.Workers, victim) {
			moved = at
			for i := range a.Workers {
				if a.Workers[i] != old.Workers[i] {
					moves++
				}
			}
			continue
		}
		select {
		case _, open := <-sups:
			if open {
				if at := time.Now(); gone.IsZero() {
					if p, err := present(); err == nil && !p {
						gone = at
					}
				}
				continue
			}
		case <-changed:
			continue
		case <-ctx.Done():
		}
		if b.ctx.Err() != nil {
			return b.ctx.Err()
		}
		return fmt.Errorf("supervisor %s: no reassignment of its workers within %v of its death (lease expired: %v)",
			victim, b.cfg.SupervisorTimeout+detectSlack, !gone.IsZero())
	}
	if gone.After(moved) {
		// Nimbus's watch fired before the bench's did.
		gone = moved
	}
	b.r.DetectS = moved.Sub(start).Seconds()
	b.r.DetectTTLS = gone.Sub(start).Seconds()
	b.r.DetectNimbusS = moved.Sub(gone).Seconds()
	b.r.MovedWorkers = moves
	b.log.printf("gale bench coordination: detection: %s's workers moved %.2fs after its death (%.2fs until its lease expired, %.2fs for nimbus); %d of the topology's workers moved",
		victim, b.r.DetectS, b.r.DetectTTLS, b.r.DetectNimbusS, moves)
	return nil
}

func slicesContainsSupervisor(ws []coord.Slot, sup string) bool {
	for _, w := range ws {
		if w.Supervisor == sup {
			return true
		}
	}
	return false
}

// close stops the reports, drops the memberships without revoking them
// (etcd goes next, and a revocation each would be as many writes), stops
// nimbus and then etcd, and removes the directory.
func (b *bench) close() error {
	var errs []error
	if b.cancel != nil {
		b.cancel(context.Canceled)
	}
	b.wg.Wait()
	for _, s := range b.sups {
		if s != nil {
			s.m.Abandon()
		}
	}
	for _, s := range b.stores {
		s.Close()
	}
	if b.obsS != nil {
		b.obsS.Close()
	}
	for _, c := range append(b.clients, b.obs) {
		if c != nil {
			_ = c.Close()
		}
	}
	for _, c := range append(b.conns, b.admin) {
		if c != nil {
			_ = c.Close()
		}
	}
	if b.nimbus != nil {
		errs = append(errs, b.nimbus.stop())
	}
	if b.etcd != nil {
		errs = append(errs, b.etcd.stop())
	}
	if b.dir != "" {
		errs = append(errs, os.RemoveAll(b.dir))
	}
	return errors.Join(errs...)
}
