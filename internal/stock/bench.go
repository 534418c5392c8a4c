package stock

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/internal/bench"
	benchtopo "github.com/gale-stream/gale/internal/bench/wordcount"

	"github.com/gale-stream/gale/internal/cli"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run benchmarks",
		Args:  cobra.ArbitraryArgs,
		RunE:  cli.RunGroup,
	}
	cmd.AddCommand(newWordcountCmd(), newCoordinationCmd(), newFailoverCmd(), newChaosCmd(), newBenchKafkaCmd(), newAutotuneCmd())
	return cmd
}

func newWordcountCmd() *cobra.Command {
	opts := bench.DefaultOptions()
	var cpuprofile, tracefile string
	stats, comparePairs := true, 0
	cmd := &cobra.Command{
		Use:   "wordcount",
		Short: "Benchmark the word-count topology: spouts → split → count",
		Long: `Benchmark the word-count topology: spouts emit sentences of 8 words drawn from a
fixed vocabulary of 1000, splitters cut them into words, counters count them.

Runs for --duration, printing live numbers to stderr each second and a summary
to stdout at the end (or, with --json, one JSON document on stdout only).
--runner plain runs the same workload as plain Go goroutines and channels,
the baseline to compare Gale with. --workers N runs the topology in N worker
processes of this binary on 127.0.0.1, so that tuples cross processes over TCP;
the report then adds the bytes sent between workers. A worker that dies is
started again; its trees time out and their sentences are replayed.

The run is measured from when every spout is active, not from the start (worker
processes take a while to start and connect). The report is printed however the
run ends; when it went wrong (a worker died, nothing was emitted) it says what
in its "error", and gale exits with status 1.

--compare-stats N measures what the per-component metrics cost: N pairs of
runs of --duration each, one with the metrics (topology.stats.enabled) and one
without, in ABBA order (on/off, off/on, ...), and prints each pair's throughput
ratio (on/off) and the median ratio, so that both are measured in the same
run, under the same load.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.StatsOff = !stats
			if comparePairs != 0 {
				return runCompareStats(cmd, opts, comparePairs, cpuprofile, tracefile)
			}
			return runWordcount(cmd, opts, cpuprofile, tracefile)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Mode, "mode", opts.Mode, `"ack" tracks every sentence's tree with ackers; "noack" does not`)
	f.DurationVar(&opts.Duration, "duration", opts.Duration, "how long the spouts emit")
	f.Float64Var(&opts.Rate, "rate", opts.Rate, "total sentences per second over all spouts (0 = as fast as possible)")
	f.IntVar(&opts.Spouts, "spouts", opts.Spouts, "spout tasks")
	f.IntVar(&opts.Splitters, "splitters", opts.Splitters, "split bolt tasks")
	f.IntVar(&opts.Counters, "counters", opts.Counters, "count bolt tasks")
	f.IntVar(&opts.Ackers, "ackers", opts.Ackers, "acker tasks (ack mode)")
	f.IntVar(&opts.MaxSpoutPending, "max-spout-pending", opts.MaxSpoutPending, "in-flight sentences per spout task (0 = unset)")
	f.DurationVar(&opts.MessageTimeout, "message-timeout", opts.MessageTimeout, "Gale's topology.message.timeout.secs for the run, in whole seconds (0 = Gale's default, 30s): how soon a lost tree fails and is replayed")
	f.DurationVar(&opts.CountDelay, "count-delay", opts.CountDelay, "extra busy work per word in the count bolt, to overload it")
	f.Var((*gogcFlag)(&opts.GOGC), "gogc", `GC percent for the run, for both runners: ≥ 25 or "off" (a Gale worker's worker.gogc is 400; Go's default is 100)`)
	f.BoolVar(&opts.TupleReuse, "tuple-reuse", opts.TupleReuse, "run Gale's bolts with topology.tuple.reuse (they keep no tuple after acking it), so acked tuples are recycled; =false measures without")
	f.IntVar(&opts.HeapMB, "heap-mb", opts.HeapMB, "memory limit in MiB for the run, for both runners (a Gale worker's worker.heap.memory.mb)")
	f.IntVar(&opts.GCFloorMB, "gc-floor-mb", opts.GCFloorMB, "least heap in MiB before collecting, for both runners; 0 = none (a Gale worker's worker.gc.floor.mb)")
	f.BoolVar(&opts.HeapPretouch, "heap-pretouch", opts.HeapPretouch, "fault in the GC floor's worth of heap before the run, for both runners, so that its first second takes no page faults (a Gale worker's worker.heap.pretouch)")
	f.IntVar(&opts.Workers, "workers", opts.Workers, "worker processes to run the topology in, on 127.0.0.1 (1 = in this process)")
	f.BoolVar(&opts.PinCPUs, "pin-cpus", opts.PinCPUs, "with --workers N, bind each worker process to its own 1/N of the CPUs (when there are at least N); =false lets the kernel place them (a cluster's worker.cpu.pinning)")
	f.StringVar(&opts.Runner, "runner", opts.Runner, `"gale" runs the Gale topology; "plain" the plain-Go baseline`)
	f.BoolVar(&opts.JSON, "json", opts.JSON, "print one JSON document on stdout and nothing else")
	f.BoolVar(&stats, "stats", stats, "keep Gale's per-component metrics (topology.stats.enabled); =false runs without them")
	f.IntVar(&comparePairs, "compare-stats", comparePairs, "run N pairs of runs with the metrics on and off, in ABBA order, and print the throughput ratio of each pair and its median (0 = one run)")
	f.StringVar(&cpuprofile, "cpuprofile", "", "write a pprof CPU profile of the run to `file` (with --workers, each worker's to file.worker-N too)")
	f.StringVar(&tracefile, "trace", "", "write a runtime execution trace of the run to `file` (go tool trace; with --workers, each worker's to file.worker-N too)")
	return cmd
}

func runWordcount(cmd *cobra.Command, opts bench.Options, cpuprofile, tracefile string) (err error) {
	if err := opts.Validate(); err != nil {
		return cli.Usage(err)
	}
	runner := bench.PlainRunner
	if opts.Runner == bench.RunnerGale {
		log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
		runner = benchtopo.Runner(log)
		if opts.Workers > 1 {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			runner = benchtopo.ProcessRunner(benchtopo.ProcessConfig{
				Exe: exe, Args: cli.WorkerArgs,
				CPUProfile: cpuprofile, Trace: tracefile,
				Logs: cmd.ErrOrStderr(), Log: log,
				Launched: benchLaunched,
			})
		}
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("--cpuprofile: %w", cerr)
			}
		}()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if tracefile != "" {
		f, err := os.Create(tracefile)
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		defer trace.Stop()
	}
	var live io.Writer
	if !opts.JSON {
		live = cmd.ErrOrStderr()
	}
	// The report is written whatever happened, with what went wrong in it;
	// the error then goes to stderr and sets the exit code.
	_, err = bench.Run(cmd.Context(), opts, runner, cmd.OutOrStdout(), live)
	return err
}

// runCompareStats runs `bench wordcount --compare-stats pairs`.
func runCompareStats(cmd *cobra.Command, opts bench.Options, pairs int, cpuprofile, tracefile string) error {
	switch {
	case pairs < 1:
		return cli.Usage(fmt.Errorf("--compare-stats must be ≥ 1 pairs of runs (0 = one run), got %d", pairs))
	case opts.Runner != bench.RunnerGale:
		return cli.Usage(fmt.Errorf("--compare-stats applies to the gale runner only, got --runner %s", opts.Runner))
	case cpuprofile != "" || tracefile != "":
		return cli.Usage(fmt.Errorf("--compare-stats takes no --cpuprofile or --trace: profile one run, with --stats or --stats=false"))
	case cmd.Flags().Changed("stats"):
		return cli.Usage(fmt.Errorf("--compare-stats runs with the metrics both on and off: drop --stats"))
	}
	if err := opts.Validate(); err != nil {
		return cli.Usage(err)
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := benchtopo.Runner(log)
	if opts.Workers > 1 {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		runner = benchtopo.ProcessRunner(benchtopo.ProcessConfig{
			Exe: exe, Args: cli.WorkerArgs, Logs: cmd.ErrOrStderr(), Log: log, Launched: benchLaunched,
		})
	}
	var live io.Writer
	if !opts.JSON {
		live = cmd.ErrOrStderr()
	}
	_, err := bench.CompareStats(cmd.Context(), opts, runner, pairs, cmd.OutOrStdout(), live)
	return err
}

// benchLaunched, if set, is called once a --workers bench has started its
// workers (benchtopo.ProcessConfig.Launched); tests set it to kill one.
var benchLaunched func(ctx context.Context, l benchtopo.Launch) (end bool)

// gogcFlag is --gogc: "off" or a GC percent, as the GOGC variable takes.
type gogcFlag int

func (g *gogcFlag) String() string {
	if *g == bench.GOGCOff {
		return "off"
	}
	return strconv.Itoa(int(*g))
}

func (g *gogcFlag) Set(s string) error {
	if s == "off" {
		*g = bench.GOGCOff
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf(`want "off" or a whole number, got %q`, s)
	}
	*g = gogcFlag(n)
	return nil
}

func (*gogcFlag) Type() string { return "off|percent" }
