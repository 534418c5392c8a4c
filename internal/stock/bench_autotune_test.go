package stock

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchAutotuneJSON runs a tiny bench autotune and checks the JSON a
// user reads: the sweep in order, the best, and the tuned run with its
// trace and ratios.
func TestBenchAutotuneJSON(t *testing.T) {
	code, stdout, _ := runGale(t, "bench", "autotune", "--json", "--concurrency", "4", "--latency", "2ms",
		"--timeout", "1s", "--sweep", "1,8", "--warmup", "200ms", "--duration", "500ms",
		"--starts", "3", "--tune-for", "2500ms", "--tail", "1s")
	if code != exitOK {
		t.Fatalf("exit code: got %d, want %d", code, exitOK)
	}
	var r autotuneReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON report: %v\n%s", err, stdout)
	}
	if len(r.Sweep) != 2 || r.Sweep[0].MaxPending != 1 || r.Sweep[1].MaxPending != 8 {
		t.Fatalf("sweep: got %+v, want max pending 1 then 8", r.Sweep)
	}
	if r.Best == nil || r.Knee == nil || r.Best.TreesPerSec <= 0 {
		t.Fatalf("best %+v, knee %+v: want both, the best with trees acked", r.Best, r.Knee)
	}
	if len(r.Tuned) != 1 {
		t.Fatalf("tuned: got %d runs, want 1", len(r.Tuned))
	}
	tu := r.Tuned[0]
	// The trace is sampled each second from the start, at 3.
	if tu.MaxPending != 3 || len(tu.Trace) < 2 || tu.Trace[0] != 3 || tu.Final < 1 || tu.Final < tu.TailMin || tu.Final > tu.TailMax {
		t.Fatalf("tuned run: got %+v, want one from 3 with a trace starting at 3 and a final value within its tail's range", tu)
	}
	if tu.Reference == nil || tu.Reference.MaxPending != r.Best.MaxPending {
		t.Errorf("reference: got %+v, want the best fixed value %d run again", tu.Reference, r.Best.MaxPending)
	}
	if got, want := tu.ValueRatio, float64(tu.Final)/float64(r.Best.MaxPending); got != want {
		t.Errorf("value ratio: got %v, want %v", got, want)
	}
	if r.CapacityPerSec != 2000 || r.MessageTimeoutSecs != 1 || r.IntervalSecs != 1 {
		t.Errorf("header: got capacity %v, timeout %d, interval %d; want 2000, 1, 1", r.CapacityPerSec, r.MessageTimeoutSecs, r.IntervalSecs)
	}
}

func TestBenchAutotuneRejectsBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "1500ms"}, "--timeout must be whole seconds"},
		{[]string{"--interval", "0s"}, "--interval must be whole seconds"},
		{[]string{"--sweep", "1,x"}, `want comma-separated whole numbers, got "x"`},
		{[]string{"--sweep", "0"}, "values ≥ 1, got 0"},
		{[]string{"--tail", "2m"}, "--tail must be > 0 and at most --tune-for"},
		{[]string{"--concurrency", "0"}, "--concurrency must be ≥ 1"},
	} {
		code, _, stderr := runGale(t, append([]string{"bench", "autotune"}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: got exit %d, stderr %q; want exit %d naming %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}

func TestAutotuneReportAnalyse(t *testing.T) {
	r := autotuneReport{
		Sweep: []autotuneRun{
			{MaxPending: 1, TreesPerSec: 100}, {MaxPending: 64, TreesPerSec: 5900},
			{MaxPending: 256, TreesPerSec: 6000}, {MaxPending: 100000, TreesPerSec: 0},
		},
		Tuned: []tunedRun{{Final: 128, autotuneRun: autotuneRun{TreesPerSec: 5700}, Reference: &autotuneRun{MaxPending: 256, TreesPerSec: 5000}}},
	}
	r.analyse()
	if r.Best.MaxPending != 256 || r.Knee.MaxPending != 64 {
		t.Fatalf("best %d, knee %d: want 256 (the most trees a second) and 64 (the least within 5%%)", r.Best.MaxPending, r.Knee.MaxPending)
	}
	tu := r.Tuned[0]
	if tu.ValueRatio != 0.5 || tu.KneeRatio != 2 || tu.ThroughputRatio != 0.95 || tu.ReferenceRatio != 1.14 {
		t.Errorf("ratios: got value %v, knee %v, throughput %v, reference %v; want 0.5, 2, 0.95, 1.14",
			tu.ValueRatio, tu.KneeRatio, tu.ThroughputRatio, tu.ReferenceRatio)
	}
}
