package stock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/metrics"
)

// autotuneBench is what `gale bench autotune` runs.
type autotuneBench struct {
	Concurrency   int           // the service's concurrent calls: bolt executors
	Latency       time.Duration // each call's latency
	Timeout       time.Duration // topology.message.timeout.secs
	Interval      time.Duration // topology.max.spout.pending.autotune.interval.secs
	ReceiveBuffer int           // topology.executor.receive.buffer.size
	Sweep         []int         // the fixed values
	Starts        []int         // the auto-tuned runs' first values
	Warmup        time.Duration // before a fixed value's window
	Duration      time.Duration // a fixed value's window
	TuneFor       time.Duration // an auto-tuned run
	Tail          time.Duration // its last part, measured
	Reference     bool          // run the best fixed value again after each tuned run
	JSON          bool
	Verbose       bool // log the auto-tuner's steps
}

func defaultAutotuneBench() autotuneBench {
	sweep := []int{}
	for v := 1; v <= 65536; v *= 2 {
		sweep = append(sweep, v)
	}
	return autotuneBench{
		Concurrency: 128, Latency: 10 * time.Millisecond, Timeout: 2 * time.Second,
		Interval: time.Second, ReceiveBuffer: 1 << 20,
		Sweep: append(sweep, 100000), Starts: []int{1, 100000},
		Warmup: 2500 * time.Millisecond, Duration: 2 * time.Second,
		TuneFor: 90 * time.Second, Tail: 15 * time.Second, Reference: true,
	}
}

func (b autotuneBench) validate() error {
	whole := func(name string, d time.Duration) error {
		if d < time.Second || d%time.Second != 0 {
			return fmt.Errorf("--%s must be whole seconds ≥ 1s, got %s", name, d)
		}
		return nil
	}
	switch {
	case b.Concurrency < 1:
		return fmt.Errorf("--concurrency must be ≥ 1, got %d", b.Concurrency)
	case b.Latency <= 0:
		return fmt.Errorf("--latency must be > 0, got %s", b.Latency)
	case b.ReceiveBuffer < 1:
		return fmt.Errorf("--receive-buffer must be ≥ 1, got %d", b.ReceiveBuffer)
	case len(b.Sweep) == 0:
		return errors.New("--sweep must list at least one value")
	case b.Warmup < 0 || b.Duration <= 0:
		return fmt.Errorf("--warmup must be ≥ 0 and --duration > 0, got %s and %s", b.Warmup, b.Duration)
	case b.Tail <= 0 || b.Tail > b.TuneFor:
		return fmt.Errorf("--tail must be > 0 and at most --tune-for (%s), got %s", b.TuneFor, b.Tail)
	}
	for _, v := range append(slices.Clone(b.Sweep), b.Starts...) {
		if v < 1 {
			return fmt.Errorf("--sweep and --starts take values ≥ 1, got %d", v)
		}
	}
	if err := whole("timeout", b.Timeout); err != nil {
		return err
	}
	return whole("interval", b.Interval)
}

func newAutotuneCmd() *cobra.Command {
	b := defaultAutotuneBench()
	cmd := &cobra.Command{
		Use:   "autotune",
		Short: "Benchmark the max spout pending auto-tuner against a sweep of fixed values",
		Long: `Benchmark topology.max.spout.pending.autotune on a topology whose bolt behaves
like a remote service: --concurrency executors, each calling it for --latency
per tuple, so the service completes at most concurrency/latency trees a second
and does so with about --concurrency trees in flight. Fewer starve it; more
wait in the executors' queues (--receive-buffer tuples deep, as Storm's
unbounded ZeroMQ queues were: with Gale's default the backpressure between
executors would cap the queueing instead), and once they wait longer than the
message timeout (--timeout, short) their trees time out, so the work done on
them is lost and the acked trees per second fall.

The spout emits new tuples as fast as max spout pending lets it and replays
nothing. For each value of --sweep, a fixed max spout pending, it runs for
--warmup and measures --duration: trees acked and failed per second and the
complete latency. Then, for each value of --starts, it runs with the auto-tuner
on (tuning every --interval) from that value for --tune-for and measures the
last --tail; after each, it runs the sweep's best value again for --warmup and
--tail (--reference), since the host's speed drifts over minutes. It prints the
sweep, the best fixed value (the most trees acked a second) and the knee (the
least value within 5% of the best), and each tuned run's final value and
throughput with their ratios to the best, to the knee and to the best run again
(--json: one JSON document on stdout). Progress goes to stderr.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := b.validate(); err != nil {
				return cli.Usage(err)
			}
			level := slog.LevelWarn
			if b.Verbose {
				level = slog.LevelInfo
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			r, err := b.run(cmd.Context(), log, cmd.ErrOrStderr())
			var werr error
			if b.JSON {
				werr = r.WriteJSON(cmd.OutOrStdout())
			} else {
				werr = r.writeTable(cmd.OutOrStdout())
			}
			if err != nil {
				return err
			}
			return werr
		},
	}
	f := cmd.Flags()
	f.IntVar(&b.Concurrency, "concurrency", b.Concurrency, "the service's concurrent calls: executors of the bolt")
	f.DurationVar(&b.Latency, "latency", b.Latency, "each call's latency")
	f.DurationVar(&b.Timeout, "timeout", b.Timeout, "topology.message.timeout.secs, whole seconds")
	f.DurationVar(&b.Interval, "interval", b.Interval, "topology.max.spout.pending.autotune.interval.secs of the tuned runs, whole seconds")
	f.IntVar(&b.ReceiveBuffer, "receive-buffer", b.ReceiveBuffer, "topology.executor.receive.buffer.size: how deep the bolts' queues may grow, in tuples")
	f.Var((*intsFlag)(&b.Sweep), "sweep", "fixed max spout pending values to measure, comma-separated")
	f.Var((*intsFlag)(&b.Starts), "starts", "first values of the auto-tuned runs, comma-separated (none: the sweep only)")
	f.DurationVar(&b.Warmup, "warmup", b.Warmup, "how long each fixed value runs before it is measured (more than --timeout, so that timeouts show)")
	f.DurationVar(&b.Duration, "duration", b.Duration, "how long each fixed value is measured")
	f.DurationVar(&b.TuneFor, "tune-for", b.TuneFor, "how long each auto-tuned run lasts")
	f.DurationVar(&b.Tail, "tail", b.Tail, "the last part of each auto-tuned run, measured")
	f.BoolVar(&b.Reference, "reference", b.Reference, "after each tuned run, run the sweep's best fixed value again for --warmup and --tail, and judge the tuned run against that (=false: against the sweep only)")
	f.BoolVar(&b.Verbose, "verbose", false, "log each change the auto-tuner makes on stderr")
	f.BoolVar(&b.JSON, "json", false, "print one JSON document on stdout (the progress still goes to stderr)")
	return cmd
}

// intsFlag is a comma-separated list of integers.
type intsFlag []int

func (f *intsFlag) String() string {
	s := make([]string, len(*f))
	for i, v := range *f {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (f *intsFlag) Set(s string) error {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		v, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("want comma-separated whole numbers, got %q", p)
		}
		out = append(out, v)
	}
	*f = out
	return nil
}

func (*intsFlag) Type() string { return "ints" }

// autotuneRun is one run's measurements.
type autotuneRun struct {
	// MaxPending is the fixed value, or the tuned run's first value.
	MaxPending   int     `json:"max_pending"`
	TreesPerSec  float64 `json:"trees_per_sec"`
	FailedPerSec float64 `json:"failed_per_sec"`
	P50ms        float64 `json:"p50_ms"`
	P99ms        float64 `json:"p99_ms"`
}

// tunedRun is an auto-tuned run: its measurements over the tail, the
// value it ended with and the range it moved in over the tail, and the
// value each second.
type tunedRun struct {
	autotuneRun
	Final           int     `json:"final_max_pending"`
	TailMin         int     `json:"tail_min_max_pending"`
	TailMax         int     `json:"tail_max_max_pending"`
	ValueRatio      float64 `json:"value_ratio"`      // Final / the best fixed value
	KneeRatio       float64 `json:"knee_ratio"`       // Final / the knee
	ThroughputRatio float64 `json:"throughput_ratio"` // TreesPerSec / the best fixed value's
	// Reference is the best fixed value run again right after, measured
	// over as long as the tail: the host's speed swings by phases, so the
	// ratio that judges the tuner is taken against a run of the same phase.
	Reference      *autotuneRun `json:"reference,omitempty"`
	ReferenceRatio float64      `json:"reference_ratio,omitempty"` // TreesPerSec / Reference's
	Trace          []int        `json:"trace"`
}

type autotuneReport struct {
	Concurrency        int           `json:"concurrency"`
	LatencyMS          float64       `json:"latency_ms"`
	CapacityPerSec     float64       `json:"capacity_per_sec"`
	MessageTimeoutSecs int           `json:"message_timeout_secs"`
	IntervalSecs       int           `json:"interval_secs"`
	ReceiveBuffer      int           `json:"receive_buffer"`
	Sweep              []autotuneRun `json:"sweep"`
	Best               *autotuneRun  `json:"best,omitempty"`
	Knee               *autotuneRun  `json:"knee,omitempty"`
	Tuned              []tunedRun    `json:"tuned"`
	Seconds            float64       `json:"seconds"`
	Error              string        `json:"error,omitempty"`
}

// kneeShare is how close to the best throughput the knee's is.
const kneeShare = 0.95

// analyse sets Best, Knee and the tuned runs' ratios from the sweep.
func (r *autotuneReport) analyse() {
	r.Best, r.Knee = nil, nil
	for i := range r.Sweep {
		if s := &r.Sweep[i]; r.Best == nil || s.TreesPerSec > r.Best.TreesPerSec {
			r.Best = s
		}
	}
	if r.Best == nil {
		return
	}
	for i := range r.Sweep {
		if s := &r.Sweep[i]; s.TreesPerSec >= kneeShare*r.Best.TreesPerSec && (r.Knee == nil || s.MaxPending < r.Knee.MaxPending) {
			r.Knee = s
		}
	}
	for i := range r.Tuned {
		t := &r.Tuned[i]
		t.ValueRatio = float64(t.Final) / float64(r.Best.MaxPending)
		t.KneeRatio = float64(t.Final) / float64(r.Knee.MaxPending)
		if r.Best.TreesPerSec > 0 {
			t.ThroughputRatio = t.TreesPerSec / r.Best.TreesPerSec
		}
		if t.Reference != nil && t.Reference.TreesPerSec > 0 {
			t.ReferenceRatio = t.TreesPerSec / t.Reference.TreesPerSec
		}
	}
}

func (b autotuneBench) run(ctx context.Context, log *slog.Logger, progress io.Writer) (*autotuneReport, error) {
	start := time.Now()
	r := &autotuneReport{
		Concurrency: b.Concurrency, LatencyMS: ms(b.Latency),
		CapacityPerSec:     float64(b.Concurrency) / b.Latency.Seconds(),
		MessageTimeoutSecs: int(b.Timeout / time.Second), IntervalSecs: int(b.Interval / time.Second),
		ReceiveBuffer: b.ReceiveBuffer, Sweep: []autotuneRun{}, Tuned: []tunedRun{},
	}
	err := func() error {
		for _, v := range b.Sweep {
			samples, err := b.runOne(ctx, log, v, false, b.Warmup+b.Duration)
			if err != nil {
				return fmt.Errorf("max spout pending %d: %w", v, err)
			}
			run := measure(samples, b.Duration)
			run.MaxPending = v
			r.Sweep = append(r.Sweep, run)
			fmt.Fprintf(progress, "fixed %7d: %8.0f trees/s, %8.0f failed/s, p99 %8.1f ms\n", v, run.TreesPerSec, run.FailedPerSec, run.P99ms)
		}
		for _, v := range b.Starts {
			samples, err := b.runOne(ctx, log, v, true, b.TuneFor)
			if err != nil {
				return fmt.Errorf("auto-tuned from %d: %w", v, err)
			}
			t := tunedRun{autotuneRun: measure(samples, b.Tail)}
			t.MaxPending = v
			t.Final, t.TailMin, t.TailMax, t.Trace = traceOf(samples, b.Tail)
			fmt.Fprintf(progress, "tuned from %7d: ends at %d (%d–%d over the last %s), %8.0f trees/s, %8.0f failed/s, p99 %8.1f ms\n",
				v, t.Final, t.TailMin, t.TailMax, b.Tail, t.TreesPerSec, t.FailedPerSec, t.P99ms)
			if r.analyse(); b.Reference && r.Best != nil {
				samples, err := b.runOne(ctx, log, r.Best.MaxPending, false, b.Warmup+b.Tail)
				if err != nil {
					r.Tuned = append(r.Tuned, t)
					return fmt.Errorf("max spout pending %d again: %w", r.Best.MaxPending, err)
				}
				ref := measure(samples, b.Tail)
				ref.MaxPending = r.Best.MaxPending
				t.Reference = &ref
				fmt.Fprintf(progress, "fixed %7d again: %8.0f trees/s, %8.0f failed/s, p99 %8.1f ms\n", ref.MaxPending, ref.TreesPerSec, ref.FailedPerSec, ref.P99ms)
			}
			r.Tuned = append(r.Tuned, t)
		}
		return nil
	}()
	r.analyse()
	r.Seconds = time.Since(start).Seconds()
	if err != nil {
		r.Error = err.Error()
	}
	return r, err
}

// sample is the spout's counters at a moment of a run.
type sample struct {
	at      time.Duration // since the run started
	spout   metrics.Spout
	perTask int // max pending per task
}

// runOne runs the topology for d at max spout pending v, fixed or the
// auto-tuner's first value, sampling the spout's counters every 100 ms.
func (b autotuneBench) runOne(ctx context.Context, log *slog.Logger, v int, tuned bool, d time.Duration) ([]sample, error) {
	tb := gale.NewTopologyBuilder()
	tb.SetSpout("source", func() gale.Spout { return &endlessSpout{} }, 1)
	latency := b.Latency
	tb.SetBolt("service", func() gale.Bolt { return &serviceBolt{latency: latency} }, b.Concurrency).ShuffleGrouping("source")
	topo, err := tb.Build()
	if err != nil {
		return nil, err
	}
	conf := gale.Config{
		gale.TopologyMessageTimeoutSecs:        int(b.Timeout / time.Second),
		gale.TopologyMaxSpoutPending:           v,
		gale.TopologyExecutorReceiveBufferSize: b.ReceiveBuffer,
		gale.TopologyAckerExecutors:            1,
		gale.TopologyShutdownDrainTimeoutSecs:  0,
	}
	if tuned {
		conf[gale.TopologyMaxSpoutPendingAutotune] = true
		conf[gale.TopologyMaxSpoutPendingAutotuneIntervalSecs] = int(b.Interval / time.Second)
	}
	lt, err := gale.StartLocal("bench-autotune", conf, topo, gale.RunOptions{Logger: log})
	if err != nil {
		return nil, err
	}
	defer lt.Stop()
	begin := time.Now()
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
	take := func() sample {
		s := metrics.TotalSpouts(bridge.SpoutStats(lt))
		return sample{at: time.Since(begin), spout: s, perTask: int(s.MaxPending) / max(s.Tasks, 1)}
	}
	samples := []sample{take()}
	for {
		select {
		case <-tk.C:
			samples = append(samples, take())
		case <-end.C:
			return append(samples, take()), nil
		case err := <-lt.Failed():
			return samples, err
		case <-ctx.Done():
			return samples, ctx.Err()
		}
	}
}

// measure is what the samples show over their last window.
func measure(samples []sample, window time.Duration) autotuneRun {
	last := samples[len(samples)-1]
	first := samples[0]
	for _, s := range samples {
		if s.at <= last.at-window {
			first = s
		}
	}
	secs := (last.at - first.at).Seconds()
	if secs <= 0 {
		return autotuneRun{}
	}
	lat := last.spout.Latency.Since(&first.spout.Latency)
	return autotuneRun{
		TreesPerSec:  float64(last.spout.Acked-first.spout.Acked) / secs,
		FailedPerSec: float64(last.spout.Failed-first.spout.Failed) / secs,
		P50ms:        ms(lat.Quantile(0.5)),
		P99ms:        ms(lat.Quantile(0.99)),
	}
}

// traceOf is a tuned run's last value, the least and most over the last
// window, and the value at each whole second.
func traceOf(samples []sample, window time.Duration) (final, lo, hi int, trace []int) {
	last := samples[len(samples)-1]
	final, lo, hi = last.perTask, last.perTask, last.perTask
	next := time.Duration(0)
	for _, s := range samples {
		if s.at >= next {
			trace = append(trace, s.perTask)
			next += time.Second
		}
		if s.at >= last.at-window {
			lo, hi = min(lo, s.perTask), max(hi, s.perTask)
		}
	}
	return final, lo, hi, trace
}

func (r *autotuneReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *autotuneReport) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "service: %d concurrent calls of %.1f ms, at most %.0f trees/s; message timeout %d s; tune interval %d s\n",
		r.Concurrency, r.LatencyMS, r.CapacityPerSec, r.MessageTimeoutSecs, r.IntervalSecs)
	fmt.Fprintln(tw, "max spout pending\ttrees/s\tfailed/s\tp50 ms\tp99 ms\t")
	for _, s := range r.Sweep {
		mark := ""
		switch {
		case r.Best != nil && s.MaxPending == r.Best.MaxPending:
			mark = " best"
		case r.Knee != nil && s.MaxPending == r.Knee.MaxPending:
			mark = " knee"
		}
		fmt.Fprintf(tw, "%d%s\t%.0f\t%.0f\t%.1f\t%.1f\t\n", s.MaxPending, mark, s.TreesPerSec, s.FailedPerSec, s.P50ms, s.P99ms)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Knee != nil && r.Knee != r.Best {
		fmt.Fprintf(w, "knee: the least value within %.0f%% of the best: %d\n", 100*(1-kneeShare), r.Knee.MaxPending)
	}
	if len(r.Tuned) > 0 {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "tuned from\tends at\tover the tail\t/best\t/knee\ttrees/s\t/best\tbest again\t/best again\tfailed/s\tp99 ms\t")
		for _, t := range r.Tuned {
			again, ratio := "-", "-"
			if t.Reference != nil {
				again, ratio = fmt.Sprintf("%.0f", t.Reference.TreesPerSec), fmt.Sprintf("%.3f", t.ReferenceRatio)
			}
			fmt.Fprintf(tw, "%d\t%d\t%d–%d\t%.2f\t%.2f\t%.0f\t%.3f\t%s\t%s\t%.0f\t%.1f\t\n", t.MaxPending, t.Final, t.TailMin, t.TailMax,
				t.ValueRatio, t.KneeRatio, t.TreesPerSec, t.ThroughputRatio, again, ratio, t.FailedPerSec, t.P99ms)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "%.0f s\n", r.Seconds)
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
	return nil
}

// endlessSpout emits new tuples as fast as it may, each tracked, and
// replays nothing: progress is the trees acked.
type endlessSpout struct {
	gale.BaseSpout
	n int64
}

func (*endlessSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("n") }

func (s *endlessSpout) NextTuple() {
	s.n++
	if _, err := s.Collector.Emit(s.n, s.n); err != nil {
		s.Collector.ReportError(err)
	}
}

// serviceBolt is one connection to a remote service: a blocking call of
// latency per tuple, then the ack.
type serviceBolt struct {
	gale.BaseBolt
	latency time.Duration
}

func (*serviceBolt) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *serviceBolt) Execute(t *gale.Tuple) {
	time.Sleep(b.latency) // the call
	b.Collector.Ack(t)
}
