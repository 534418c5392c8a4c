package benchtopo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
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
// bench's options (JSON); the worker's heartbeats carry its Stats.
func WorkerFactory(params json.RawMessage) (*workerproc.Built, error) {
	var opts bench.Options
	if err := json.Unmarshal(params, &opts); err != nil {
		return nil, fmt.Errorf("bench options: %w", err)
	}
	stats := new(bench.Stats)
	topo, conf, err := Topology(opts, stats)
	if err != nil {
		return nil, err
	}
	return &workerproc.Built{
		Topology: topo,
		Config:   conf,
		Stats:    func() any { return stats.Snapshot() },
	}, nil
}

// WorkerCluster is the cluster layer the bench's worker processes run
// with: the memory settings of opts, as bench.Run applies them to a run
// in one process.
func WorkerCluster(opts bench.Options) gale.Config {
	return gale.Config{
		workermem.KeyGOGC:         opts.GOGC,
		workermem.KeyGCFloorMB:    opts.GCFloorMB,
		workermem.KeyHeapPretouch: opts.HeapPretouch,
		workermem.KeyHeapMemoryMB: opts.HeapMB,
	}
}

// heartbeatMS is how often bench workers report.
const heartbeatMS = 500

// ProcessRunner returns the bench.Runner that runs the topology in
// opts.Workers worker processes of exe (args select its worker
// subcommand), whose logs go to logs. The runner folds the workers'
// reported stats into its own, and stops them in order: spouts
// deactivated, in-flight trees drained everywhere, then the processes.
//
// Each worker's memory is set as bench.Run sets the single-process one's,
// through the cluster layer of its spec (workermem's keys), as gale.yaml
// sets a cluster's workers.
//
// cpuProfile, if set, has each worker write a CPU profile to
// cpuProfile.worker-N; traceFile, if set, has each write a runtime
// execution trace to traceFile.worker-N (workerproc.CPUProfileEnv,
// workerproc.TraceEnv).
func ProcessRunner(exe string, args []string, cpuProfile, traceFile string, logs io.Writer, log *slog.Logger) bench.Runner {
	return func(ctx context.Context, opts bench.Options, stats *bench.Stats) error {
		dir, err := os.MkdirTemp("", "gale-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		params, err := json.Marshal(opts)
		if err != nil {
			return err
		}
		f := newFolder(opts.Workers, stats, log)
		var env []string
		if cpuProfile != "" {
			env = append(env, workerproc.CPUProfileEnv+"="+cpuProfile)
		}
		if traceFile != "" {
			env = append(env, workerproc.TraceEnv+"="+traceFile)
		}
		c, err := workerproc.Launch(workerproc.LaunchConfig{
			Exe:  exe,
			Args: args,
			Env:  env,
			Spec: workerproc.Spec{
				Topology:    WorkerTopology,
				Factory:     WorkerTopology,
				Params:      params,
				HeartbeatMS: heartbeatMS,
				LogLevel:    "warn",
				Cluster:     WorkerCluster(opts),
			},
			N:         opts.Workers,
			Dir:       dir,
			Stderr:    logs,
			OnMessage: f.take,
			PinCPUs:   opts.PinCPUs,
		})
		if err != nil {
			return err
		}
		stats.SetWorkerCPUs(c.CPUs())
		<-ctx.Done()
		// Stop drains first: spouts stopped everywhere, trees in flight
		// completed, then the processes stop.
		return c.Stop(drainTimeout)
	}
}

// drainTimeout bounds the wait for in-flight trees, and for the processes
// to exit, when the run ends.
const drainTimeout = 30 * time.Second

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
