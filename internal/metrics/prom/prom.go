// Package prom is the Prometheus exposition of Gale's numbers: what the
// two kinds of /metrics share, and a worker process's own collector
// (NewWorker). The UI process's collector, which reads the cluster from
// nimbus on each scrape, is internal/metrics/prom/cluster, apart so that
// a worker process does not link the nimbus API.
//
// Both endpoints serve the per-component series (Components) under
// their own prefixes, gale_ for the cluster's sums and gale_worker_ for
// a worker's own tasks, so that a Prometheus scraping both never adds a
// worker's counts to the cluster's sums; and both serve the standard go_*
// and process_* series of their process (Handler).
package prom

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gale-stream/gale/internal/metrics"
)

// Handler serves the collectors' series and the process's Go runtime and
// process series (go_*, process_*). A collector's error leaves the
// others' series served.
func Handler(cs ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Descs makes a collector's descriptors and describes them all. Not safe
// for concurrent use while descriptors are being made; Describe is.
type Descs struct {
	all []*prometheus.Desc
}

// New makes and keeps the descriptor of a series with variable labels.
func (d *Descs) New(name, help string, labels ...string) *prometheus.Desc {
	desc := prometheus.NewDesc(name, help, labels, nil)
	d.all = append(d.all, desc)
	return desc
}

// Describe sends every descriptor made, as prometheus.Collector's
// Describe does.
func (d *Descs) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range d.all {
		ch <- desc
	}
}

// Out sends one scrape's series.
type Out struct {
	Ch chan<- prometheus.Metric
	// Hold, if set, gives the value to send of each counter: the
	// cluster's collector holds its counters at their highest.
	Hold func(d *prometheus.Desc, v float64, labels []string) float64
}

// Counter sends a counter.
func (o Out) Counter(d *prometheus.Desc, v float64, labels ...string) {
	if o.Hold != nil {
		v = o.Hold(d, v, labels)
	}
	o.Ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

// Gauge sends a gauge.
func (o Out) Gauge(d *prometheus.Desc, v float64, labels ...string) {
	o.Ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// LatencyBounds are the upper bounds, in seconds, of the Prometheus
// buckets of a complete-latency histogram. A metrics.Latency bucket
// counts under the first bound at or above its own upper bound, so a
// tree may count one bound high, never low.
var LatencyBounds = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Histogram sends l as a Prometheus histogram in seconds, at
// LatencyBounds, each tree at its bucket's middle in the sum.
func (o Out) Histogram(d *prometheus.Desc, l *metrics.Latency, labels ...string) {
	per := make([]uint64, len(LatencyBounds))
	l.Each(func(highMicros float64, n int64) {
		for j, bound := range LatencyBounds {
			if highMicros/1e6 <= bound {
				per[j] += uint64(n)
				break
			}
		}
	})
	cumulative := make(map[float64]uint64, len(LatencyBounds))
	var acc uint64
	for j, bound := range LatencyBounds {
		acc += per[j]
		cumulative[bound] = acc
	}
	o.Ch <- prometheus.MustNewConstHistogram(d, uint64(l.Count()), l.SumMicros()/1e6, cumulative, labels...)
}

// Component is one component's numbers that both endpoints serve.
type Component struct {
	ID, Kind string // spout or bolt
	// Emitted, Transferred, Acked and Failed: a spout's tuples and trees,
	// a bolt's tuples.
	Emitted, Transferred, Acked, Failed int64
	// A spout's failed trees by reason.
	FailedByBolt, TimedOut, FailedShutdown int64
	// A bolt's input executed, its capacity and mean execute latency in
	// seconds.
	Executed              int64
	Capacity              float64
	ExecuteLatencySeconds float64
}

// ComponentHelp is the help of each series of Components, which says
// whose counts they are.
type ComponentHelp struct {
	Emitted, Transferred, Acked, Failed, SpoutFailed string
	BoltExecuted, BoltCapacity, BoltExecuteLatency   string
}

// Components are the per-component series both endpoints serve, named
// PREFIX + component_{emitted,transferred,acked,failed}_total (labels
// topology, topology_id, component, kind), spout_failed_by_reason_total
// (and reason: bolt, timeout, shutdown) and bolt_executed_total,
// bolt_capacity_ratio, bolt_execute_latency_seconds (topology,
// topology_id, component).
type Components struct {
	emitted, transferred, acked, failed, spoutFailed *prometheus.Desc
	boltExecuted, boltCapacity, boltExecLatency      *prometheus.Desc
}

// NewComponents makes the series' descriptors in d.
func NewComponents(d *Descs, prefix string, help ComponentHelp) *Components {
	comp := []string{"topology", "topology_id", "component", "kind"}
	bolt := comp[:3]
	return &Components{
		emitted:         d.New(prefix+"component_emitted_total", help.Emitted, comp...),
		transferred:     d.New(prefix+"component_transferred_total", help.Transferred, comp...),
		acked:           d.New(prefix+"component_acked_total", help.Acked, comp...),
		failed:          d.New(prefix+"component_failed_total", help.Failed, comp...),
		spoutFailed:     d.New(prefix+"spout_failed_by_reason_total", help.SpoutFailed, append(comp[:4:4], "reason")...),
		boltExecuted:    d.New(prefix+"bolt_executed_total", help.BoltExecuted, bolt...),
		boltCapacity:    d.New(prefix+"bolt_capacity_ratio", help.BoltCapacity, bolt...),
		boltExecLatency: d.New(prefix+"bolt_execute_latency_seconds", help.BoltExecuteLatency, bolt...),
	}
}

// Collect sends c's series, labelled with its topology's name and id.
func (s *Components) Collect(o Out, topology, topologyID string, c Component) {
	l := []string{topology, topologyID, c.ID, c.Kind}
	o.Counter(s.emitted, float64(c.Emitted), l...)
	o.Counter(s.transferred, float64(c.Transferred), l...)
	o.Counter(s.acked, float64(c.Acked), l...)
	o.Counter(s.failed, float64(c.Failed), l...)
	if c.Kind == "spout" {
		o.Counter(s.spoutFailed, float64(c.FailedByBolt), append(l[:4:4], "bolt")...)
		o.Counter(s.spoutFailed, float64(c.TimedOut), append(l[:4:4], "timeout")...)
		o.Counter(s.spoutFailed, float64(c.FailedShutdown), append(l[:4:4], "shutdown")...)
		return
	}
	o.Counter(s.boltExecuted, float64(c.Executed), l[:3]...)
	o.Gauge(s.boltCapacity, c.Capacity, l[:3]...)
	o.Gauge(s.boltExecLatency, c.ExecuteLatencySeconds, l[:3]...)
}
