package stock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gale-stream/gale/internal/config"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/gale-stream/gale"
	benchchaos "github.com/gale-stream/gale/internal/bench/chaos"
	benchfail "github.com/gale-stream/gale/internal/bench/failover"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/devcluster"
	"github.com/gale-stream/gale/internal/freeport"
	"github.com/gale-stream/gale/internal/procstat"
)

// chaosFlags are the flags of `bench chaos`.
type chaosFlags struct {
	duration, period, warmup time.Duration
	downMin, downMax         time.Duration
	drainTimeout, settle     time.Duration
	maxGap                   time.Duration
	seed                     uint64
	nimbuses, supervisors    int
	workers                  int // 0: 2 × supervisors
	rate                     float64
	messageTimeout           int
	maxSpoutPending          int
	file, dir                string
	asJSON, verbose          bool
}

func newChaosCmd() *cobra.Command {
	f := chaosFlags{duration: 10 * time.Minute, period: 10 * time.Second, warmup: 10 * time.Second,
		downMin: time.Second, downMax: 5 * time.Second, drainTimeout: 2 * time.Minute, settle: time.Minute,
		maxGap: 1500 * time.Millisecond, nimbuses: 2, supervisors: 3, rate: 500, messageTimeout: 10, maxSpoutPending: 100}
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "kill -9 random workers, supervisors and the nimbus leader under acked load; check that list, REST and /metrics acked never go back and list always answers",
		Long: `Run a dev cluster of --nimbuses nimbuses and --supervisors supervisors (etcd,
the nimbuses and the supervisors as processes of this program, the UI in it,
on 127.0.0.1) with the failover bench's word count in ack mode, fed --rate
sentences per second from a hold-and-ack queue in this process, outside every
worker, which counts what was acked, replayed and lost.

After --warmup, for --duration, every --period one event from a schedule drawn
from --seed (printed; the same seed replays the same schedule): a kill -9 of
a random worker (its supervisor starts it again), of a random supervisor
(started again after a downtime drawn from --down-min to --down-max; its
workers keep running, as kill -9 leaves them), or of the nimbus leader
(started again likewise).

Throughout, once a second and each on its own goroutine, the bench asks:
"list --json" through the CLI's client (nimbus.seeds naming every nimbus), the
UI's /api/v1/topology/summary, its topology page (the acked count of every
window) and its /metrics (gale_topology_acked_total); each answer, or its
failure, is recorded with its time. After the chaos the queue stops
producing, the run waits for every sentence to be acked (--drain-timeout) and
for the counts to catch up (--settle).

It checks, as issue 22's Done-when: no source's acked count ever decreases (a
rolling window's only while the topology is younger than the window); list
answers at least every --max-list-gap; every source ends ≥ the acks the queue
counted; the queue lost nothing. It prints the events, each source's answers,
longest gap, decreases (from, to, when, after which event) and final count,
the queue's counts and the checks; --json one JSON document, with every
observation. A failed check, or a process of the cluster that died unasked,
makes the exit status 1.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return cli.Usage(err)
			}
			return runChaos(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.duration, "duration", f.duration, "how long the chaos runs (after --warmup)")
	fl.DurationVar(&f.period, "period", f.period, "the time between events")
	fl.Uint64Var(&f.seed, "seed", 0, "the schedule's seed (default: one from the clock, printed)")
	fl.DurationVar(&f.warmup, "warmup", f.warmup, "how long the topology runs before the first period")
	fl.DurationVar(&f.downMin, "down-min", f.downMin, "the shortest time a killed supervisor or leader stays down")
	fl.DurationVar(&f.downMax, "down-max", f.downMax, "the longest time a killed supervisor or leader stays down")
	fl.IntVar(&f.nimbuses, "nimbuses", f.nimbuses, "nimbus processes: one leads, the others stand by")
	fl.IntVar(&f.supervisors, "supervisors", f.supervisors, "supervisor processes")
	fl.IntVar(&f.workers, "workers", f.workers, "worker processes of the topology (default 2 per supervisor); every supervisor has a slot for each")
	fl.Float64Var(&f.rate, "rate", f.rate, "sentences the queue makes per second")
	fl.DurationVar(&f.maxGap, "max-list-gap", f.maxGap, "the longest time list may go without an answer (polled every 1 s: one missed poll fails it)")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", f.drainTimeout, "how long to wait at the end for every sentence to be acked")
	fl.DurationVar(&f.settle, "settle", f.settle, "how long to wait after the drain for every source's count to reach the queue's")
	fl.IntVar(&f.messageTimeout, "message-timeout", f.messageTimeout, "topology.message.timeout.secs")
	fl.IntVar(&f.maxSpoutPending, "max-spout-pending", f.maxSpoutPending, "topology.max.spout.pending")
	fl.StringVar(&f.file, "file", "", "the cluster's gale.yaml `FILE`, for the nimbuses and every supervisor")
	fl.StringVar(&f.dir, "dir", "", "the `directory` to keep the cluster's state in, kept on exit (default: a temporary directory, removed on exit)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document on stdout and nothing else")
	fl.BoolVar(&f.verbose, "verbose", false, "show the cluster's processes' output on stderr (by default it is shown only if the run fails)")
	return cmd
}

func (f *chaosFlags) check() error {
	var errs []error
	sc := benchchaos.ScheduleConfig{Duration: f.duration, Period: f.period, DownMin: f.downMin, DownMax: f.downMax}
	if err := sc.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--duration, --period, --down-min, --down-max: %w", err))
	}
	if f.warmup < 0 {
		errs = append(errs, fmt.Errorf("--warmup must be ≥ 0, got %s", f.warmup))
	}
	if f.nimbuses < 2 {
		errs = append(errs, fmt.Errorf("--nimbuses must be ≥ 2, got %d: the leader is killed, another must take over", f.nimbuses))
	}
	if f.supervisors < 1 {
		errs = append(errs, fmt.Errorf("--supervisors must be ≥ 1, got %d", f.supervisors))
	}
	if f.workers < 0 {
		errs = append(errs, fmt.Errorf("--workers must be ≥ 1, got %d", f.workers))
	}
	if f.rate <= 0 {
		errs = append(errs, fmt.Errorf("--rate must be > 0 sentences per second, got %v", f.rate))
	}
	if f.maxGap <= 0 {
		errs = append(errs, fmt.Errorf("--max-list-gap must be > 0, got %s", f.maxGap))
	}
	if f.drainTimeout <= 0 || f.settle < 0 {
		errs = append(errs, fmt.Errorf("--drain-timeout must be > 0 and --settle ≥ 0, got %s and %s", f.drainTimeout, f.settle))
	}
	if f.messageTimeout < 1 {
		errs = append(errs, fmt.Errorf("--message-timeout must be ≥ 1 (seconds), got %d", f.messageTimeout))
	}
	if f.maxSpoutPending < 1 {
		errs = append(errs, fmt.Errorf("--max-spout-pending must be ≥ 1, got %d", f.maxSpoutPending))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if f.workers == 0 {
		f.workers = 2 * f.supervisors
	}
	return nil
}

// The sources the bench polls, and the Prometheus counter it reads.
const (
	chaosList       = "list"
	chaosSummary    = "rest topology/summary"
	chaosTopology   = "rest topology " // + window
	chaosMetrics    = "metrics"
	chaosMetricName = "gale_topology_acked_total"
	// chaosPollTimeout bounds one poll: with one sent a second, at most
	// this many seconds' polls of a source are in flight.
	chaosPollTimeout = 5 * time.Second
)

// chaosWindows are the topology page's windows, as Storm's UI names them,
// with their lengths in seconds (0: all time).
var chaosWindows = []struct {
	param string
	secs  float64
}{{"600", 600}, {"10800", 10800}, {"86400", 86400}, {":all-time", 0}}

func chaosSources() []benchchaos.Source {
	srcs := []benchchaos.Source{
		{Name: chaosList, CheckGap: true, CheckFinal: true},
		// Storm's topology/summary has no acked count: answered or not,
		// and a count if one comes.
		{Name: chaosSummary, CheckFinal: true, NoValue: true},
	}
	for _, w := range chaosWindows {
		srcs = append(srcs, benchchaos.Source{Name: chaosTopology + w.param, WindowS: w.secs, CheckFinal: true})
	}
	return append(srcs, benchchaos.Source{Name: chaosMetrics, CheckFinal: true})
}

func runChaos(cmd *cobra.Command, f chaosFlags) error {
	ctx := cmd.Context()
	opts := &cli.Options{Name: cmd.Root().Name()}
	if f.seed == 0 {
		f.seed = rand.Uint64() | 1 // never 0, which asks for one
	}
	sched := benchchaos.Schedule(f.seed, benchchaos.ScheduleConfig{Duration: f.duration, Period: f.period, DownMin: f.downMin, DownMax: f.downMax})
	var file gale.Config
	var err error
	if f.file != "" {
		if file, err = config.LoadFile(f.file); err != nil {
			return err
		}
	}
	// Fixed ports, below the ephemeral range: a nimbus or worker started
	// again must be where the seeds and assignments say, and no outgoing
	// connection may have taken its port while it was down.
	slotBase, err := chaosPorts(f.supervisors * f.workers)
	if err != nil {
		return err
	}
	nimbusPort, err := chaosPorts(f.nimbuses)
	if err != nil {
		return err
	}
	uiPort, err := freeport.Consecutive(1)
	if err != nil {
		return err
	}
	srv, err := benchfail.Listen(benchfail.ServerConfig{
		Rate:       f.rate,
		Lease:      time.Duration(2*f.messageTimeout+5) * time.Second,
		MaxUnacked: max(10000, int(f.rate*60)),
	})
	if err != nil {
		return err
	}
	defer srv.Close()

	tail := &tailWriter{max: 64 << 10}
	var clusterOut io.Writer = tail
	if f.verbose {
		clusterOut = cmd.ErrOrStderr()
	}
	var live io.Writer = io.Discard
	if !f.asJSON {
		live = cmd.ErrOrStderr()
	}
	fmt.Fprintf(live, "%s bench chaos: seed %d (--seed %d replays the schedule): %d events over %s\n", opts.Name, f.seed, f.seed, len(sched), f.duration)
	hurry, stopSignals := hurrySignal()
	defer stopSignals()
	d, err := startDev(ctx, opts, devFlags{dir: f.dir, file: f.file, nimbuses: f.nimbuses, supervisors: f.supervisors,
		slotsPer: f.workers, slotBase: slotBase, nimbusPort: nimbusPort, uiPort: uiPort}, clusterOut, hurry)
	if err != nil {
		if !f.verbose {
			err = fmt.Errorf("%w\nthe cluster's output:\n%s", err, tail.String())
		}
		return err
	}
	r := &benchchaos.Report{Seed: f.seed, DurationS: f.duration.Seconds(), PeriodS: f.period.Seconds(), WarmupS: f.warmup.Seconds(),
		Nimbuses: f.nimbuses, Supervisors: f.supervisors, Workers: f.workers, Rate: f.rate, MaxGapS: f.maxGap.Seconds(),
		Planned: benchchaos.Planned(sched), Events: []benchchaos.Done{}, Observations: []benchchaos.Observation{}}
	c := &chaos{f: f, d: d, srv: srv, live: live, sched: sched, r: r, killed: make(map[*devcluster.Child]bool),
		started: len(d.Children()), rec: &chaosRecorder{latest: make(map[string]int64)}, ready: make(chan chaosReady, len(sched))}
	runErr := c.run(ctx, cmd, file)
	if ctx.Err() != nil {
		fmt.Fprintf(live, "%s bench chaos: stopping the cluster (Ctrl-C again kills it at once)\n", d.Name)
	}
	stopErr := d.Stop()
	c.wg.Wait() // each await ends: its process has exited
	c.drainExits()
	srv.Close()
	sm := srv.Sample()
	r.Produced, r.Acked, r.Failed, r.Replayed, r.Duplicates, r.Lost = sm.Produced, sm.Acked, sm.Failed, sm.Replayed, sm.Duplicates, int64(sm.Unacked)
	r.Observations = c.rec.all()
	r.Result = benchchaos.Evaluate(benchchaos.Input{Sources: chaosSources(), Observations: r.Observations, Events: r.Events,
		StartS: c.pollStart, EndS: c.pollEnd, TopologyStartS: c.submitted, MaxGapS: f.maxGap.Seconds(), SourceAcked: r.Acked, Lost: r.Lost})
	if runErr != nil {
		r.Error = runErr.Error()
	}
	if f.asJSON {
		err = cli.WriteJSON(cmd.OutOrStdout(), r)
	} else {
		err = r.Print(cmd.OutOrStdout(), d.Name)
	}
	if err != nil {
		return err
	}
	if runErr != nil && !f.verbose {
		fmt.Fprintf(cmd.ErrOrStderr(), "the cluster's output (its last %d KiB):\n%s", tail.max>>10, tail.String())
	}
	if runErr == nil && !r.Pass {
		var failed []string
		for _, ch := range r.Checks {
			if !ch.OK {
				failed = append(failed, ch.Name)
			}
		}
		runErr = fmt.Errorf("%d of %d checks failed: %s (seed %d)", len(failed), len(r.Checks), strings.Join(failed, "; "), f.seed)
	}
	return errors.Join(runErr, stopErr)
}

// chaosPorts finds n consecutive free ports of 127.0.0.1 below the
// system's ephemeral range (Linux: ip_local_port_range; elsewhere, or if
// it leaves no room, any free ports): a process killed and started again
// binds its port again, and a port the kernel hands out as the source of
// outgoing connections could be taken while it is down.
func chaosPorts(n int) (int, error) {
	low := 0
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		low, _ = strconv.Atoi(strings.Fields(string(b) + " x")[0])
	}
	const floor = 10000 // above the well-known and registered services most hosts run
	if low-n <= floor {
		return freeport.Consecutive(n)
	}
	for range 100 {
		base := floor + rand.IntN(low-n-floor)
		lns := make([]net.Listener, 0, n)
		for p := base; p < base+n; p++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		ok := len(lns) == n
		for _, ln := range lns {
			ln.Close()
		}
		if ok {
			return base, nil
		}
	}
	return freeport.Consecutive(n)
}

// chaos is one run of the bench: its run loop owns every field but rec,
// which the polls write.
type chaos struct {
	f      chaosFlags
	d      *devcluster.Cluster
	srv    *benchfail.Server
	live   io.Writer
	sched  []benchchaos.Event
	r      *benchchaos.Report
	t0     time.Time // the run's start: times are seconds since
	client string    // the gale.yaml of the CLI's polls: nimbus.seeds naming every nimbus
	rec    *chaosRecorder
	// killed are the children the bench killed: their exits are asked for.
	killed map[*devcluster.Child]bool
	// started counts the children ever started, exits those whose exit
	// was received from d.Exited() (drainExits takes the rest).
	started, exits int
	restarts       []chaosRestart // pending, in time order
	// starting counts the restarted processes not ready yet; their
	// goroutines (wg) send on ready, buffered for every event.
	starting int
	ready    chan chaosReady
	wg       sync.WaitGroup
	// pollStart and pollEnd are when the first and last polls were sent;
	// submitted is when the topology was.
	pollStart, pollEnd, submitted float64
}

// chaosRestart is a killed supervisor or nimbus to start again.
type chaosRestart struct {
	at    time.Duration // since t0
	c     *devcluster.Child
	event int // its index in r.Events
}

func (c *chaos) since() time.Duration { return time.Since(c.t0) }
func (c *chaos) now() float64         { return c.since().Seconds() }

func (c *chaos) run(ctx context.Context, cmd *cobra.Command, file gale.Config) error {
	c.t0 = time.Now()
	var err error
	if c.client, err = writeClientConfig(c.d.Dir, file, c.d.NimbusAddrs); err != nil {
		return err
	}
	w := strconv.Itoa(c.f.workers)
	sf := cli.SubmitFlags{ClusterFlags: cli.ClusterFlags{File: c.client}, Workers: c.f.workers,
		Params: []string{"queue=" + c.srv.Addr(), "spouts=" + w, "splitters=" + w, "counters=" + w},
		Conf: []string{gale.TopologyWorkers + "=" + w, gale.TopologyAckerExecutors + "=" + w,
			gale.TopologyMessageTimeoutSecs + "=" + strconv.Itoa(c.f.messageTimeout),
			gale.TopologyMaxSpoutPending + "=" + strconv.Itoa(c.f.maxSpoutPending)}}
	s, err := sf.Parse(cmd, &cli.Options{Name: c.d.Name, Topologies: []cli.Topology{failoverTopology}}, []string{benchfail.TopologyName})
	if err != nil {
		return err
	}
	c.submitted = c.now()
	resp, err := s.Submit(ctx, cmd)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.live, "%s bench chaos: submitted %s (id %s): %d workers on %d supervisors, %d nimbuses, %s sentences/s\n",
		c.d.Name, s.Name, resp.ID, c.f.workers, c.f.supervisors, c.f.nimbuses, strconv.FormatFloat(c.f.rate, 'f', -1, 64))

	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	deadline := time.NewTimer(failoverSpoutsTimeout)
	defer deadline.Stop()
	for c.srv.Sample().Spouts < c.f.workers {
		select {
		case <-deadline.C:
			return fmt.Errorf("%d of %d spouts connected to the queue within %s of submit", c.srv.Sample().Spouts, c.f.workers, failoverSpoutsTimeout)
		default:
		}
		if err := c.wait(ctx, poll.C); err != nil {
			return c.interrupted(ctx, err, "before the topology ran")
		}
	}

	stopPolls := c.startPolls(ctx, s.Name)
	defer stopPolls()
	c.srv.Produce(true)
	chaosStart := c.since() + c.f.warmup
	end := chaosStart + c.f.duration
	next := 0 // the next event of c.sched
	progress := c.since() + 10*time.Second
	tm := time.NewTimer(0)
	defer tm.Stop()
	for {
		now := c.since()
		if len(c.restarts) > 0 && c.restarts[0].at <= now {
			rs := c.restarts[0]
			c.restarts = c.restarts[1:]
			if err := c.restart(ctx, rs); err != nil {
				return err
			}
			continue
		}
		if next < len(c.sched) && chaosStart+c.sched[next].At <= now {
			c.do(ctx, c.sched[next])
			next++
			continue
		}
		if now >= progress {
			c.progress()
			progress += 10 * time.Second
		}
		if next == len(c.sched) && len(c.restarts) == 0 && c.starting == 0 && now >= end {
			break
		}
		wake := min(end, progress)
		if next < len(c.sched) {
			wake = min(wake, chaosStart+c.sched[next].At)
		}
		if len(c.restarts) > 0 {
			wake = min(wake, c.restarts[0].at)
		}
		if !tm.Stop() {
			select {
			case <-tm.C:
			default:
			}
		}
		tm.Reset(max(wake-now, 0))
		if err := c.wait(ctx, tm.C); err != nil {
			return c.interrupted(ctx, err, "")
		}
	}

	// The drain: nothing new, until every sentence is acked.
	c.srv.Produce(false)
	fmt.Fprintf(c.live, "%6.1fs  the chaos is over: draining the queue (%d not acked yet)\n", c.now(), c.srv.Sample().Unacked)
	drain := time.NewTimer(c.f.drainTimeout)
	defer drain.Stop()
	for c.srv.Sample().Unacked > 0 {
		select {
		case <-drain.C:
			sm := c.srv.Sample()
			return fmt.Errorf("the drain did not end within --drain-timeout %s: %d sentences not acked (%d held by spouts)", c.f.drainTimeout, sm.Unacked, sm.Held)
		default:
		}
		if err := c.wait(ctx, poll.C); err != nil {
			return c.interrupted(ctx, err, fmt.Sprintf("while draining, %d sentences not acked yet", c.srv.Sample().Unacked))
		}
	}
	// The settle: until every source has counted what the queue did.
	acked := c.srv.Sample().Acked
	fmt.Fprintf(c.live, "%6.1fs  drained: the queue acked %d; waiting up to %s for the sources to count as much\n", c.now(), acked, c.f.settle)
	settle := time.NewTimer(c.f.settle)
	defer settle.Stop()
	for !c.rec.reached(acked) {
		select {
		case <-settle.C:
			fmt.Fprintf(c.live, "%6.1fs  not every source reached %d within --settle %s\n", c.now(), acked, c.f.settle)
			return nil
		default:
		}
		if err := c.wait(ctx, poll.C); err != nil {
			return c.interrupted(ctx, err, "while waiting for the counts")
		}
	}
	// One more second of polls, so that each source's last answer is after
	// the counts settled.
	last := time.NewTimer(time.Second)
	defer last.Stop()
	return c.interrupted(ctx, c.wait(ctx, last.C), "")
}

// wait waits for tick, taking meanwhile the cluster's exits (an unasked
// one is an error) and the restarted processes' readiness. It returns
// ctx's error if ctx is done.
func (c *chaos) wait(ctx context.Context, tick <-chan time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case ch := <-c.d.Exited():
		return c.exited(ch)
	case rd := <-c.ready:
		c.readied(rd)
		return nil
	case <-tick:
		return nil
	}
}

// interrupted says err is an interruption (in what phase) if ctx is done.
func (c *chaos) interrupted(ctx context.Context, err error, phase string) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if phase == "" {
		return errors.New("interrupted")
	}
	return errors.New("interrupted " + phase)
}

// progress prints a line: each source's polls answered and last count.
func (c *chaos) progress() {
	sm := c.srv.Sample()
	fmt.Fprintf(c.live, "%6.1fs  queue acked %d (unacked %d, replayed %d)  %s\n", c.now(), sm.Acked, sm.Unacked, sm.Replayed, c.rec.line())
}

// exited takes a child's exit: one the bench asked for is no error.
func (c *chaos) exited(ch *devcluster.Child) error {
	c.exits++
	if c.killed[ch] {
		return nil
	}
	return fmt.Errorf("%s (pid %d) exited unasked: %v", ch.Role, ch.PID(), devcluster.ExitReason(ch.Err()))
}

// drainExits receives the exits not received yet, once the cluster has
// stopped: each child's goroutine ends with its send.
func (c *chaos) drainExits() {
	for ; c.exits < c.started; c.exits++ {
		<-c.d.Exited()
	}
}

// do does one event, and records it.
func (c *chaos) do(ctx context.Context, e benchchaos.Event) {
	done := benchchaos.Done{AtS: c.now(), Kind: e.Kind}
	switch e.Kind {
	case benchchaos.KillWorker:
		type worker struct {
			pid int
			sup string
		}
		var ws []worker
		for _, s := range c.d.Supervisors {
			ps, err := c.d.WorkersUnder(s.Dir)
			if err != nil {
				done.Err = err.Error()
				break
			}
			slices.SortFunc(ps, func(a, b procstat.Process) int { return a.PID - b.PID })
			for _, p := range ps {
				ws = append(ws, worker{p.PID, s.Role})
			}
		}
		if done.Err != "" {
			break
		}
		if len(ws) == 0 {
			done.Skipped = "no worker runs"
			break
		}
		w := ws[e.Target(len(ws))]
		done.Target, done.PID = fmt.Sprintf("worker pid %d of %s", w.pid, w.sup), w.pid
		if p, err := os.FindProcess(w.pid); err != nil {
			done.Err = err.Error()
		} else if err := p.Kill(); err != nil {
			done.Err = err.Error()
		}
	case benchchaos.KillSupervisor:
		var up []*devcluster.Child
		for _, s := range c.d.Supervisors {
			if s.Running() && !c.killed[s] {
				up = append(up, s)
			}
		}
		if len(up) == 0 {
			done.Skipped = "every supervisor is down"
			break
		}
		c.kill(&done, up[e.Target(len(up))], e.Down)
	case benchchaos.KillLeader:
		i, err := c.leader(ctx)
		if err != nil {
			done.Skipped = err.Error()
			break
		}
		c.kill(&done, c.d.Nimbuses[i], e.Down)
	}
	c.r.Events = append(c.r.Events, done)
	line := fmt.Sprintf("%6.1fs  kill -9 %s", done.AtS, done.String())
	if done.DownS > 0 {
		line += fmt.Sprintf(", down for %.1f s", done.DownS)
	}
	if done.Err != "" {
		line += ": error: " + done.Err
	}
	fmt.Fprintln(c.live, line)
}

// kill kills a supervisor or nimbus with SIGKILL and plans its restart
// after down.
func (c *chaos) kill(done *benchchaos.Done, ch *devcluster.Child, down time.Duration) {
	done.Target, done.PID, done.DownS = ch.Role, ch.PID(), down.Seconds()
	c.killed[ch] = true
	if err := ch.Cmd.Process.Kill(); err != nil {
		done.Err = err.Error()
	}
	c.restarts = append(c.restarts, chaosRestart{at: c.since() + down, c: ch, event: len(c.r.Events)})
	slices.SortStableFunc(c.restarts, func(a, b chaosRestart) int { return int(a.at - b.at) })
}

// restart starts a killed supervisor or nimbus again, with its directory,
// ports and arguments; a goroutine waits for it to be ready (readied).
func (c *chaos) restart(ctx context.Context, rs chaosRestart) error {
	ch, err := c.d.Restart(ctx, rs.c)
	if err != nil {
		return err
	}
	c.started++
	c.starting++
	c.wg.Go(func() {
		_, err := c.d.Await(ctx, ch)
		c.ready <- chaosReady{c: ch, event: rs.event, at: c.now(), err: err}
	})
	return nil
}

// chaosReady is a restarted process ready, or not.
type chaosReady struct {
	c     *devcluster.Child
	event int
	at    float64
	err   error
}

// readied records a restarted process's readiness on its event.
func (c *chaos) readied(rd chaosReady) {
	c.starting--
	e := &c.r.Events[rd.event]
	switch {
	case rd.err == nil:
		e.RestartedAtS = &rd.at
		fmt.Fprintf(c.live, "%6.1fs  %s is up again (pid %d)\n", rd.at, rd.c.Role, rd.c.PID())
	case c.killed[rd.c]:
		// killed again before it was ready: the later event says so
	default:
		e.Err = fmt.Sprintf("started again at %.1f s, not ready: %v", rd.at, rd.err)
		fmt.Fprintf(c.live, "%6.1fs  %s: %s\n", c.now(), rd.c.Role, e.Err)
	}
}

// leader is the index in d.Nimbuses of the nimbus that leads, as the
// seeds say.
func (c *chaos) leader(ctx context.Context) (int, error) {
	cc, err := (&cli.ClusterFlags{File: c.client}).ClientConfig()
	if err != nil {
		return 0, err
	}
	cl, err := cli.DialNimbus(ctx, cc)
	if err != nil {
		return 0, fmt.Errorf("no leader to kill: %v", err)
	}
	defer cl.Close()
	i := slices.Index(c.d.NimbusAddrs, cl.Leader())
	if i < 0 {
		return 0, fmt.Errorf("the leader %s is none of the cluster's nimbuses %v", cl.Leader(), c.d.NimbusAddrs)
	}
	if n := c.d.Nimbuses[i]; !n.Running() || c.killed[n] {
		return 0, fmt.Errorf("the leader %s (%s) is already down", cl.Leader(), n.Role)
	}
	return i, nil
}

// writeClientConfig writes the gale.yaml of the bench's CLI calls: the
// cluster's (file) with nimbus.seeds naming every nimbus.
func writeClientConfig(dir string, file gale.Config, nimbuses []string) (string, error) {
	c := maps.Clone(file)
	if c == nil {
		c = gale.Config{}
	}
	c[config.NimbusSeeds] = nimbuses
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "chaos-client.yaml")
	return p, os.WriteFile(p, b, 0o644)
}

// chaosRecorder keeps the observations. Safe for concurrent use.
type chaosRecorder struct {
	mu     sync.Mutex
	obs    []benchchaos.Observation
	latest map[string]int64 // each source's last count
	polls  map[string][2]int
}

func (r *chaosRecorder) add(o benchchaos.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs = append(r.obs, o)
	if r.polls == nil {
		r.polls = make(map[string][2]int)
	}
	p := r.polls[o.Source]
	p[1]++
	if o.OK {
		p[0]++
	}
	r.polls[o.Source] = p
	if o.Acked != nil {
		r.latest[o.Source] = *o.Acked
	}
}

func (r *chaosRecorder) all() []benchchaos.Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.obs)
}

// reached says whether every source held to the queue's count (a total,
// with figures) has a last count ≥ acked.
func (r *chaosRecorder) reached(acked int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range chaosSources() {
		if !s.CheckFinal || s.NoValue || s.WindowS > 0 {
			continue
		}
		if v, ok := r.latest[s.Name]; !ok || v < acked {
			return false
		}
	}
	return true
}

// line is the sources' answered polls and last counts, for progress.
func (r *chaosRecorder) line() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, s := range []string{chaosList, chaosTopology + ":all-time", chaosMetrics} {
		p := r.polls[s]
		v := "-"
		if n, ok := r.latest[s]; ok {
			v = strconv.FormatInt(n, 10)
		}
		fmt.Fprintf(&b, "  %s %s (%d/%d answered)", s, v, p[0], p[1])
	}
	return b.String()
}

// chaosPoller is one request sent once a second: the sources it answers
// for, and how it asks.
type chaosPoller struct {
	sources []string
	// poll returns each source's count; a source it does not return was
	// answered without its figure (where NoValue allows) or not at all.
	poll func(ctx context.Context) (map[string]*int64, string, error)
}

// startPolls sends every poller's request once a second, each on its own
// goroutine, until the returned func is called; that func waits for the
// polls in flight (each bounded by chaosPollTimeout).
func (c *chaos) startPolls(ctx context.Context, topology string) func() {
	ui := "http://" + c.d.UI.Addr
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	hc := &http.Client{Transport: tr, Timeout: chaosPollTimeout}
	var topoSources []string
	for _, w := range chaosWindows {
		topoSources = append(topoSources, chaosTopology+w.param)
	}
	pollers := []chaosPoller{
		{[]string{chaosList}, chaosListPoll(c.client, topology)},
		{[]string{chaosSummary}, byNone(func(ctx context.Context) (map[string]*int64, error) {
			return chaosSummaryPoll(ctx, hc, ui, topology)
		})},
		{topoSources, byNone(func(ctx context.Context) (map[string]*int64, error) { return chaosTopologyPoll(ctx, hc, ui, topology) })},
		{[]string{chaosMetrics}, byNone(func(ctx context.Context) (map[string]*int64, error) { return chaosMetricsPoll(ctx, hc, ui, topology) })},
	}
	noValue := make(map[string]bool)
	for _, s := range chaosSources() {
		noValue[s.Name] = s.NoValue
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	c.pollStart = c.now()
	var last float64
	wg.Go(func() {
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			last = c.now()
			for _, p := range pollers {
				sent := last
				wg.Go(func() {
					pctx, cancel := context.WithTimeout(ctx, chaosPollTimeout)
					defer cancel()
					vals, by, err := p.poll(pctx)
					at := c.now()
					for _, s := range p.sources {
						o := benchchaos.Observation{Source: s, SentS: sent, AtS: at, By: by}
						v, ok := vals[s]
						switch {
						case err != nil:
							o.Err = err.Error()
						case ok || noValue[s]:
							o.OK, o.Acked = true, v
						default:
							o.Err = "the answer has no acked count for " + topology
						}
						c.rec.add(o)
					}
				})
			}
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tk.C:
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
			tr.CloseIdleConnections()
			c.pollEnd = last
		})
	}
}

// byNone is a poll whose answers do not say who answered.
func byNone(poll func(context.Context) (map[string]*int64, error)) func(context.Context) (map[string]*int64, string, error) {
	return func(ctx context.Context) (map[string]*int64, string, error) {
		v, err := poll(ctx)
		return v, "", err
	}
}

// chaosListPoll runs `list --json --file client` as `gale list` does, in
// this process: the CLI's client finds the leader through the seeds. It
// also returns the nimbus that answered.
func chaosListPoll(client, topology string) func(context.Context) (map[string]*int64, string, error) {
	return func(ctx context.Context) (map[string]*int64, string, error) {
		return listPoll(ctx, client, topology)
	}
}

func listPoll(ctx context.Context, client, topology string) (map[string]*int64, string, error) {
	cmd := cli.NewListCmd()
	var out bytes.Buffer
	cmd.SetArgs([]string{"--json", "--file", client})
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.ExecuteContext(ctx); err != nil {
		return nil, "", err
	}
	var r cli.ListReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return nil, "", fmt.Errorf("list --json: %w", err)
	}
	for _, t := range r.Topologies {
		if t.Name == topology {
			return map[string]*int64{chaosList: &t.Acked}, r.Nimbus, nil
		}
	}
	return nil, r.Nimbus, nil
}

// chaosGet gets the UI's path and decodes its JSON answer into v.
func chaosGet(ctx context.Context, hc *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		var e struct {
			Message string `json:"errorMessage"`
		}
		if json.Unmarshal(body, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		return fmt.Errorf("%s: %s", resp.Status, msg)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}

func chaosSummaryPoll(ctx context.Context, hc *http.Client, ui, topology string) (map[string]*int64, error) {
	var r struct {
		Topologies []struct {
			Name  string `json:"name"`
			Acked *int64 `json:"acked"`
		} `json:"topologies"`
	}
	if err := chaosGet(ctx, hc, ui+"/api/v1/topology/summary", &r); err != nil {
		return nil, err
	}
	for _, t := range r.Topologies {
		if t.Name == topology {
			if t.Acked == nil {
				return map[string]*int64{}, nil
			}
			return map[string]*int64{chaosSummary: t.Acked}, nil
		}
	}
	return nil, fmt.Errorf("topology/summary does not list %s", topology)
}

func chaosTopologyPoll(ctx context.Context, hc *http.Client, ui, topology string) (map[string]*int64, error) {
	var r struct {
		Stats []struct {
			Window string `json:"window"`
			Acked  *int64 `json:"acked"`
		} `json:"topologyStats"`
	}
	if err := chaosGet(ctx, hc, ui+"/api/v1/topology/"+url.PathEscape(topology), &r); err != nil {
		return nil, err
	}
	out := make(map[string]*int64)
	for _, s := range r.Stats {
		if s.Acked != nil {
			out[chaosTopology+s.Window] = s.Acked
		}
	}
	return out, nil
}

func chaosMetricsPoll(ctx context.Context, hc *http.Client, ui, topology string) (map[string]*int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ui+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	v, found, err := benchchaos.CounterValue(io.LimitReader(resp.Body, 64<<20), chaosMetricName, "topology", topology)
	if err != nil || !found {
		return nil, err
	}
	return map[string]*int64{chaosMetrics: &v}, nil
}
