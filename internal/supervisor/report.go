package supervisor

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// report summarises the workers for the nimbuses: every worker known,
// with its state, its last heartbeat's counters and complete latencies,
// every desired worker that does not run, with why, and the totals of
// every topology this supervisor ran workers of (counters.go). It saves
// the totals in DIR/counters.json before they are sent, so that no
// nimbus is ever told more than a restarted supervisor would tell it.
// Called by Run's loop only.
func (s *Supervisor) report() *nimbuspb.ReportRequest {
	r := &nimbuspb.ReportRequest{Supervisor: s.cfg.ID}
	r.Totals = s.totals()
	seen := map[int]bool{}
	for _, w := range s.states {
		wr := &nimbuspb.WorkerReport{Topology: w.Topology, Port: int32(w.Port), State: string(w.State), Reason: w.Why,
			Supervisor: s.cfg.ID, Host: s.cfg.Host}
		wr.Restarts = int32(s.restartsOf(w.Port, w.Topology))
		if p := s.procs[w.Port]; p != nil && p.Running.Topology == w.Topology && !seen[w.Port] {
			seen[w.Port] = true
			wr.Pid = int32(p.PID)
			b := p.beat
			wr.AssignmentFingerprint = b.Fingerprint
			wr.RssBytes = b.RSS
			if !b.Time.IsZero() {
				wr.HeartbeatUnixMs = p.LastBeat.UnixMilli()
			}
			if b.Status != nil {
				wr.Pending = int64(b.Status.Pending)
			}
			var lat metrics.Latency
			for _, sp := range b.Spouts {
				wr.Emitted += sp.Emitted
				wr.Acked += sp.Acked
				wr.Failed += sp.Failed
				wr.TimedOut += sp.TimedOut
				lat.Add(&sp.Latency)
			}
			wr.Components = componentStats(b.Spouts, b.Bolts, s.cfg.Host, int32(w.Port))
			processStats(wr, p)
			if lat.Count() > 0 {
				wr.CompleteLatency = &nimbuspb.LatencyHistogram{}
				wr.CompleteLatency.Buckets, wr.CompleteLatency.Counts = lat.Sparse()
			}
		}
		r.Workers = append(r.Workers, wr)
	}
	return r
}

// reporter sends each report from in to every nimbus (the members in
// etcd), each through a sender of its own so that a slow or dead nimbus
// delays no other, and again at once to all when the members or the
// leader change: a nimbus that joins or takes the lead hears of every
// worker and total without waiting a report period. Reports never go to
// etcd.
func (s *Supervisor) reporter(ctx context.Context, in <-chan *nimbuspb.ReportRequest) {
	members := s.cfg.Store.Changes(ctx, coord.NimbusPrefix)
	senders := make(map[string]*sender) // by address
	var wg sync.WaitGroup
	defer func() {
		for _, sd := range senders {
			sd.cancel()
		}
		wg.Wait()
	}()
	var last *nimbuspb.ReportRequest
	readFailed := false
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-in:
			last = r
			for _, sd := range senders {
				sd.offer(r)
			}
			continue
		case _, ok := <-members:
			if !ok {
				return
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		nims, err := s.cfg.Store.Nimbuses(rctx)
		cancel()
		if err != nil {
			if !readFailed && ctx.Err() == nil {
				s.log.Warn("cannot read the nimbus members; reporting to those known", "err", err)
			}
			readFailed = true
			continue
		}
		readFailed = false
		addrs := make(map[string]bool, len(nims))
		for _, m := range nims {
			addrs[m.Addr] = true
			if senders[m.Addr] == nil {
				sd := s.nimbus.sender(ctx, m.Addr)
				senders[m.Addr] = sd
				wg.Go(func() { sd.run(s.log) })
			}
		}
		for addr, sd := range senders {
			if !addrs[addr] {
				sd.cancel()
				delete(senders, addr)
			}
		}
		if last != nil {
			for _, sd := range senders {
				sd.offer(last)
			}
		}
	}
}

// componentStats is a heartbeat's counters in the report's form, in
// component id order, from the worker on host:port (which its errors
// name).
func componentStats(spouts []metrics.Spout, bolts []metrics.Bolt, host string, port int32) []*nimbuspb.ComponentStats {
	out := make([]*nimbuspb.ComponentStats, 0, len(spouts)+len(bolts))
	for _, s := range spouts {
		c := &nimbuspb.ComponentStats{
			Component: s.Component, Kind: "spout", Tasks: int32(s.Tasks),
			Emitted: s.Emitted, Transferred: s.Transferred, Acked: s.Acked, Failed: s.Failed,
			FailedByBolt: s.FailedByBolt, TimedOut: s.TimedOut, FailedShutdown: s.FailedShutdown,
			Pending: s.Pending, MaxPending: s.MaxPending,
			BackpressureNanos: s.BackpressureNanos, ThrottledNanos: s.ThrottledNanos,
			Retries: s.Retries, DeadLetters: s.DeadLetters,
			Errors:    componentErrors(s.Errors, host, port),
			Executors: executorStats(s.Executors, host, port),
			Outputs:   streamStats(s.Outputs),
		}
		if s.Latency.Count() > 0 {
			c.CompleteLatency = &nimbuspb.LatencyHistogram{}
			c.CompleteLatency.Buckets, c.CompleteLatency.Counts = s.Latency.Sparse()
		}
		out = append(out, c)
	}
	for _, b := range bolts {
		out = append(out, &nimbuspb.ComponentStats{
			Component: b.Component, Kind: "bolt", Tasks: int32(b.Tasks),
			Emitted: b.Emitted, Transferred: b.Transferred, Acked: b.Acked, Failed: b.Failed,
			Executed: b.Executed, ExecuteSamples: b.ExecuteSamples, ExecuteSampledNanos: b.ExecuteSampledNanos,
			Capacity:       b.Capacity,
			ProcessSamples: b.ProcessSamples, ProcessSampledNanos: b.ProcessSampledNanos,
			QueueDepth: b.QueueDepth, QueueCapacity: b.QueueCapacity, BackpressureNanos: b.BackpressureNanos,
			Retries: b.Retries, DeadLetters: b.DeadLetters,
			Errors:    componentErrors(b.Errors, host, port),
			Executors: executorStats(b.Executors, host, port),
			Inputs:    streamStats(b.Inputs),
			Outputs:   streamStats(b.Outputs),
		})
	}
	slices.SortFunc(out, func(a, b *nimbuspb.ComponentStats) int { return cmp.Compare(a.GetComponent(), b.GetComponent()) })
	return out
}

// componentErrors is a component's errors in the report's form, naming
// the worker they came from.
func componentErrors(errs []metrics.Error, host string, port int32) []*nimbuspb.ComponentError {
	var out []*nimbuspb.ComponentError
	for _, e := range errs {
		out = append(out, &nimbuspb.ComponentError{Task: int32(e.Task), TimeUnixMs: e.TimeUnixMs, Error: e.Error, Host: host, Port: port})
	}
	return out
}

// executorStats is a component's executors in the report's form, on the
// worker host:port.
func executorStats(xs []metrics.Executor, host string, port int32) []*nimbuspb.ExecutorStats {
	var out []*nimbuspb.ExecutorStats
	for _, x := range xs {
		out = append(out, &nimbuspb.ExecutorStats{
			FirstTask: int32(x.FirstTask), LastTask: int32(x.LastTask), Host: host, Port: port,
			Emitted: x.Emitted, Transferred: x.Transferred, Acked: x.Acked, Failed: x.Failed, Executed: x.Executed,
			Capacity: x.Capacity, ExecuteSamples: x.ExecuteSamples, ExecuteSampledNanos: x.ExecuteSampledNanos,
			ProcessSamples: x.ProcessSamples, ProcessSampledNanos: x.ProcessSampledNanos, QueueDepth: x.QueueDepth,
		})
	}
	return out
}

// streamStats is a component's per-stream counters in the report's form.
func streamStats(ss []metrics.Stream) []*nimbuspb.StreamStats {
	var out []*nimbuspb.StreamStats
	for _, s := range ss {
		out = append(out, &nimbuspb.StreamStats{
			Stream: s.Stream, Component: s.Component, Emitted: s.Emitted, Transferred: s.Transferred,
			Executed: s.Executed, Acked: s.Acked, Failed: s.Failed,
			ExecuteSamples: s.ExecuteSamples, ExecuteSampledNanos: s.ExecuteSampledNanos,
			ProcessSamples: s.ProcessSamples, ProcessSampledNanos: s.ProcessSampledNanos,
		})
	}
	return out
}

// processStats puts the worker process's own use of the machine, from
// its last heartbeat, and when it started into its report.
func processStats(wr *nimbuspb.WorkerReport, p *proc) {
	wr.StartedUnixMs = p.LaunchedAt.UnixMilli()
	b := p.beat
	if b.Status != nil {
		wr.BytesIn, wr.BytesOut = b.Status.WireBytesReceived, b.Status.WireBytesSent
	}
	if pr := b.Process; pr != nil {
		wr.CpuSeconds, wr.HeapBytes = pr.CPUSeconds, pr.HeapBytes
		wr.GcCount, wr.GcPauseNanos = pr.GCCount, pr.GCPauseNanos
		wr.Goroutines, wr.MetricsPort = int32(pr.Goroutines), int32(pr.MetricsPort)
	}
}
