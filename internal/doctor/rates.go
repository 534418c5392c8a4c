package doctor

import (
	"time"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/metrics/components"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// Sample is one look at a topology: nimbus's Get and, if asked,
// ClusterInfo, and when the client took them.
type Sample struct {
	At      time.Time
	Info    *nimbuspb.TopologyInfo
	Cluster *nimbuspb.ClusterInfoResponse // nil if not asked
}

// AsOf is the time the sample's counters describe: its workers' latest
// heartbeat (the reports carry the counters of that heartbeat), or At
// when no worker reported one. Rates divide by the difference of two
// samples' AsOf, so a sample taken twice between two reports adds
// nothing rather than a rate of zero.
func (s Sample) AsOf() time.Time {
	var ms int64
	for _, w := range s.Info.GetWorkers() {
		ms = max(ms, w.GetHeartbeatUnixMs())
	}
	if ms == 0 {
		return s.At
	}
	return time.UnixMilli(ms)
}

// Component is one component's numbers between two samples: rates per
// second over the span between them, the latest gauges, and latencies of
// the span (of all time where the span timed none).
type Component struct {
	Component string `json:"component"`
	Kind      string `json:"kind"` // spout or bolt
	Executors int32  `json:"executors"`
	Tasks     int32  `json:"tasks"`

	// Per second over the span.
	Emitted      float64 `json:"emitted_per_sec"`
	Transferred  float64 `json:"transferred_per_sec"`
	Acked        float64 `json:"acked_per_sec"`
	Failed       float64 `json:"failed_per_sec"`
	FailedByBolt float64 `json:"failed_by_bolt_per_sec"`
	TimedOut     float64 `json:"timed_out_per_sec"`
	Executed     float64 `json:"executed_per_sec"`

	// Counts over the span, for shares (failures of trees finished).
	DeltaAcked, DeltaFailed, DeltaTimedOut, DeltaFailedByBolt int64 `json:"-"`

	// The latest report's gauges.
	Pending       int64   `json:"pending"`
	MaxPending    int64   `json:"max_pending"`
	Capacity      float64 `json:"capacity"`
	QueueDepth    int64   `json:"queue_depth"`
	QueueCapacity int64   `json:"queue_capacity"`

	// Busy is the share of the span the bolt's executors spent executing,
	// on average: executed × mean execute latency / executors. Unlike
	// Capacity (the runtime's busiest executor over its own 10-20 s
	// window, which starts at the executor's start) it covers exactly
	// the span.
	Busy float64 `json:"busy"`

	// ThrottledShare and BackpressureShare are the share of the span the
	// component's executors spent held at max pending and waiting on a
	// full queue (0 when the runtime does not report them).
	ThrottledShare    float64 `json:"throttled_share"`
	BackpressureShare float64 `json:"backpressure_share"`

	// ExecuteLatency and ProcessLatency are the mean of the calls timed
	// in the span, or of all time when none was.
	ExecuteLatency time.Duration `json:"-"`
	ProcessLatency time.Duration `json:"-"`
	// CompleteP50/P99 are the complete latencies of the trees acked in
	// the span (CompleteCount of them), or of all time when none was.
	CompleteP50   time.Duration `json:"-"`
	CompleteP99   time.Duration `json:"-"`
	CompleteCount int64         `json:"complete_count"`
	// The same latencies in milliseconds, for JSON.
	ExecuteMs     float64 `json:"execute_latency_ms"`
	ProcessMs     float64 `json:"process_latency_ms"`
	CompleteP50Ms float64 `json:"complete_latency_p50_ms"`
	CompleteP99Ms float64 `json:"complete_latency_p99_ms"`

	// LastError is the most recent error its tasks reported, if any.
	LastError string `json:"last_error,omitempty"`
}

// Load is how busy the bolt is: the larger of Capacity and Busy, both
// shares of time executing that can only fall short of the busiest
// executor's over the span.
func (c *Component) Load() float64 { return max(c.Capacity, c.Busy) }

// Span is the numbers of every component between two samples.
type Span struct {
	// Seconds is the time between the samples' AsOf; 0 when the reports
	// did not change between them (the rates are then 0).
	Seconds    float64     `json:"seconds"`
	Components []Component `json:"components"`
}

// Rates computes the components' numbers between prev and cur; with
// prev nil, over the topology's uptime (all-time averages). Counters
// that went down (a worker started again) count as 0 for the span.
func Rates(prev *Sample, cur Sample) Span {
	var span Span
	var before map[string]*nimbuspb.ComponentStats
	if prev != nil {
		span.Seconds = cur.AsOf().Sub(prev.AsOf()).Seconds()
		before = make(map[string]*nimbuspb.ComponentStats)
		for _, c := range prev.Info.GetComponents() {
			before[c.GetComponent()] = c
		}
	} else {
		span.Seconds = float64(cur.Info.GetSummary().GetUptimeSecs())
	}
	if span.Seconds < 0 {
		span.Seconds = 0
	}
	execs := executors(cur.Info)
	for _, c := range cur.Info.GetComponents() {
		p := before[c.GetComponent()]
		if p == nil {
			p = &nimbuspb.ComponentStats{}
		}
		span.Components = append(span.Components, componentRates(p, c, span.Seconds, execs[c.GetComponent()]))
	}
	return span
}

// executors is each component's executor count: the assignment's (a
// rebalance changes it), else the definition's parallelism.
func executors(info *nimbuspb.TopologyInfo) map[string]int32 {
	out := make(map[string]int32)
	for _, c := range info.GetDefinition().GetComponents() {
		out[c.GetId()] = c.GetParallelism()
	}
	for id, n := range info.GetAssignment().GetParallelism() {
		out[id] = n
	}
	return out
}

func componentRates(p, c *nimbuspb.ComponentStats, secs float64, execs int32) Component {
	r := Component{
		Component: c.GetComponent(), Kind: c.GetKind(), Executors: execs, Tasks: c.GetTasks(),
		Pending: c.GetPending(), MaxPending: c.GetMaxPending(), Capacity: c.GetCapacity(),
		QueueDepth: c.GetQueueDepth(), QueueCapacity: c.GetQueueCapacity(),
		DeltaAcked: metrics.Delta(c.GetAcked(), p.GetAcked()), DeltaFailed: metrics.Delta(c.GetFailed(), p.GetFailed()),
		DeltaTimedOut: metrics.Delta(c.GetTimedOut(), p.GetTimedOut()), DeltaFailedByBolt: metrics.Delta(c.GetFailedByBolt(), p.GetFailedByBolt()),
	}
	if r.Executors == 0 {
		r.Executors = c.GetTasks()
	}
	if secs > 0 {
		per := func(cur, prev int64) float64 { return metrics.Rate(cur, prev, secs) }
		r.Emitted = per(c.GetEmitted(), p.GetEmitted())
		r.Transferred = per(c.GetTransferred(), p.GetTransferred())
		r.Acked = per(c.GetAcked(), p.GetAcked())
		r.Failed = per(c.GetFailed(), p.GetFailed())
		r.FailedByBolt = per(c.GetFailedByBolt(), p.GetFailedByBolt())
		r.TimedOut = per(c.GetTimedOut(), p.GetTimedOut())
		r.Executed = per(c.GetExecuted(), p.GetExecuted())
		if r.Executors > 0 {
			wall := secs * 1e9 * float64(r.Executors)
			r.ThrottledShare = float64(metrics.Delta(c.GetThrottledNanos(), p.GetThrottledNanos())) / wall
			r.BackpressureShare = float64(metrics.Delta(c.GetBackpressureNanos(), p.GetBackpressureNanos())) / wall
		}
	}
	r.ExecuteLatency = metrics.MeanSince(c.GetExecuteSamples(), c.GetExecuteSampledNanos(), p.GetExecuteSamples(), p.GetExecuteSampledNanos())
	r.ProcessLatency = metrics.MeanSince(c.GetProcessSamples(), c.GetProcessSampledNanos(), p.GetProcessSamples(), p.GetProcessSampledNanos())
	r.CompleteP50, r.CompleteP99, r.CompleteCount = completeLatency(p.GetCompleteLatency(), c.GetCompleteLatency())
	if r.Executors > 0 {
		r.Busy = r.Executed * r.ExecuteLatency.Seconds() / float64(r.Executors)
	}
	r.ExecuteMs, r.ProcessMs, r.CompleteP50Ms, r.CompleteP99Ms = ms(r.ExecuteLatency), ms(r.ProcessLatency), ms(r.CompleteP50), ms(r.CompleteP99)
	if errs := c.GetErrors(); len(errs) > 0 {
		last := errs[0]
		for _, e := range errs {
			if e.GetTimeUnixMs() >= last.GetTimeUnixMs() {
				last = e
			}
		}
		r.LastError = last.GetError()
	}
	return r
}

// completeLatency is the p50 and p99 of the trees acked between the two
// histograms, or of all of cur's when none was, and how many trees
// they cover.
func completeLatency(prev, cur *nimbuspb.LatencyHistogram) (p50, p99 time.Duration, n int64) {
	c, err := components.LatencyOf(cur)
	if err != nil {
		return 0, 0, 0
	}
	l := c
	if p, err := components.LatencyOf(prev); err == nil {
		l = metrics.LatencySince(&c, &p)
	}
	return l.Quantile(0.5), l.Quantile(0.99), l.Count()
}
