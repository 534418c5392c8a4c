package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// TestDemoLine: the live line shows the sentences per second since the
// last tick, never negative when a worker's restart resets its counters.
func TestDemoLine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sample := func(at time.Duration, emitted, acked int64) demoSample {
		return demoSample{at: t0.Add(at), found: true, summary: &nimbuspb.TopologySummary{
			Name: demoTopology, Status: "ACTIVE", Workers: 2, Emitted: emitted, Acked: acked, Failed: 1}}
	}
	tests := []struct {
		name      string
		last, cur demoSample
		want      []string
	}{
		{"first tick", demoSample{}, sample(time.Second, 500, 400), []string{"sentences/s        0", "acked        400", "failed      1", "workers 2", "ACTIVE"}},
		{"rate", sample(time.Second, 500, 400), sample(3*time.Second, 2500, 2400), []string{"sentences/s     1000"}},
		{"counters reset", sample(time.Second, 5000, 400), sample(2*time.Second, 10, 5), []string{"sentences/s        0"}},
		{"not listed", sample(time.Second, 5000, 400), demoSample{at: t0}, []string{"is not listed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeDemoLine(&b, 3*time.Second, tt.last, tt.cur)
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("got %q, want it to contain %q", b.String(), w)
				}
			}
		})
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
