package bench

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gale-stream/gale/internal/workermem"
)

// Modes and runners accepted by [Options.Validate].
const (
	ModeNoAck = "noack" // spouts emit without message ids; nothing is acked
	ModeAck   = "ack"   // every sentence is a tracked tree, acked when fully counted

	RunnerGale  = "gale"  // the Gale topology
	RunnerPlain = "plain" // the plain Go baseline, RunPlain

	// maxWorkers bounds Options.Workers.
	maxWorkers = 16

	// GOGCOff as Options.GOGC turns proportional collection off: the run
	// collects when the heap nears Options.HeapMB (a worker's
	// worker.gogc: -1).
	GOGCOff = workermem.GOGCOff
)

// Options describe one benchmark run. The CLI binds its flags onto this struct; the
// defaults live in [DefaultOptions].
type Options struct {
	Mode     string        // ModeNoAck or ModeAck
	Duration time.Duration // how long the spouts emit
	Rate     float64       // total sentences per second over all spouts; 0 = as fast as possible

	Spouts, Splitters, Counters, Ackers int // parallelism per component

	MaxSpoutPending int           // in-flight cap per spout task; 0 = unset (runner default)
	CountDelay      time.Duration // busy work per word in the count stage (overload tests)
	MessageTimeout  time.Duration // Gale's topology.message.timeout.secs, whole seconds; 0 = Gale's default
	GOGC            int           // GC percent for the run, GOGCOff = off (a Gale worker's default is 400)
	HeapMB          int           // memory limit for the run in MiB (a Gale worker's worker.heap.memory.mb)
	GCFloorMB       int           // least heap in MiB before collecting, 0 = none (a worker's worker.gc.floor.mb)
	HeapPretouch    bool          // touch the GC floor's heap at start (a worker's worker.heap.pretouch)
	TupleReuse      bool          // Gale's bolts run with topology.tuple.reuse
	// StatsOff runs Gale's topology with topology.stats.enabled false: no
	// per-component metrics (the zero value keeps them, as Gale does).
	StatsOff bool

	JSON   bool   // print one JSON document instead of the live view and table
	Runner string // RunnerGale or RunnerPlain; a label for the report

	// Workers is how many worker OS processes run the topology (RunnerGale only); 1
	// runs it in this process.
	Workers int
	// PinCPUs binds each worker process to its own share of the CPUs (with
	// Workers > 1; the cluster key worker.cpu.pinning).
	PinCPUs bool
}

// DefaultOptions returns the defaults of `gale bench wordcount`.
func DefaultOptions() Options {
	return Options{
		Mode:      ModeAck,
		Duration:  10 * time.Second,
		Spouts:    1,
		Splitters: 1,
		Counters:  1,
		Ackers:    1,
		Runner:    RunnerGale,
		Workers:   1,
		GOGC:      400,
		HeapMB:    768,
		GCFloorMB: 64,
		// As a worker does by default (worker.heap.pretouch).
		HeapPretouch: true,
		// The bench's bolts keep no tuple after acking it, so they declare
		// topology.tuple.reuse as an author who cares for latency would
		// (galetest checks that they keep the promise).
		TupleReuse: true,
		PinCPUs:    true,
	}
}

// Validate reports every invalid field, each error naming the flag at fault.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if o.Mode != ModeNoAck && o.Mode != ModeAck {
		bad("--mode must be %q or %q, got %q", ModeNoAck, ModeAck, o.Mode)
	}
	if o.Runner != RunnerGale && o.Runner != RunnerPlain {
		bad("--runner must be %q or %q, got %q", RunnerGale, RunnerPlain, o.Runner)
	}
	switch {
	case o.Workers < 1 || o.Workers > maxWorkers:
		bad("--workers must be between 1 and %d, got %d", maxWorkers, o.Workers)
	case o.Workers > 1 && o.Runner == RunnerPlain:
		bad("--workers applies to the gale runner only (--runner %s runs in one process), got --workers %d", RunnerPlain, o.Workers)
	}
	if o.Duration <= 0 {
		bad("--duration must be > 0, got %v", o.Duration)
	}
	if o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) {
		bad("--rate must be a finite number ≥ 0 (sentences/s, 0 = unlimited), got %v", o.Rate)
	}
	for _, p := range []struct {
		flag string
		n    int
	}{{"--spouts", o.Spouts}, {"--splitters", o.Splitters}, {"--counters", o.Counters}} {
		if p.n < 1 {
			bad("%s must be ≥ 1, got %d", p.flag, p.n)
		}
	}
	switch {
	case o.Ackers < 0:
		bad("--ackers must be ≥ 0, got %d", o.Ackers)
	case o.Ackers == 0 && o.Mode == ModeAck:
		bad("--ackers must be ≥ 1 with --mode %s (use --mode %s to run without ackers), got 0", ModeAck, ModeNoAck)
	}
	if o.MaxSpoutPending < 0 {
		bad("--max-spout-pending must be ≥ 0 (0 = unset), got %d", o.MaxSpoutPending)
	}
	if o.GOGC != GOGCOff && o.GOGC < 25 {
		bad("--gogc must be off or ≥ 25, got %d", o.GOGC)
	}
	if o.GCFloorMB < 0 {
		bad("--gc-floor-mb must be ≥ 0, got %d", o.GCFloorMB)
	}
	if o.HeapMB < 64 {
		bad("--heap-mb must be ≥ 64, got %d", o.HeapMB)
	}
	if o.MessageTimeout < 0 || o.MessageTimeout%time.Second != 0 {
		bad("--message-timeout must be whole seconds ≥ 0 (0 = Gale's default), got %v", o.MessageTimeout)
	}
	if o.StatsOff && o.Runner == RunnerPlain {
		bad("--stats=false applies to the gale runner only (--runner %s keeps no metrics)", RunnerPlain)
	}
	if o.CountDelay < 0 {
		bad("--count-delay must be ≥ 0, got %v", o.CountDelay)
	}
	return errors.Join(errs...)
}

// SpoutRate is the rate each of the o.Spouts spouts is paced at: Rate split evenly,
// 0 when unlimited.
func (o Options) SpoutRate() float64 {
	if o.Rate <= 0 || o.Spouts < 1 {
		return 0
	}
	return o.Rate / float64(o.Spouts)
}

// SpoutTasks is how many spout tasks the runner activates: Spouts for the Gale
// topology, 1 for the plain baseline's one generator. Run opens its measurement window
// when Stats.SpoutsActivated reaches it.
func (o Options) SpoutTasks() int {
	if o.Runner == RunnerPlain {
		return 1
	}
	return o.Spouts
}
