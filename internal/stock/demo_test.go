package stock

import (
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/cli"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// TestDemoRate: the rate is taken between two changes of the counters
// (they move with the supervisors' reports) and kept in between; a reset
// (a worker restarted) is no negative rate.
func TestDemoRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sum := func(emitted int64) *nimbuspb.TopologySummary {
		return &nimbuspb.TopologySummary{Name: demoTopology, Emitted: emitted}
	}
	var r demoRate
	steps := []struct {
		at   time.Duration
		s    *nimbuspb.TopologySummary
		want float64
	}{
		{0, sum(100), 0},           // first seen: no rate yet
		{time.Second, sum(100), 0}, // no report yet
		{2 * time.Second, sum(2100), 1000},
		{3 * time.Second, sum(2100), 1000}, // kept until the next report
		{4 * time.Second, sum(4100), 1000},
		{5 * time.Second, sum(50), 0}, // reset: start again
		{6 * time.Second, sum(550), 500},
		{7 * time.Second, nil, 0},
		{8 * time.Second, sum(0), 0},
		{9 * time.Second, sum(0), 0},      // still nothing: the rate starts later
		{10 * time.Second, sum(300), 300}, // over the last second, not since 8 s

	}
	for i, st := range steps {
		if got := r.update(t0.Add(st.at), st.s); got != st.want {
			t.Errorf("step %d (at %s): rate %v, want %v", i, st.at, got, st.want)
		}
	}
}

// TestDemoLine: the live line shows the rate, acked, failed, the p99,
// the workers running of those asked for and the status, and why the
// topology is pending.
func TestDemoLine(t *testing.T) {
	var b strings.Builder
	writeDemoLine(&b, 3*time.Second, 1234, 2500*time.Microsecond, &nimbuspb.TopologySummary{Name: demoTopology, Status: "ACTIVE",
		PendingReason: "needs 2 slots", Workers: 4, WorkersRunning: 2, Acked: 400, Failed: 1})
	for _, w := range []string{"3s", "sentences/s     1234", "acked        400", "failed      1", "p99    2.5ms", "workers 2/4", "ACTIVE (pending: needs 2 slots)"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("got %q, want it to contain %q", b.String(), w)
		}
	}
	b.Reset()
	writeDemoLine(&b, time.Second, 0, 0, &nimbuspb.TopologySummary{Name: demoTopology, Status: "ACTIVE", Workers: 4})
	if !strings.Contains(b.String(), "p99        -") {
		t.Errorf("got %q, want no p99 (-) before the first ack", b.String())
	}
	b.Reset()
	writeDemoLine(&b, time.Second, 0, 0, nil)
	if !strings.Contains(b.String(), "not listed") {
		t.Errorf("got %q, want the line to say the topology is not listed", b.String())
	}
	for d, want := range map[time.Duration]string{420 * time.Microsecond: "0.42ms", 31 * time.Millisecond / 10: "3.1ms", 250 * time.Millisecond: "250ms", 1250 * time.Millisecond: "1250ms"} {
		if got := latencyText(d); got != want {
			t.Errorf("latencyText(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestDemoLatency: the p99 is that of the trees acked between two
// changes of the listed histogram (the last report), not since the
// start, kept while nothing changes; a restarted worker's counts from
// zero are no negative window.
func TestDemoLatency(t *testing.T) {
	var cum metrics.Latency
	add := func(n int, d time.Duration) *nimbuspb.TopologySummary {
		for range n {
			cum.Record(d)
		}
		h := &nimbuspb.LatencyHistogram{}
		h.Buckets, h.Counts = cum.Sparse()
		return &nimbuspb.TopologySummary{Name: demoTopology, CompleteLatency: h}
	}
	near := func(got, want time.Duration) bool { return got >= want-want/16 && got <= want+want/16 }
	var d demoLatency
	if got := d.update(&nimbuspb.TopologySummary{Name: demoTopology}); got != 0 {
		t.Errorf("before any ack: p99 %v, want none", got)
	}
	if got := d.update(add(1000, time.Millisecond)); !near(got, time.Millisecond) {
		t.Errorf("first report: p99 %v, want about 1ms", got)
	}
	// A slow second: 100 trees at 200 ms. Since the start, the p99 would
	// be 1 ms still.
	if got := d.update(add(100, 200*time.Millisecond)); !near(got, 200*time.Millisecond) {
		t.Errorf("a slow second: p99 %v, want about 200ms", got)
	}
	if got := d.update(add(0, 0)); !near(got, 200*time.Millisecond) {
		t.Errorf("no report since: p99 %v, want the last, about 200ms", got)
	}
	if got := d.update(add(1000, 2*time.Millisecond)); !near(got, 2*time.Millisecond) {
		t.Errorf("a quick second again: p99 %v, want about 2ms", got)
	}
	cum = metrics.Latency{} // the worker restarted
	if got := d.update(add(10, 5*time.Millisecond)); got != 0 {
		t.Errorf("after a restart: p99 %v, want none until the next report", got)
	}
	if got := d.update(add(500, 3*time.Millisecond)); !near(got, 3*time.Millisecond) {
		t.Errorf("the report after the restart: p99 %v, want about 3ms", got)
	}
}

// TestDemoNeedsWordCount: a program without the word count cannot run
// the demo, and says why.
func TestDemoNeedsWordCount(t *testing.T) {
	var out, errOut strings.Builder
	code := cli.Run([]string{"demo"}, &out, &errOut, Options(cli.Options{Name: "clicks"}))
	if code != exitRuntime || !strings.Contains(errOut.String(), "wordcount") || !strings.Contains(errOut.String(), "clicks has no topologies") {
		t.Errorf("exit %d, stderr %q: want 1 naming wordcount and the program's topologies", code, errOut.String())
	}
}
