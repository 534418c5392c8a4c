package wordcount

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"sync"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bench"
	"github.com/gale-stream/gale/internal/workermem"
	"github.com/gale-stream/gale/internal/workerproc"
)

// WorkerTopology is the name worker processes know the bench topology by
// (workerproc.Register).
const WorkerTopology = "bench-wordcount"

// WorkerFactory builds the bench topology in a worker process from the
// bench's options (JSON); the worker's heartbeats carry its Stats. With
// GALE_BENCH_WORKER_CPUPROFILE or GALE_BENCH_WORKER_TRACE set (the bench's
// --cpuprofile and --trace, ProcessConfig), the worker writes a CPU
// profile or an execution trace of its run to that file.
func WorkerFactory(params json.RawMessage) (_ *workerproc.Built, err error) {
	var opts bench.Options
	if err := json.Unmarshal(params, &opts); err != nil {
		return nil, fmt.Errorf("bench options: %w", err)
	}
	stopProfiles, err := startProfiles(os.Getenv(envCPUProfile), os.Getenv(envTrace))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			stopProfiles()
		}
	}()
	stats := new(bench.Stats)
	topo, conf, err := Topology(opts, stats)
	if err != nil {
		return nil, err
	}
	return &workerproc.Built{
		Topology: topo,
		Config:   conf,
		Stats:    func() any { return stats.Snapshot() },
		Close:    stopProfiles,
	}, nil
}

// WorkerCluster is the cluster layer the bench's worker processes run
// with: the memory settings of opts, as bench.Run applies them to a run
// in one process, and whether the launcher pins them to CPUs.
func WorkerCluster(opts bench.Options) gale.Config {
	return gale.Config{
		workermem.KeyGOGC:         opts.GOGC,
		workermem.KeyGCFloorMB:    opts.GCFloorMB,
		workermem.KeyHeapPretouch: opts.HeapPretouch,
		workermem.KeyHeapMemoryMB: opts.HeapMB,
		workerproc.CPUPinningKey:  opts.PinCPUs,
	}
}

// The environment through which the bench's launcher asks a worker for a
// profile: bench-only knobs, which the worker spec does not carry.
const (
	envCPUProfile = "GALE_BENCH_WORKER_CPUPROFILE"
	envTrace      = "GALE_BENCH_WORKER_TRACE"
)

// startProfiles starts a CPU profile to cpuProfile and an execution trace
// to traceFile, each unless its name is empty, and returns what stops
// both and closes their files.
func startProfiles(cpuProfile, traceFile string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if traceFile != "" {
		f, err := os.Create(traceFile)
		if err != nil {
			stop()
			return nil, fmt.Errorf("trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			stop()
			return nil, fmt.Errorf("trace: %w", err)
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	return stop, nil
}

// heartbeatMS is how often bench workers report.
const heartbeatMS = 500

// ProcessConfig configures ProcessRunner.
type ProcessConfig struct {
	// Exe is the binary whose worker subcommand Args select.
	Exe  string
	Args []string
	// CPUProfile, if set, has each worker write a CPU profile to
	// CPUProfile.worker-N; Trace, if set, a runtime execution trace to
	// Trace.worker-N.
	CPUProfile, Trace string
	// Logs receives the workers' logs; Log is the runner's own logger.
	Logs io.Writer
	Log  *slog.Logger
	// Launched, if set, is called on the runner's goroutine once every
	// worker has started, while the run goes on (tests kill a worker from
	// it). If it returns true the run ends then, as when its ctx is done:
	// the runner drains and returns.
	Launched func(ctx context.Context, l Launch) (end bool)
}

// Launch is a running multi-process bench, as ProcessConfig.Launched sees
// it.
type Launch struct {
	Cluster *workerproc.Cluster
	Stats   *bench.Stats
	f       *folder
}

// WorkerSpouts is how many spout tasks worker w has activated, as its
// heartbeats last said.
func (l Launch) WorkerSpouts(w int) int64 {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	return l.f.workers[w].prev.SpoutsActivated
}

// ProcessRunner returns the bench.Runner that runs the topology in
// opts.Workers worker processes of cfg.Exe. The runner folds the workers'
// reported stats into its own, and stops them in order: spouts
// deactivated, in-flight trees drained everywhere, then the processes.
//
// Each worker's memory is set as bench.Run sets the single-process one's,
// through the cluster layer of its spec (workermem's keys), as gale.yaml
// sets a cluster's workers.
//
// A worker that dies is started again, as a supervisor would: the trees it
// held time out at their spouts, which replay them, and the drain waits
// for them. The runner then returns the worker's failure (the run's
// figures stand), and Stats.WorkerRestarts counts the restarts.
func ProcessRunner(cfg ProcessConfig) bench.Runner {
	return func(ctx context.Context, opts bench.Options, stats *bench.Stats) error {
		params, err := json.Marshal(opts)
		if err != nil {
			return err
		}
		f := newFolder(opts.Workers, stats, cfg.Log)
		c, err := workerproc.Launch(workerproc.LaunchConfig{
			Exe:  cfg.Exe,
			Args: cfg.Args,
			WorkerEnv: func(i int) []string {
				var env []string
				if cfg.CPUProfile != "" {
					env = append(env, envCPUProfile+"="+cfg.CPUProfile+".worker-"+strconv.Itoa(i))
				}
				if cfg.Trace != "" {
					env = append(env, envTrace+"="+cfg.Trace+".worker-"+strconv.Itoa(i))
				}
				return env
			},
			Spec: workerproc.Spec{
				Topology:    WorkerTopology,
				Factory:     WorkerTopology,
				Params:      params,
				HeartbeatMS: heartbeatMS,
				LogLevel:    "warn",
				Cluster:     WorkerCluster(opts),
			},
			N:         opts.Workers,
			Stderr:    cfg.Logs,
			OnMessage: f.take,
			Restart:   true,
		})
		if err != nil {
			return err
		}
		stats.SetWorkerCPUs(c.CPUs())
		if cfg.Launched == nil || !cfg.Launched(ctx, Launch{Cluster: c, Stats: stats, f: f}) {
			<-ctx.Done()
		}
		// Stop drains first: spouts stopped everywhere, trees in flight
		// completed, then the processes stop.
		err = c.Stop(drainTimeout(opts))
		stats.WorkerRestarts.Store(int64(c.Restarts()))
		return err
	}
}

// drainTimeout bounds the wait for in-flight trees, and for the processes
// to exit, when the run ends: long enough for trees a dead worker held to
// time out and be replayed.
func drainTimeout(opts bench.Options) time.Duration {
	timeout := opts.MessageTimeout
	if timeout == 0 {
		timeout = 30 * time.Second // topology.message.timeout.secs' default
	}
	return 2*timeout + 30*time.Second
}

// folder folds the workers' heartbeats into the launcher's Stats.
type folder struct {
	stats *bench.Stats
	log   *slog.Logger

	mu      sync.Mutex
	workers []workerState
}

type workerState struct {
	incarnation int
	prev        bench.StatsSnapshot
	wireBytes   int64
	wireTuples  int64
	rssAt       time.Time // of the last RSS sample kept
}

func newFolder(n int, stats *bench.Stats, log *slog.Logger) *folder {
	return &folder{stats: stats, log: log, workers: make([]workerState, n)}
}

func (f *folder) take(w, incarnation int, m workerproc.Message) {
	if m.Event != workerproc.EventHeartbeat && m.Event != workerproc.EventStopped {
		return
	}
	var snap bench.StatsSnapshot
	if err := json.Unmarshal(m.Stats, &snap); err != nil {
		f.log.Warn("unreadable stats from a worker", "worker", w, "err", err)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &f.workers[w]
	if incarnation != s.incarnation {
		// A restarted worker counts from zero again.
		*s = workerState{incarnation: incarnation}
	}
	if err := f.stats.AddDelta(snap, s.prev); err != nil {
		f.log.Warn("stats from a worker went backwards", "worker", w, "err", err)
	} else {
		s.prev = snap
	}
	if m.Status != nil {
		f.stats.WireBytes.Add(m.Status.WireBytesSent - s.wireBytes)
		f.stats.WireTuples.Add(m.Status.WireTuplesSent - s.wireTuples)
		s.wireBytes, s.wireTuples = m.Status.WireBytesSent, m.Status.WireTuplesSent
	}
	if m.RSS > 0 && m.Time.Sub(s.rssAt) >= time.Second-heartbeatMS*time.Millisecond/2 {
		f.stats.RecordWorkerRSS(w, m.RSS)
		s.rssAt = m.Time
	}
}
