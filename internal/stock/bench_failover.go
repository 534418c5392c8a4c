package stock

import (
	"context"
	"errors"
	"fmt"
	"github.com/gale-stream/gale/internal/config"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bench"
	benchfail "github.com/gale-stream/gale/internal/bench/failover"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/devcluster"
	"github.com/gale-stream/gale/internal/freeport"
)

// failoverFlags are the flags of `bench failover`.
type failoverFlags struct {
	supervisors     int
	workers         int // 0: 2 × supervisors
	rate            float64
	killEvery       time.Duration
	kills           int // < 0: supervisors − 1
	warmup          time.Duration
	drainTimeout    time.Duration
	messageTimeout  int
	maxSpoutPending int
	file            string
	dir             string
	slotBase        int // 0: free ports
	asJSON          bool
	verbose         bool
}

func newFailoverCmd() *cobra.Command {
	f := failoverFlags{supervisors: 4, rate: 1000, killEvery: 20 * time.Second, kills: -1,
		warmup: 5 * time.Second, drainTimeout: 2 * time.Minute, messageTimeout: 10, maxSpoutPending: 100}
	cmd := &cobra.Command{
		Use:   "failover",
		Short: "Storm@Twitter's machine-loss experiment on one machine: kill -9 a supervisor and its workers every --kill-every",
		Long: `Run a dev cluster of --supervisors supervisors (etcd, nimbus and the
supervisors as processes of this program, on 127.0.0.1) with a word count in
ack mode, 2 workers per supervisor unless --workers says otherwise, and feed
it --rate sentences per second from a hold-and-ack queue in this process,
outside every worker (the paper's Kestrel queue): a sentence whose tree fails,
whose spout's worker dies or whose hold expires is put back and replayed.

After --warmup, every --kill-every one supervisor and its workers are killed
with SIGKILL, as the loss of a machine, --kills times (default: down to one
supervisor); the last period runs as long as the others. Then the queue stops
producing and the run waits (at most --drain-timeout) until every sentence is
acked. Each supervisor has a slot for every worker, so the last one can run
them all (the paper's machines went from 3 workers each to 12).

It prints a row per period between kills, as the paper's table: supervisors
alive, workers running, throughput (sentences acked per second), p50 and p99
complete latency (emit to ack, measured by the spouts). For each kill, the
time until the throughput of 1 s windows is back to ≥ 80% of the new steady
state (the median of the period's last third) and stays there 3 s. Then the
totals: emitted (handed to spouts, replays too), acked, failed, replayed,
duplicates (acked twice) and lost (never acked after the drain). --json
prints one JSON document instead, with every 1 s window under "seconds".
Lost sentences, a drain that did not finish or a process of the cluster that
died unasked are errors (exit status 1), reported with the rest.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return cli.Usage(err)
			}
			return runFailover(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.supervisors, "supervisors", f.supervisors, "supervisor processes, each one machine")
	fl.IntVar(&f.workers, "workers", f.workers, "worker processes of the topology (topology.workers; default 2 per supervisor)")
	fl.Float64Var(&f.rate, "rate", f.rate, "sentences the queue makes per second")
	fl.DurationVar(&f.killEvery, "kill-every", f.killEvery, "the time between kills, and the length of each period")
	fl.IntVar(&f.kills, "kills", f.kills, "supervisors to kill (default: all but one)")
	fl.DurationVar(&f.warmup, "warmup", f.warmup, "how long the topology runs before the first period")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", f.drainTimeout, "how long to wait at the end for every sentence to be acked")
	fl.IntVar(&f.messageTimeout, "message-timeout", f.messageTimeout, "topology.message.timeout.secs: how soon a tree through a dead worker fails and is replayed")
	fl.IntVar(&f.maxSpoutPending, "max-spout-pending", f.maxSpoutPending, "topology.max.spout.pending: trees in flight per spout task")
	fl.StringVar(&f.file, "file", "", "the cluster's gale.yaml `FILE`, for nimbus and every supervisor (nimbus.supervisor.timeout.secs, ...)")
	fl.StringVar(&f.dir, "dir", "", "the `directory` to keep the cluster's state in, kept on exit (default: a temporary directory, removed on exit)")
	fl.IntVar(&f.slotBase, "slot-base", 0, "the first worker slot's port (default: free ports found at the start)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document on stdout and nothing else")
	fl.BoolVar(&f.verbose, "verbose", false, "show the cluster's processes' output on stderr (by default it is shown only if the run fails)")
	return cmd
}

func (f *failoverFlags) check() error {
	var errs []error
	if f.supervisors < 1 {
		errs = append(errs, fmt.Errorf("--supervisors must be ≥ 1, got %d", f.supervisors))
	}
	if f.workers < 0 {
		errs = append(errs, fmt.Errorf("--workers must be ≥ 1, got %d", f.workers))
	}
	if f.rate <= 0 {
		errs = append(errs, fmt.Errorf("--rate must be > 0 sentences per second, got %v", f.rate))
	}
	if f.killEvery < time.Second || f.killEvery%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--kill-every must be whole seconds, at least 1s, got %s", f.killEvery))
	}
	if f.warmup < 0 || f.warmup%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--warmup must be whole seconds ≥ 0, got %s", f.warmup))
	}
	if f.kills >= f.supervisors && f.supervisors >= 1 {
		errs = append(errs, fmt.Errorf("--kills %d with %d supervisors would kill them all: keep it below %d", f.kills, f.supervisors, f.supervisors))
	}
	if f.drainTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--drain-timeout must be > 0, got %s", f.drainTimeout))
	}
	if f.messageTimeout < 1 {
		errs = append(errs, fmt.Errorf("--message-timeout must be ≥ 1 (seconds), got %d", f.messageTimeout))
	}
	if f.maxSpoutPending < 1 {
		errs = append(errs, fmt.Errorf("--max-spout-pending must be ≥ 1, got %d", f.maxSpoutPending))
	}
	if f.slotBase < 0 || f.slotBase > 65535 {
		errs = append(errs, fmt.Errorf("--slot-base must be a port from 1 to 65535 (0: free ports), got %d", f.slotBase))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if f.workers == 0 {
		f.workers = 2 * f.supervisors
	}
	if f.kills < 0 {
		f.kills = f.supervisors - 1
	}
	return nil
}

// failoverReport is what the bench prints; --json prints it as is.
type failoverReport struct {
	Supervisors        int     `json:"supervisors"`
	Workers            int     `json:"workers"`
	Rate               float64 `json:"rate"`
	KillEveryS         float64 `json:"kill_every_s"`
	SupervisorTimeoutS int     `json:"supervisor_timeout_s"` // nimbus.supervisor.timeout.secs
	MessageTimeoutS    int     `json:"message_timeout_s"`
	// RecoverWithinS is the target: nimbus.supervisor.timeout.secs + 10.
	RecoverWithinS float64 `json:"recover_within_s"`

	Windows []failoverWindow `json:"windows"` // the periods between kills
	Kills   []failoverKill   `json:"kills"`
	Seconds []failoverSecond `json:"seconds"` // every 1 s window, warm-up included

	Produced       int64   `json:"produced"`
	Emitted        int64   `json:"emitted"`
	Acked          int64   `json:"acked"`
	Failed         int64   `json:"failed"`
	Replayed       int64   `json:"replayed"`
	ReplayedFailed int64   `json:"replayed_failed"`
	ReplayedLease  int64   `json:"replayed_lease"`
	ReplayedLeft   int64   `json:"replayed_disconnect"`
	Duplicates     int64   `json:"duplicates"`
	Throttled      int64   `json:"throttled"`
	Lost           int64   `json:"lost"`
	DrainS         float64 `json:"drain_s"`
	Error          string  `json:"error,omitempty"`
}

// failoverWindow is one row of the table: a period between kills.
type failoverWindow struct {
	FromS       float64 `json:"from_s"` // since the first period began
	ToS         float64 `json:"to_s"`
	Supervisors int     `json:"supervisors"`
	Workers     int     `json:"workers"` // running at its end
	AckedPerS   float64 `json:"acked_per_s"`
	SteadyPerS  float64 `json:"steady_acked_per_s"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	// RecoveredAfterS is set on a period that began with a kill: how long
	// after it the throughput was back (failoverKill).
	RecoveredAfterS *float64 `json:"recovered_after_s,omitempty"`
}

// failoverKill is one kill and the recovery from it.
type failoverKill struct {
	AtS           float64 `json:"at_s"`
	Supervisor    string  `json:"supervisor"`
	WorkersKilled int     `json:"workers_killed"`
	// RecoveredAfterS is the time from the kill to the end of the first
	// 1 s window from which on, for 3 s, the throughput is ≥ 80% of the
	// period's steady state; null if it never was.
	RecoveredAfterS *float64 `json:"recovered_after_s"`
	// MinPerS is the lowest throughput of a 1 s window after the kill.
	MinPerS float64 `json:"min_acked_per_s"`
	// WithinTarget: recovered within recover_within_s.
	WithinTarget bool `json:"within_target"`
}

// failoverSecond is one 1 s window.
type failoverSecond struct {
	S           float64 `json:"s"` // its end, since the first period began (negative: warm-up)
	Supervisors int     `json:"supervisors"`
	Workers     int     `json:"workers"`
	Acked       int64   `json:"acked"`
	Emitted     int64   `json:"emitted"`
	Failed      int64   `json:"failed"`
	Replayed    int64   `json:"replayed"`
	AckedPerS   float64 `json:"acked_per_s"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	Unacked     int     `json:"unacked"`
	Held        int     `json:"held"`
	Spouts      int     `json:"spouts"` // connected to the queue

	dur  time.Duration
	hist *bench.Histogram
}

// Recovery: a 1 s window is back when its throughput is ≥ recoverShare of
// the steady state, which is the median of a period's last third; the
// throughput has recovered once recoverRun windows in a row are back.
const (
	recoverShare = 0.8
	recoverRun   = 3
)

// failoverSpoutsTimeout bounds the wait for the topology's spouts to
// connect to the queue after submit: workers start in seconds.
const failoverSpoutsTimeout = 2 * time.Minute

func runFailover(cmd *cobra.Command, f failoverFlags) error {
	ctx := cmd.Context()
	opts := &cli.Options{Name: cmd.Root().Name()}
	var file gale.Config
	var err error
	if f.file != "" {
		if file, err = config.LoadFile(f.file); err != nil {
			return err
		}
	}
	eff, err := config.Resolve(file, nil)
	if err != nil {
		return err
	}
	supTimeout, _ := eff.Int(config.NimbusSupervisorTimeoutSecs)
	if f.slotBase == 0 {
		if f.slotBase, err = freeport.Consecutive(f.supervisors * f.workers); err != nil {
			return fmt.Errorf("%w: give --slot-base", err)
		}
	}
	srv, err := benchfail.Listen(benchfail.ServerConfig{
		Rate: f.rate,
		// A message waits in a spout's prefetch at most while the spout is
		// at max pending, a message timeout, then its tree may take one.
		Lease:      time.Duration(2*f.messageTimeout+5) * time.Second,
		MaxUnacked: max(10000, int(f.rate*60)),
	})
	if err != nil {
		return err
	}
	defer srv.Close()

	var clusterOut io.Writer
	tail := &tailWriter{max: 64 << 10}
	clusterOut = tail
	if f.verbose {
		clusterOut = cmd.ErrOrStderr()
	}
	var live io.Writer = io.Discard
	if !f.asJSON {
		live = cmd.ErrOrStderr()
	}
	hurry, stopSignals := hurrySignal()
	defer stopSignals()
	d, err := startDev(ctx, opts, devFlags{dir: f.dir, file: f.file, supervisors: f.supervisors,
		slotsPer: f.workers, slotBase: f.slotBase}, clusterOut, hurry)
	if err != nil {
		if !f.verbose {
			err = fmt.Errorf("%w\nthe cluster's output:\n%s", err, tail.String())
		}
		return err
	}
	r := &failoverReport{Supervisors: f.supervisors, Workers: f.workers, Rate: f.rate, KillEveryS: f.killEvery.Seconds(),
		SupervisorTimeoutS: supTimeout, MessageTimeoutS: f.messageTimeout, RecoverWithinS: float64(supTimeout + 10),
		Windows: []failoverWindow{}, Kills: []failoverKill{}, Seconds: []failoverSecond{}}
	runErr := failover(ctx, cmd, f, d, srv, r, live)
	if ctx.Err() != nil {
		fmt.Fprintf(live, "%s bench failover: stopping the cluster (Ctrl-C again kills it at once)\n", d.Name)
	}
	stopErr := d.Stop()
	srv.Close()
	sm := srv.Sample()
	r.summarizeCounts(sm.Counts, sm.Unacked)
	r.summarize(f)
	if runErr == nil && r.Lost > 0 {
		runErr = fmt.Errorf("%d sentences were never acked", r.Lost)
	}
	if runErr != nil {
		r.Error = runErr.Error()
	}
	if err := r.print(cmd.OutOrStdout(), f, d.Name); err != nil {
		return err
	}
	if runErr != nil && !f.verbose {
		fmt.Fprintf(cmd.ErrOrStderr(), "the cluster's output (its last %d KiB):\n%s", tail.max>>10, tail.String())
	}
	return errors.Join(runErr, stopErr)
}

// failover submits the topology to d, runs the periods and kills, and
// drains, filling in r's seconds and kills.
func failover(ctx context.Context, cmd *cobra.Command, f failoverFlags, d *devcluster.Cluster, srv *benchfail.Server, r *failoverReport, live io.Writer) error {
	w := strconv.Itoa(f.workers)
	sf := cli.SubmitFlags{ClusterFlags: cli.ClusterFlags{File: f.file, Nimbus: d.NimbusAddr}, Workers: f.workers,
		Params: []string{"queue=" + srv.Addr(), "spouts=" + w, "splitters=" + w, "counters=" + w},
		Conf: []string{gale.TopologyWorkers + "=" + w, gale.TopologyAckerExecutors + "=" + w,
			gale.TopologyMessageTimeoutSecs + "=" + strconv.Itoa(f.messageTimeout),
			gale.TopologyMaxSpoutPending + "=" + strconv.Itoa(f.maxSpoutPending)}}
	s, err := sf.Parse(cmd, &cli.Options{Name: d.Name, Topologies: []cli.Topology{failoverTopology}}, []string{benchfail.TopologyName})
	if err != nil {
		return err
	}
	resp, err := s.Submit(ctx, cmd)
	if err != nil {
		return err
	}
	fmt.Fprintf(live, "%s bench failover: submitted %s (id %s, %s): %d workers on %d supervisors, %s sentences/s\n",
		d.Name, s.Name, resp.ID, resp.Status, f.workers, f.supervisors, strconv.FormatFloat(f.rate, 'f', -1, 64))

	killed := make(map[*devcluster.Child]bool)
	// unasked is a child's exit the bench did not ask for.
	unasked := func(ch *devcluster.Child) error {
		if killed[ch] {
			return nil
		}
		return fmt.Errorf("%s (pid %d) exited unasked: %v", ch.Role, ch.PID(), devcluster.ExitReason(ch.Err()))
	}

	// Wait for every spout to connect to the queue.
	deadline := time.NewTimer(failoverSpoutsTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for srv.Sample().Spouts < f.workers {
		select {
		case <-ctx.Done():
			return errors.New("interrupted before the topology ran")
		case ch := <-d.Exited():
			if err := unasked(ch); err != nil {
				return err
			}
		case <-deadline.C:
			return fmt.Errorf("%d of %d spouts connected to the queue within %s of submit", srv.Sample().Spouts, f.workers, failoverSpoutsTimeout)
		case <-poll.C:
		}
	}

	warmup := int(f.warmup / time.Second)
	every := int(f.killEvery / time.Second)
	last := warmup + (f.kills+1)*every
	srv.Produce(true)
	start := time.Now()
	prevAt := start
	prev := srv.Sample()
	srv.Latencies()
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	alive := f.supervisors
	for sec := 1; sec <= last; {
		select {
		case <-ctx.Done():
			return errors.New("interrupted")
		case ch := <-d.Exited():
			if err := unasked(ch); err != nil {
				return err
			}
			continue
		case <-tk.C:
		}
		now := time.Now()
		cur, h := srv.Sample(), srv.Latencies()
		ws, err := d.WorkersUnder(d.Dir)
		if err != nil {
			return err
		}
		dur := now.Sub(prevAt)
		s := failoverSecond{S: float64(sec - warmup), Supervisors: alive, Workers: len(ws),
			Acked: cur.Acked - prev.Acked, Emitted: cur.Emitted - prev.Emitted, Failed: cur.Failed - prev.Failed,
			Replayed: cur.Replayed - prev.Replayed, Unacked: cur.Unacked, Held: cur.Held, Spouts: cur.Spouts,
			P50Ms: ms(h.Quantile(0.5)), P99Ms: ms(h.Quantile(0.99)), dur: dur, hist: h}
		s.AckedPerS = float64(s.Acked) / dur.Seconds()
		r.Seconds = append(r.Seconds, s)
		prev, prevAt = cur, now
		note := ""
		if k := sec - warmup; k > 0 && k%every == 0 && k/every <= f.kills {
			victim := d.Supervisors[f.supervisors-k/every]
			killed[victim] = true
			n, err := d.KillSupervisor(victim)
			if err != nil {
				return err
			}
			alive--
			r.Kills = append(r.Kills, failoverKill{AtS: float64(k), Supervisor: victim.Role, WorkersKilled: n})
			note = fmt.Sprintf("  ← killed %s and its %d workers (kill -9)", victim.Role, n)
		}
		fmt.Fprintf(live, "%5ds  supervisors %d  workers %2d  acked/s %7.0f  failed %5d  replayed %5d  p99 %7.1f ms  unacked %6d  held %5d  spouts %d%s\n",
			sec-warmup, s.Supervisors, s.Workers, s.AckedPerS, s.Failed, s.Replayed, s.P99Ms, s.Unacked, s.Held, s.Spouts, note)
		sec++
	}

	// The drain: nothing new, until every sentence is acked.
	srv.Produce(false)
	drainStart := time.Now()
	drain := time.NewTimer(f.drainTimeout)
	defer drain.Stop()
	defer func() { r.DrainS = time.Since(drainStart).Seconds() }()
	for {
		sm := srv.Sample()
		if sm.Unacked == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while draining, %d sentences not acked yet", sm.Unacked)
		case ch := <-d.Exited():
			if err := unasked(ch); err != nil {
				return err
			}
		case <-drain.C:
			return fmt.Errorf("the drain did not end within --drain-timeout %s: %d sentences not acked (%d held by spouts)", f.drainTimeout, sm.Unacked, sm.Held)
		case <-poll.C:
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// summarizeCounts fills in the totals from the queue's counts and the
// sentences it still keeps (the lost ones, after the drain).
func (r *failoverReport) summarizeCounts(c benchfail.Counts, unacked int) {
	r.Produced, r.Emitted, r.Acked, r.Failed = c.Produced, c.Emitted, c.Acked, c.Failed
	r.Replayed, r.ReplayedFailed, r.ReplayedLease, r.ReplayedLeft = c.Replayed, c.ReplayedFailed, c.ReplayedLease, c.ReplayedLeft
	r.Duplicates, r.Throttled, r.Lost = c.Duplicates, c.Throttled, int64(unacked)
}

// summarize computes the periods and the recoveries from the seconds.
func (r *failoverReport) summarize(f failoverFlags) {
	every := f.killEvery.Seconds()
	for p := 0; p <= f.kills; p++ {
		from, to := float64(p)*every, float64(p+1)*every
		var secs []failoverSecond
		for _, s := range r.Seconds {
			if s.S > from && s.S <= to {
				secs = append(secs, s)
			}
		}
		if len(secs) == 0 {
			break // the run ended early
		}
		w := failoverWindow{FromS: from, ToS: to, Supervisors: secs[0].Supervisors, Workers: secs[len(secs)-1].Workers}
		var acked int64
		var dur time.Duration
		h := new(bench.Histogram)
		for _, s := range secs {
			acked += s.Acked
			dur += s.dur
			h.Merge(s.hist)
		}
		w.AckedPerS = float64(acked) / dur.Seconds()
		w.P50Ms, w.P99Ms = ms(h.Quantile(0.5)), ms(h.Quantile(0.99))
		w.SteadyPerS = steadyState(secs)
		if p >= 1 && p <= len(r.Kills) {
			k := &r.Kills[p-1]
			k.RecoveredAfterS, k.MinPerS = recovery(secs, w.SteadyPerS)
			if k.RecoveredAfterS != nil {
				k.WithinTarget = *k.RecoveredAfterS <= r.RecoverWithinS
				v := *k.RecoveredAfterS
				w.RecoveredAfterS = &v
			}
		}
		r.Windows = append(r.Windows, w)
	}
}

// steadyState is the median throughput of the last third of a period's
// 1 s windows.
func steadyState(secs []failoverSecond) float64 {
	tail := secs[len(secs)-max(len(secs)/3, 1):]
	v := make([]float64, len(tail))
	for i, s := range tail {
		v[i] = s.AckedPerS
	}
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// recovery is the time from a period's start (a kill) to the end of the
// first 1 s window from which on recoverRun windows (or the rest of the
// period) are back to recoverShare of steady, nil if none; and the lowest
// throughput of a window.
func recovery(secs []failoverSecond, steady float64) (*float64, float64) {
	low := secs[0].AckedPerS
	for _, s := range secs {
		low = min(low, s.AckedPerS)
	}
	if steady <= 0 {
		return nil, low
	}
	for i := range secs {
		run := secs[i:min(i+recoverRun, len(secs))]
		back := true
		for _, s := range run {
			back = back && s.AckedPerS >= recoverShare*steady
		}
		if back {
			at := secs[i].S - (secs[0].S - 1)
			return &at, low
		}
	}
	return nil, low
}

func (r *failoverReport) print(w io.Writer, f failoverFlags, name string) error {
	if f.asJSON {
		return cli.WriteJSON(w, r)
	}
	fmt.Fprintf(w, "%s bench failover: %d supervisors, %d workers, %s sentences/s in ack mode; a supervisor and its workers kill -9'd every %s\n",
		name, r.Supervisors, r.Workers, strconv.FormatFloat(r.Rate, 'f', -1, 64), f.killEvery)
	fmt.Fprintf(w, "nimbus.supervisor.timeout.secs %d, topology.message.timeout.secs %d: recovery target %.0f s after each kill\n\n",
		r.SupervisorTimeoutS, r.MessageTimeoutS, r.RecoverWithinS)
	fmt.Fprintf(w, "%-10s %11s %8s %9s %9s %8s %8s %16s\n", "window", "supervisors", "workers", "acked/s", "steady/s", "p50 ms", "p99 ms", "recovered after")
	for _, win := range r.Windows {
		rec := ""
		if win.RecoveredAfterS != nil {
			rec = fmt.Sprintf("%.0f s", *win.RecoveredAfterS)
		} else if win.FromS > 0 {
			rec = "not recovered"
		}
		fmt.Fprintf(w, "%-10s %11d %8d %9.0f %9.0f %8.1f %8.1f %16s\n",
			fmt.Sprintf("%.0f–%.0fs", win.FromS, win.ToS), win.Supervisors, win.Workers, win.AckedPerS, win.SteadyPerS, win.P50Ms, win.P99Ms, rec)
	}
	fmt.Fprintln(w)
	for _, k := range r.Kills {
		rec := "never back to 80% of the steady state"
		if k.RecoveredAfterS != nil {
			within := "within"
			if !k.WithinTarget {
				within = "NOT within"
			}
			rec = fmt.Sprintf("back to ≥ 80%% of the steady state after %.0f s (%s the %.0f s target)", *k.RecoveredAfterS, within, r.RecoverWithinS)
		}
		fmt.Fprintf(w, "kill at %3.0fs: %s and %d workers; lowest 1 s throughput %.0f/s; %s\n", k.AtS, k.Supervisor, k.WorkersKilled, k.MinPerS, rec)
	}
	fmt.Fprintf(w, "\nproduced %s  emitted %s  acked %s  failed %s  replayed %s (failed %s, worker gone %s, hold expired %s)\nduplicates %s  lost %s  (drained in %.1f s)\n",
		bench.Commas(r.Produced), bench.Commas(r.Emitted), bench.Commas(r.Acked), bench.Commas(r.Failed), bench.Commas(r.Replayed),
		bench.Commas(r.ReplayedFailed), bench.Commas(r.ReplayedLeft), bench.Commas(r.ReplayedLease),
		bench.Commas(r.Duplicates), bench.Commas(r.Lost), r.DrainS)
	if r.Throttled > 0 {
		fmt.Fprintf(w, "the queue held back %s sentences: its bound of unacked ones was reached\n", bench.Commas(r.Throttled))
	}
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
	return nil
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
