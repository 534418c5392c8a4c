package cli

import (
	"strings"
	"testing"
	"time"

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

// TestDemoLine: the live line shows the rate, acked, failed, workers and
// status, and why the topology is pending.
func TestDemoLine(t *testing.T) {
	var b strings.Builder
	writeDemoLine(&b, 3*time.Second, 1234, &nimbuspb.TopologySummary{Name: demoTopology, Status: "ACTIVE",
		PendingReason: "needs 2 slots", Workers: 2, Acked: 400, Failed: 1})
	for _, w := range []string{"3s", "sentences/s     1234", "acked        400", "failed      1", "workers 2", "ACTIVE (pending: needs 2 slots)"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("got %q, want it to contain %q", b.String(), w)
		}
	}
	b.Reset()
	writeDemoLine(&b, time.Second, 0, nil)
	if !strings.Contains(b.String(), "not listed") {
		t.Errorf("got %q, want it to say the topology is not listed", b.String())
	}
}

// TestDemoNeedsWordCount: a program without the word count cannot run
// the demo, and says why.
func TestDemoNeedsWordCount(t *testing.T) {
	var out, errOut strings.Builder
	code := Run([]string{"demo"}, &out, &errOut, Options{Name: "clicks"})
	if code != exitRuntime || !strings.Contains(errOut.String(), "wordcount") || !strings.Contains(errOut.String(), "clicks has no topologies") {
		t.Errorf("exit %d, stderr %q: want 1 naming wordcount and the program's topologies", code, errOut.String())
	}
}
