package stock

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gale-stream/gale/internal/bench"
	benchkafka "github.com/gale-stream/gale/internal/bench/kafka"
	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/workerproc"
)

// kafkaFlags are the flags of `bench kafka`.
type kafkaFlags struct {
	cfg        benchkafka.Config
	mode       string
	asJSON     bool
	cpuprofile string
	verbose    bool
}

func init() {
	workerproc.Register(benchkafka.KillFactory, benchkafka.WorkerFactory)
}

func newBenchKafkaCmd() *cobra.Command {
	f := kafkaFlags{cfg: benchkafka.Config{Messages: 1_000_000, Partitions: 4}}
	cmd := &cobra.Command{
		Use:   "kafka",
		Short: "Storm@Twitter's three experiments on an in-process Kafka: a plain consumer, the topology with acking off, and on",
		Long: `Reproduce the paper's three experiments, which weighed Storm's cost against
the deserialization it cannot avoid, on an in-process Kafka (franz-go's kfake,
one broker on 127.0.0.1, run as a child process of this program so that its
CPU is not counted). First --messages records are produced to a topic of
--partitions partitions (not measured), each a small JSON event with a unique
id; then each mode reads all of them, in a consumer group of its own, from the
topic's start:

  plain  a bare franz-go consumer loop that decodes each record's JSON and
         counts its id: no framework (experiment 1);
  noack  a topology: the Kafka spout → a bolt that decodes the JSON and counts
         the ids, acking off (experiment 2);
  ack    the same topology with acking on: the spout at-least-once, committing
         only what is acked (experiment 3).

Two more modes run only when named with --mode:

  ack with --bolts, --bolt-latency, --max-spout-pending, --autotune-interval
         the ack mode's topology shaped for the max-spout-pending
         auto-tuner's measurement: --bolts executors of the decoding bolt,
         each taking --bolt-latency a record (a remote call), with a fixed
         topology.max.spout.pending or the auto-tuner on (--verbose logs
         its steps);
  kill   the crash tests' topology (the Kafka spout → decode → the Kafka
         sink, writing to a second topic) in 2 worker processes, 2 spout
         tasks of max spout pending 500 and a 5 s message timeout; worker 0
         is killed with SIGKILL once 30% of the ids are in the output
         topic and the spouts' consumer group is stable, each spout task
         holding partitions, and started again. It reports the duplicates in the
         output against their bound: the trees in flight (2 × 500) plus
         the records of an offset.commit.period (1 s) at the rate before
         the kill. --rate produces the records while the topology reads
         them (about so many a second) instead of all before.

Each mode is measured in its steady state, from when the decoding step has
seen 10% of the ids (the client connected, the group joined, the heap grown)
until it has seen every one: the wall time, messages per second, and this
process's CPU time per message (getrusage; the broker's is reported apart).
lost counts the ids the decoding step never saw, duplicates the sightings
beyond each id's first. Then the CPU per
message is compared: the issue's targets are noack ≤ 1.5× plain and
ack ≤ 2× noack (the paper measured about 3× for Storm's reliability).

--json prints one JSON object on stdout: "messages", "partitions",
"produce_seconds", "runs" (one object per mode, in order, with "mode",
"messages", "measured_messages" (the ids first seen in the steady state),
"seconds" (its wall time), "total_seconds" (from the consumer's start),
"messages_per_sec", "cpu_seconds", "cpu_us_per_message",
"broker_cpu_seconds", "lost", "duplicates", "committed" (the offsets the
topology's spout committed by its close; not for plain) and "error" when it
failed), "noack_vs_plain_cpu" and "ack_vs_noack_cpu" (null unless both
modes ran), "kill" (with the kill mode: "messages_per_sec_before_kill",
"in_flight", "commit_period_records", "bound", "recover_seconds",
"restarts"), and "error". A lost id or a mode that failed makes
gale exit with status 1, after the report; a missed target does not.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchKafka(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.cfg.Messages, "messages", f.cfg.Messages, "records to produce, and to read in each mode")
	fl.IntVar(&f.cfg.Partitions, "partitions", f.cfg.Partitions, "partitions of the topic")
	fl.StringVar(&f.mode, "mode", "", `"plain", "noack", "ack" or "kill" (default: the first three, in that order)`)
	fl.DurationVar(&f.cfg.Stall, "stall", 30*time.Second, "fail a mode that reads nothing new for this long")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document on stdout and nothing else")
	fl.StringVar(&f.cpuprofile, "cpuprofile", "", "write a pprof CPU profile of each mode's consuming phase to `file`.MODE")
	fl.IntVar(&f.cfg.Bolts, "bolts", 1, "ack mode: executors of the decoding bolt")
	fl.DurationVar(&f.cfg.BoltLatency, "bolt-latency", 0, "ack mode: time the decoding bolt takes per record on top of decoding, as a remote call would")
	fl.IntVar(&f.cfg.MaxSpoutPending, "max-spout-pending", 0, "ack mode: topology.max.spout.pending (0: unset)")
	fl.DurationVar(&f.cfg.AutotuneInterval, "autotune-interval", 0, "ack mode: turn topology.max.spout.pending.autotune on with this interval, whole seconds (0: off)")
	fl.Float64Var(&f.cfg.Rate, "rate", 0, "kill mode: produce the records while the topology reads them, about this many a second (0: all before)")
	fl.BoolVar(&f.verbose, "verbose", false, "log the topology at info level on stderr (the auto-tuner's steps)")
	cmd.AddCommand(newKafkaBrokerCmd())
	return cmd
}

// newKafkaBrokerCmd is the hidden `bench kafka broker`: the bench's
// broker child process.
func newKafkaBrokerCmd() *cobra.Command {
	partitions := 4
	cmd := &cobra.Command{
		Use:    "broker",
		Short:  "Serve the Kafka broker of bench kafka until stdin closes (started by bench kafka)",
		Hidden: true,
		Args:   cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return benchkafka.ServeBroker(cmd.Context(), partitions, []string{benchkafka.Topic, benchkafka.OutputTopic, benchkafka.PacedTopic}, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().IntVar(&partitions, "partitions", partitions, "partitions of the bench's topic")
	return cmd
}

func runBenchKafka(cmd *cobra.Command, f kafkaFlags) error {
	cfg := f.cfg
	if f.mode != "" {
		cfg.Modes = []string{f.mode}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Exe = exe
	cfg.Args = []string{"bench", "kafka", "broker", "--partitions", strconv.Itoa(cfg.Partitions)}
	cfg.WorkerArgs = []string{"worker"}
	cfg.CPUProfile = f.cpuprofile
	if err := cfg.Validate(); err != nil {
		return cli.Usage(err)
	}
	var live io.Writer = io.Discard
	if !f.asJSON {
		live = cmd.ErrOrStderr()
	}
	cfg.Live = live
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	cfg.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	r, runErr := benchkafka.Run(cmd.Context(), cfg)
	if f.asJSON {
		if err := cli.WriteJSON(cmd.OutOrStdout(), r); err != nil {
			return err
		}
		return runErr
	}
	printKafkaReport(cmd.OutOrStdout(), r)
	return runErr
}

func printKafkaReport(w io.Writer, r *benchkafka.Report) {
	fmt.Fprintf(w, "bench kafka: %s JSON events in %d partitions (produced in %.1f s); the broker in a child process\n",
		bench.Commas(int64(r.Messages)), r.Partitions, r.ProduceSeconds)
	fmt.Fprintf(w, "each mode measured from %.0f%% of the ids seen to all of them; CPU is this process's, the broker's apart\n\n", 100*benchkafka.WarmShare)
	fmt.Fprintf(w, "%-6s %11s %9s %8s %11s %13s %8s %11s\n", "mode", "msgs/s", "seconds", "cpu s", "cpu µs/msg", "broker cpu s", "lost", "duplicates")
	for _, run := range r.Runs {
		fmt.Fprintf(w, "%-6s %11.0f %9.2f %8.2f %11.2f %13.2f %8d %11d\n", run.Mode, run.PerSec, run.Seconds, run.CPUSeconds,
			run.CPUMicrosPerMessage, run.BrokerCPUSeconds, run.Lost, run.Duplicates)
	}
	ratio := func(name string, v *float64, target float64) {
		if v == nil {
			return
		}
		verdict := "met"
		if *v > target {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "CPU per message, %s: %.2f× (target ≤ %.1f×: %s)\n", name, *v, target, verdict)
	}
	fmt.Fprintln(w)
	ratio("noack / plain", r.NoAckVsPlain, benchkafka.TargetNoAckVsPlain)
	ratio("ack / noack", r.AckVsNoAck, benchkafka.TargetAckVsNoAck)
	if k := r.Kill; k != nil {
		dups := int64(0)
		for _, run := range r.Runs {
			if run.Mode == benchkafka.ModeKill {
				dups = run.Duplicates
			}
		}
		verdict := "met"
		if dups > k.Bound {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "kill: %d duplicates after worker 0 was killed; bound %d = %d in flight + %d in an offset.commit.period (%.0f/s): %s; every id in the output %.1f s after the kill, %d restarts\n",
			dups, k.Bound, k.InFlight, k.CommitPeriodRecords, k.PerSec, verdict, k.RecoverSeconds, k.Restarts)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
}
