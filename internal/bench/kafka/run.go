package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/kafka"
	"github.com/gale-stream/gale/internal/procstat"
)

// The modes, the paper's three experiments.
const (
	ModePlain = "plain" // a bare franz-go consumer loop: read, decode, count
	ModeNoAck = "noack" // the topology, acking off
	ModeAck   = "ack"   // the topology, acking on (at-least-once)
)

// Modes are the modes in the order a run of all of them takes.
var Modes = []string{ModePlain, ModeNoAck, ModeAck}

// Topic is the topic the bench produces to and every mode reads.
const Topic = "events"

// Config configures Run.
type Config struct {
	// Messages is how many records are produced, and read by each mode.
	Messages int
	// Partitions of the topic.
	Partitions int
	// Modes to run, in order (default Modes).
	Modes []string
	// Exe, Args and Env start the broker child process: exe args..., with
	// env added to this process's environment; it must call ServeBroker.
	Exe  string
	Args []string
	Env  []string
	// Stall fails a mode that sees no new record for this long
	// (default 30 s).
	Stall time.Duration
	// CPUProfile, if set, is where each mode's CPU profile of its
	// consuming phase goes: CPUProfile.MODE.
	CPUProfile string
	// WorkerArgs are the arguments before "--spec FILE" that make Exe
	// a worker process (for gale: "worker"), for the kill mode, whose
	// workers' logs go to WorkerLogs (nil: discarded).
	WorkerArgs []string
	WorkerLogs io.Writer
	// Rate, for the kill mode, produces the records while the topology
	// reads them, about Rate a second, rather than all before (0).
	Rate float64
	// Live gets a line per phase (nil: nothing).
	Live io.Writer
	// Log gets the topology's logs (nil: discarded).
	Log *slog.Logger

	// The ack mode's topology (BenchTopology), for the auto-tuner's
	// measurements: Bolts executors of the decoding step (default 1),
	// each taking BoltLatency per record on top of the decoding, as a
	// call to a remote service would; MaxSpoutPending is
	// topology.max.spout.pending (0: unset), AutotuneInterval turns on
	// topology.max.spout.pending.autotune with that interval (whole
	// seconds; 0: off).
	Bolts            int
	BoltLatency      time.Duration
	MaxSpoutPending  int
	AutotuneInterval time.Duration
}

// Shape is the ack mode's topology settings of a Config.
type Shape struct {
	Bolts            int
	BoltLatency      time.Duration
	MaxSpoutPending  int
	AutotuneInterval time.Duration
}

func (c *Config) shape() Shape {
	return Shape{Bolts: max(c.Bolts, 1), BoltLatency: c.BoltLatency, MaxSpoutPending: c.MaxSpoutPending,
		AutotuneInterval: c.AutotuneInterval}
}

// Validate checks c, naming what is wrong.
func (c *Config) Validate() error {
	var errs []error
	if c.Messages < 1 {
		errs = append(errs, fmt.Errorf("--messages must be ≥ 1, got %d", c.Messages))
	}
	if c.Partitions < 1 {
		errs = append(errs, fmt.Errorf("--partitions must be ≥ 1, got %d", c.Partitions))
	}
	if c.Bolts < 0 || c.BoltLatency < 0 || c.MaxSpoutPending < 0 {
		errs = append(errs, fmt.Errorf("--bolts, --bolt-latency and --max-spout-pending must be ≥ 0, got %d, %s and %d",
			c.Bolts, c.BoltLatency, c.MaxSpoutPending))
	}
	if c.AutotuneInterval < 0 || c.AutotuneInterval%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--autotune-interval must be whole seconds (0: the auto-tuner off), got %s", c.AutotuneInterval))
	}
	for _, m := range c.Modes {
		if !slices.Contains(Modes, m) && m != ModeKill {
			errs = append(errs, fmt.Errorf(`--mode must be "plain", "noack", "ack" or "kill" (or unset: the first three), got %q`, m))
		}
	}
	if c.Exe == "" {
		errs = append(errs, errors.New("benchkafka: Config.Exe is required: the program that runs the broker"))
	}
	return errors.Join(errs...)
}

// Result is one mode's run: what --json prints for it.
type Result struct {
	Mode     string `json:"mode"`
	Messages int    `json:"messages"`
	// The measurement is the steady state: from when the decoding step
	// has seen WarmShare of the ids (the client connected, the group
	// joined, the heap grown) until it has seen every one. Measured is
	// the number of ids first seen in it, Seconds its wall time,
	// TotalSeconds the time from the consumer's start.
	Measured     int64   `json:"measured_messages"`
	Seconds      float64 `json:"seconds"`
	TotalSeconds float64 `json:"total_seconds"`
	PerSec       float64 `json:"messages_per_sec"` // Measured / Seconds
	// CPUSeconds is this process's CPU (user + system) over Seconds: the
	// consumer's, not the broker's, which runs in a child process. It
	// is read with getrusage: 0 where there is none (Windows).
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUMicrosPerMessage is CPUSeconds per measured message, in µs.
	CPUMicrosPerMessage float64 `json:"cpu_us_per_message"`
	// BrokerCPUSeconds is the broker process's CPU over Seconds (Linux
	// only; 0 elsewhere), kept out of CPUSeconds.
	BrokerCPUSeconds float64 `json:"broker_cpu_seconds"`
	Lost             int64   `json:"lost"`       // ids the decoding step never saw
	Duplicates       int64   `json:"duplicates"` // sightings beyond each id's first
	// Committed is the offsets the topology's spout committed by its
	// close, after the measurement (noack and ack; ack must commit every
	// one).
	Committed *int64 `json:"committed,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Report is a whole run: what --json prints.
type Report struct {
	Messages       int      `json:"messages"`
	Partitions     int      `json:"partitions"`
	ProduceSeconds float64  `json:"produce_seconds"`
	Runs           []Result `json:"runs"`
	// NoAckVsPlain is noack's CPU per message over plain's (target
	// ≤ 1.5), AckVsNoAck ack's over noack's (target ≤ 2); null when a
	// mode of the pair did not run or failed, or CPU cannot be read.
	NoAckVsPlain *float64 `json:"noack_vs_plain_cpu"`
	AckVsNoAck   *float64 `json:"ack_vs_noack_cpu"`
	// Kill is the kill mode's measurement of duplicates, when it ran.
	Kill  *KillResult `json:"kill,omitempty"`
	Error string      `json:"error,omitempty"`
}

// WarmShare is the share of the ids a mode reads before its measurement
// starts.
const WarmShare = 0.1

// The targets for the ratios of CPU per message.
const (
	TargetNoAckVsPlain = 1.5
	TargetAckVsNoAck   = 2.0
)

// Run starts the broker child, produces cfg.Messages events (not
// measured), then runs each mode in turn, each in a consumer group of its
// own from the topic's start, measuring from the consumer's start until
// every id has been seen. It returns the report, filled in as far as the
// run got, and the error that ended it or made a mode fail (a lost id is
// one).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if len(cfg.Modes) == 0 {
		cfg.Modes = Modes
	}
	if cfg.Stall <= 0 {
		cfg.Stall = 30 * time.Second
	}
	if cfg.Live == nil {
		cfg.Live = io.Discard
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	r := &Report{Messages: cfg.Messages, Partitions: cfg.Partitions, Runs: []Result{}}
	if err := cfg.Validate(); err != nil {
		return r, err
	}
	b, err := StartBroker(ctx, cfg.Exe, cfg.Args, cfg.Env)
	if err != nil {
		return r, err
	}
	err = run(ctx, cfg, b, r)
	err = errors.Join(err, b.Close())
	if err != nil {
		r.Error = err.Error()
	}
	return r, err
}

func run(ctx context.Context, cfg Config, b *Broker, r *Report) error {
	brokers := []string{b.Addr}
	fmt.Fprintf(cfg.Live, "bench kafka: broker (pid %d) on %s; producing %d events to %s (%d partitions)\n",
		b.cmd.Process.Pid, b.Addr, cfg.Messages, Topic, cfg.Partitions)
	start := time.Now()
	if err := Produce(ctx, brokers, Topic, 0, int64(cfg.Messages), 0); err != nil {
		return err
	}
	r.ProduceSeconds = time.Since(start).Seconds()
	fmt.Fprintf(cfg.Live, "bench kafka: produced in %.1f s\n", r.ProduceSeconds)
	var errs []error
	for i, mode := range cfg.Modes {
		var res Result
		var err error
		if mode == ModeKill {
			res, r.Kill, err = runKill(ctx, cfg, b, "bench-"+mode+"-"+strconv.Itoa(i))
		} else {
			res, err = runMode(ctx, cfg, b, mode, "bench-"+mode+"-"+strconv.Itoa(i))
		}
		if err != nil {
			res.Error = err.Error()
			errs = append(errs, fmt.Errorf("mode %s: %w", mode, err))
		}
		r.Runs = append(r.Runs, res)
		fmt.Fprintf(cfg.Live, "bench kafka: %-5s %8.0f msgs/s  %.2f s  cpu %.2f s (%.2f µs/msg)  broker cpu %.2f s  lost %d  duplicates %d\n",
			res.Mode, res.PerSec, res.Seconds, res.CPUSeconds, res.CPUMicrosPerMessage, res.BrokerCPUSeconds, res.Lost, res.Duplicates)
		if ctx.Err() != nil {
			break
		}
	}
	r.NoAckVsPlain = r.ratio(ModeNoAck, ModePlain)
	r.AckVsNoAck = r.ratio(ModeAck, ModeNoAck)
	return errors.Join(errs...)
}

// ratio is a's CPU per message over b's, nil unless both ran cleanly.
func (r *Report) ratio(a, b string) *float64 {
	var x, y *Result
	for i := range r.Runs {
		switch run := &r.Runs[i]; {
		case run.Error != "":
		case run.Mode == a:
			x = run
		case run.Mode == b:
			y = run
		}
	}
	if x == nil || y == nil || x.CPUMicrosPerMessage == 0 || y.CPUMicrosPerMessage == 0 {
		return nil
	}
	v := x.CPUMicrosPerMessage / y.CPUMicrosPerMessage
	return &v
}

// runMode runs one mode in consumer group group.
func runMode(ctx context.Context, cfg Config, b *Broker, mode, group string) (Result, error) {
	res := Result{Mode: mode, Messages: cfg.Messages, Lost: int64(cfg.Messages)} // until it reads
	tally := NewTally(cfg.Messages)
	brokers := []string{b.Addr}
	var topo *gale.Topology
	var conf gale.Config
	var spouts *kafka.Spouts
	if mode != ModePlain {
		var err error
		if topo, conf, spouts, err = BenchTopology(mode, brokers, Topic, group, tally, cfg.shape()); err != nil {
			return res, err
		}
	}
	runtime.GC() // the garbage of the production, or of the mode before, is not this mode's
	stopProfile, err := startProfile(cfg.CPUProfile, mode)
	if err != nil {
		return res, err
	}
	start := time.Now()
	// The steady state's start, marked by watch (on this goroutine).
	var m0 mark
	warm := int64(float64(cfg.Messages) * WarmShare)
	onWarm := func() { m0 = takeMark(b, tally) }

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var runErr error
	var lt *gale.LocalTopology
	var done chan struct{}
	var plainErr error
	switch mode {
	case ModePlain:
		done = make(chan struct{})
		go func() { // waited for below
			defer close(done)
			plainErr = ConsumePlain(runCtx, brokers, Topic, group, tally)
		}()
		runErr = watch(runCtx, cfg.Stall, tally, b, done, nil, warm, onWarm)
	default:
		if lt, err = gale.StartLocal("bench-kafka-"+mode, conf, topo, gale.RunOptions{Logger: cfg.Log}); err != nil {
			stopProfile()
			return res, err
		}
		runErr = watch(runCtx, cfg.Stall, tally, b, nil, lt.Failed(), warm, onWarm)
	}
	// The measurement ends with the last id's first sighting: closing
	// the consumer (leaving the group, the last commit) is not measured,
	// nor, in the topology modes, the drain of what is still in flight.
	m1 := takeMark(b, tally)
	stopProfile()
	if done != nil {
		cancel()
		<-done
		if plainErr != nil && !errors.Is(plainErr, context.Canceled) {
			runErr = plainErr
		}
	}
	if lt != nil {
		lt.Stop()
		if errs, n := lt.Errors(); n > 0 && runErr == nil {
			runErr = fmt.Errorf("the topology reported %d errors, the last: %v", n, errs[len(errs)-1].Err)
		}
		st := spouts.Stats()
		res.Committed = &st.Committed
		if mode == ModeAck && runErr == nil && st.Committed != int64(cfg.Messages) {
			runErr = fmt.Errorf("the at-least-once spout committed %d of %d offsets by its close (acked %d, failed %d)",
				st.Committed, cfg.Messages, st.Acked, st.Failed)
		}
	}
	if m0.at.IsZero() { // watch ended before it marked
		m0 = m1
	}
	res.Measured = m1.distinct - m0.distinct
	res.Seconds = m1.at.Sub(m0.at).Seconds()
	res.TotalSeconds = m1.at.Sub(start).Seconds()
	res.CPUSeconds = (m1.cpu - m0.cpu).Seconds()
	res.BrokerCPUSeconds = (m1.brokerCPU - m0.brokerCPU).Seconds()
	if res.Measured > 0 && res.Seconds > 0 {
		res.PerSec = float64(res.Measured) / res.Seconds
		res.CPUMicrosPerMessage = res.CPUSeconds * 1e6 / float64(res.Measured)
	}
	res.Lost, res.Duplicates = tally.Lost(), tally.Duplicates()
	if runErr == nil && res.Lost > 0 {
		runErr = fmt.Errorf("%d of %d ids were never seen (the first: %v)", res.Lost, cfg.Messages, tally.Missing(5))
	}
	return res, runErr
}

// mark is a point of a mode's measurement.
type mark struct {
	at             time.Time
	distinct       int64
	cpu, brokerCPU time.Duration // 0 where they cannot be read
}

func takeMark(b *Broker, tally *Tally) mark {
	m := mark{at: time.Now(), distinct: tally.Distinct()}
	if u, err := procstat.SelfUsage(); err == nil {
		m.cpu = u.CPU
	}
	m.brokerCPU, _ = b.CPU()
	return m
}

// watchPoll is how often watch looks at the tally.
const watchPoll = 5 * time.Millisecond

// watch waits until tally is complete. It returns an error if no new
// record is seen for stall, the broker exits, done closes (the plain
// consumer ended: its error is the caller's to read) or failed yields
// (the topology failed), or ctx ends. It calls onWarm once, when warm
// ids have been seen.
func watch(ctx context.Context, stall time.Duration, tally *Tally, b *Broker, done <-chan struct{}, failed <-chan error,
	warm int64, onWarm func()) error {
	tk := time.NewTicker(watchPoll)
	defer tk.Stop()
	last, lastAt := tally.Seen(), time.Now()
	for !tally.Complete() {
		if onWarm != nil && tally.Distinct() >= warm {
			onWarm()
			onWarm = nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.Exited():
			return fmt.Errorf("the broker exited: %v; its last lines: %s", b.err, b.tail())
		case <-done:
			if tally.Complete() {
				return nil
			}
			return fmt.Errorf("the consumer ended with %d of %d ids seen", tally.Distinct(), tally.N())
		case err := <-failed:
			return fmt.Errorf("the topology failed: %w", err)
		case now := <-tk.C:
			if n := tally.Seen(); n != last {
				last, lastAt = n, now
			} else if now.Sub(lastAt) > stall {
				return fmt.Errorf("no new record for %s, %d of %d ids seen", stall, tally.Distinct(), tally.N())
			}
		}
	}
	return nil
}

// startProfile starts a CPU profile to base.mode if base is set; the
// function it returns stops it.
func startProfile(base, mode string) (func(), error) {
	if base == "" {
		return func() {}, nil
	}
	f, err := os.Create(base + "." + mode)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
