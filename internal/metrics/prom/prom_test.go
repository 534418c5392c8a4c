package prom

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gale-stream/gale/internal/metrics"
)

// testCollector serves Components' series of one spout and one bolt, and
// a latency histogram, under prefix.
type testCollector struct {
	Descs
	comps *Components
	lat   *prometheus.Desc
	hold  func(*prometheus.Desc, float64, []string) float64
}

func newTestCollector(prefix string) *testCollector {
	c := &testCollector{}
	c.comps = NewComponents(&c.Descs, prefix, ComponentHelp{Emitted: "e", Transferred: "t", Acked: "a", Failed: "f",
		SpoutFailed: "sf", BoltExecuted: "x", BoltCapacity: "c", BoltExecuteLatency: "l"})
	c.lat = c.New(prefix+"latency_seconds", "h", "topology")
	return c
}

func (c *testCollector) Collect(ch chan<- prometheus.Metric) {
	o := Out{Ch: ch, Hold: c.hold}
	c.comps.Collect(o, "wc", "wc-1", Component{ID: "s", Kind: "spout", Emitted: 10, Acked: 8, Failed: 2, FailedByBolt: 1, TimedOut: 1})
	c.comps.Collect(o, "wc", "wc-1", Component{ID: "b", Kind: "bolt", Executed: 20, Capacity: 0.5, ExecuteLatencySeconds: 0.0015})
	var l metrics.Latency
	l.Record(700 * time.Microsecond) // under 0.001
	l.Record(3 * time.Millisecond)   // under 0.005
	l.Record(2 * time.Minute)        // above every bound
	o.Histogram(c.lat, &l, "wc")
}

// TestComponentsSeries: both endpoints' per-component series carry the
// names and labels dashboards read, under each endpoint's prefix: a
// spout's counters and its failures by reason, a bolt's executed,
// capacity and execute latency.
func TestComponentsSeries(t *testing.T) {
	for _, prefix := range []string{"gale_", "gale_worker_"} {
		want := `
# HELP PREFIXbolt_capacity_ratio c
# TYPE PREFIXbolt_capacity_ratio gauge
PREFIXbolt_capacity_ratio{component="b",topology="wc",topology_id="wc-1"} 0.5
# HELP PREFIXbolt_execute_latency_seconds l
# TYPE PREFIXbolt_execute_latency_seconds gauge
PREFIXbolt_execute_latency_seconds{component="b",topology="wc",topology_id="wc-1"} 0.0015
# HELP PREFIXbolt_executed_total x
# TYPE PREFIXbolt_executed_total counter
PREFIXbolt_executed_total{component="b",topology="wc",topology_id="wc-1"} 20
# HELP PREFIXcomponent_acked_total a
# TYPE PREFIXcomponent_acked_total counter
PREFIXcomponent_acked_total{component="b",kind="bolt",topology="wc",topology_id="wc-1"} 0
PREFIXcomponent_acked_total{component="s",kind="spout",topology="wc",topology_id="wc-1"} 8
# HELP PREFIXspout_failed_by_reason_total sf
# TYPE PREFIXspout_failed_by_reason_total counter
PREFIXspout_failed_by_reason_total{component="s",kind="spout",reason="bolt",topology="wc",topology_id="wc-1"} 1
PREFIXspout_failed_by_reason_total{component="s",kind="spout",reason="shutdown",topology="wc",topology_id="wc-1"} 0
PREFIXspout_failed_by_reason_total{component="s",kind="spout",reason="timeout",topology="wc",topology_id="wc-1"} 1
`
		want = strings.ReplaceAll(want, "PREFIX", prefix)
		for _, line := range missing(newTestCollector(prefix), want) {
			t.Errorf("prefix %s: /metrics has no line %q", prefix, line)
		}
	}
}

// TestHistogramBuckets: a latency counts under the first bound at or
// above its bucket's upper bound, one beyond every bound only in the
// count, and the sum takes each at its bucket's middle.
func TestHistogramBuckets(t *testing.T) {
	c := newTestCollector("gale_")
	for _, line := range missing(c, `
# HELP gale_latency_seconds h
# TYPE gale_latency_seconds histogram
gale_latency_seconds_bucket{topology="wc",le="0.0005"} 0
gale_latency_seconds_bucket{topology="wc",le="0.001"} 1
gale_latency_seconds_bucket{topology="wc",le="0.0025"} 1
gale_latency_seconds_bucket{topology="wc",le="0.005"} 2
gale_latency_seconds_bucket{topology="wc",le="0.01"} 2
gale_latency_seconds_bucket{topology="wc",le="0.025"} 2
gale_latency_seconds_bucket{topology="wc",le="0.05"} 2
gale_latency_seconds_bucket{topology="wc",le="0.1"} 2
gale_latency_seconds_bucket{topology="wc",le="0.25"} 2
gale_latency_seconds_bucket{topology="wc",le="0.5"} 2
gale_latency_seconds_bucket{topology="wc",le="1"} 2
gale_latency_seconds_bucket{topology="wc",le="2.5"} 2
gale_latency_seconds_bucket{topology="wc",le="5"} 2
gale_latency_seconds_bucket{topology="wc",le="10"} 2
gale_latency_seconds_bucket{topology="wc",le="30"} 2
gale_latency_seconds_bucket{topology="wc",le="60"} 2
gale_latency_seconds_bucket{topology="wc",le="+Inf"} 3
gale_latency_seconds_sum{topology="wc"} 121.638432
gale_latency_seconds_count{topology="wc"} 3
`) {
		t.Errorf("/metrics has no line %q", line)
	}
}

// TestOutHold: a counter goes through Hold (the cluster's collector
// keeps its counters at their highest there); a gauge does not.
func TestOutHold(t *testing.T) {
	c := newTestCollector("gale_")
	c.hold = func(_ *prometheus.Desc, v float64, _ []string) float64 { return v + 1000 }
	for _, line := range missing(c, `
# HELP gale_bolt_capacity_ratio c
# TYPE gale_bolt_capacity_ratio gauge
gale_bolt_capacity_ratio{component="b",topology="wc",topology_id="wc-1"} 0.5
# HELP gale_bolt_executed_total x
# TYPE gale_bolt_executed_total counter
gale_bolt_executed_total{component="b",topology="wc",topology_id="wc-1"} 1020
`) {
		t.Errorf("/metrics has no line %q", line)
	}
}

// missing is the lines of want that c's /metrics (Handler) lacks.
func missing(c prometheus.Collector, want string) []string {
	rec := httptest.NewRecorder()
	Handler(c).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	have := map[string]bool{}
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		have[l] = true
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(want), "\n") {
		if !have[l] {
			out = append(out, l)
		}
	}
	return out
}
