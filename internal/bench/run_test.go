package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestRunPlainJSON(t *testing.T) {
	opts := DefaultOptions()
	opts.Runner, opts.Duration, opts.JSON = RunnerPlain, 300*time.Millisecond, true
	var out bytes.Buffer
	r, err := Run(t.Context(), opts, PlainRunner, &out, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	dec := json.NewDecoder(&out)
	var doc Report
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, out.String())
	}
	if dec.More() {
		t.Errorf("stdout has more than one JSON document:\n%s", out.String())
	}
	if doc.Words != WordsPerSentence*doc.Sentences || doc.Sentences == 0 {
		t.Errorf("report words = %d, sentences = %d; want words = 8 × sentences > 0", doc.Words, doc.Sentences)
	}
	if doc.Acked != doc.Sentences || doc.LatencyMS == nil {
		t.Errorf("ack report: acked = %d of %d sentences, latency %+v; want all acked, latency set", doc.Acked, doc.Sentences, doc.LatencyMS)
	}
	if doc.DurationS < 0.3 {
		t.Errorf("duration_s = %v, want ≥ 0.3 (--duration)", doc.DurationS)
	}
	if doc.SentencesPerSec <= 0 || doc.CPUSeconds <= 0 || doc.MaxRSSBytes <= 0 {
		t.Errorf("sentences_per_sec %v, cpu_seconds %v, max_rss_bytes %d; want all > 0",
			doc.SentencesPerSec, doc.CPUSeconds, doc.MaxRSSBytes)
	}
	if r.Sentences != doc.Sentences {
		t.Errorf("returned report has %d sentences, printed one %d", r.Sentences, doc.Sentences)
	}
}

func TestRunLiveAndTable(t *testing.T) {
	opts := DefaultOptions()
	opts.Runner, opts.Duration = RunnerPlain, 1200*time.Millisecond
	var out, live bytes.Buffer
	r, err := Run(t.Context(), opts, PlainRunner, &out, &live)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(live.String(), "1s  sentences/s ") || !strings.Contains(live.String(), "p99 ") {
		t.Errorf("live view = %q, want a line for 1s with sentences/s and p99", live.String())
	}
	if !strings.Contains(out.String(), "sentences") || strings.HasPrefix(out.String(), "{") {
		t.Errorf("text mode output = %q, want a table", out.String())
	}
	if len(r.RSSSamplesBytes) == 0 {
		t.Errorf("rss_samples_bytes is empty after a 1.2s run, want one sample per second")
	}
}

// fakeClockOptions are options for a Run on testing/synctest's clock: no
// pretouch or GC floor (work the fake clock has no need for).
func fakeClockOptions() Options {
	opts := DefaultOptions()
	opts.JSON, opts.HeapPretouch, opts.GCFloorMB = true, false, 0
	return opts
}

// TestRunRunnerError: a runner that fails at once ends the run at once,
// with its error, and the report still says what happened. On the fake
// clock "at once" is exact: no time passes unless Run waits.
func TestRunRunnerError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		opts := fakeClockOptions()
		opts.Duration = time.Second
		failing := func(ctx context.Context, opts Options, stats *Stats) error { return boom }
		start := time.Now()
		var out bytes.Buffer
		r, err := Run(t.Context(), opts, failing, &out, nil)
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "gale runner") {
			t.Errorf("Run with a failing runner = %v, want it to wrap %v and name the runner", err, boom)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("Run took %v after the runner failed at once, want it to return without waiting", took)
		}
		var doc Report
		if jerr := json.Unmarshal(out.Bytes(), &doc); jerr != nil || r == nil || !strings.Contains(doc.Error, "boom") {
			t.Errorf("report %q (returned %v, decode error %v), want one whose error names the runner's", out.String(), r, jerr)
		}
	})
}

// paced is a runner for the fake clock: after startup it activates its one
// spout, then emits a sentence (acked at once) every millisecond until ctx
// is done; then it returns fail.
func paced(startup time.Duration, fail error) Runner {
	return func(ctx context.Context, opts Options, stats *Stats) error {
		select {
		case <-time.After(startup):
		case <-ctx.Done():
			return fail
		}
		stats.SpoutActivated(1)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return fail
			case <-tk.C:
				stats.Sentences.Add(1)
				stats.Words.Add(WordsPerSentence)
				stats.Acked.Add(1)
			}
		}
	}
}

// TestRunMeasuresFromActivation: the window opens when the spouts are
// active, not when the runner starts, however long start-up takes (worker
// processes on a busy machine took seconds, and a 3 s run measured
// nothing).
func TestRunMeasuresFromActivation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := fakeClockOptions()
		opts.Duration = time.Second
		start := time.Now()
		r, err := Run(t.Context(), opts, paced(5*time.Second, nil), &bytes.Buffer{}, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if took := time.Since(start); took != 6*time.Second {
			t.Errorf("Run took %v, want 6s: 5s of start-up, then the 1s --duration", took)
		}
		if r.StartupS != 5 || r.DurationS != 1 {
			t.Errorf("startup_s %v, duration_s %v; want 5 and 1", r.StartupS, r.DurationS)
		}
		// A sentence a millisecond for the second measured: 1,000, give or
		// take the one due as the window closes.
		if r.Sentences < 999 || r.Sentences > 1001 || r.SentencesPerSec < 999 || r.SentencesPerSec > 1001 {
			t.Errorf("sentences %d at %v/s, want 1,000 at 1,000/s", r.Sentences, r.SentencesPerSec)
		}
	})
}

// TestRunReportsFailure: a runner that fails after it ran (a worker died)
// leaves the report of what was measured, with the failure in it, and Run
// returns the failure too.
func TestRunReportsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		died := errors.New("worker 1 exited: signal: killed")
		opts := fakeClockOptions()
		opts.Duration = time.Second
		var out bytes.Buffer
		r, err := Run(t.Context(), opts, paced(0, died), &out, nil)
		if !errors.Is(err, died) {
			t.Fatalf("Run = %v, want the runner's %v", err, died)
		}
		var doc Report
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("stdout is not the JSON report: %v\n%s", err, out.String())
		}
		if !strings.Contains(doc.Error, died.Error()) || doc.Sentences < 999 || doc.Acked != doc.Sentences || doc.Lost != 0 {
			t.Errorf("report: error %q, sentences %d, acked %d, lost %d; want the failure named, 1,000 sentences all acked, none lost",
				doc.Error, doc.Sentences, doc.Acked, doc.Lost)
		}
		if r == nil || r.Error != doc.Error {
			t.Errorf("returned report %+v, want the printed one", r)
		}
	})
}

// TestRunNothingEmitted: a run that emitted nothing is an error that says
// so and why it may be, not a report of zeros.
func TestRunNothingEmitted(t *testing.T) {
	idle := func(ctx context.Context, opts Options, stats *Stats) error {
		stats.SpoutActivated(1)
		<-ctx.Done()
		return nil
	}
	never := func(ctx context.Context, opts Options, stats *Stats) error {
		<-ctx.Done()
		return nil
	}
	tests := []struct {
		name    string
		runner  Runner
		cancel  time.Duration // the parent ctx's deadline; 0: none
		wantErr []string
		took    time.Duration
	}{
		{name: "active, emitting nothing", runner: idle, took: time.Second,
			wantErr: []string{"no sentence was emitted", "active for 1s", "stalled"}},
		{name: "never active", runner: never, took: activateTimeout,
			wantErr: []string{"no sentence was emitted", "not all active within 2m0s", "0 of 1"}},
		{name: "interrupted during start-up", runner: never, cancel: 3 * time.Second, took: 3 * time.Second,
			wantErr: []string{"no sentence was emitted", "interrupted before the spouts were active"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := fakeClockOptions()
				opts.Duration = time.Second
				ctx := t.Context()
				if tt.cancel > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.cancel)
					defer cancel()
				}
				start := time.Now()
				var out bytes.Buffer
				_, err := Run(ctx, opts, tt.runner, &out, nil)
				if !errors.Is(err, ErrNothingEmitted) {
					t.Fatalf("Run = %v, want %v", err, ErrNothingEmitted)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if took := time.Since(start); took != tt.took {
					t.Errorf("Run took %v, want %v", took, tt.took)
				}
				var doc Report
				if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Error == "" {
					t.Errorf("stdout %q (%v): want the report, with the error", out.String(), err)
				}
			})
		})
	}
}

// TestRunParentCancelled: a run whose parent ctx is done (Ctrl-C) ends the
// window then and reports what it measured.
func TestRunParentCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := fakeClockOptions()
		opts.Duration = time.Minute
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		r, err := Run(ctx, opts, paced(0, nil), &bytes.Buffer{}, nil)
		if err != nil {
			t.Fatalf("Run cancelled by its parent ctx = %v, want a report", err)
		}
		if r.DurationS != 0.5 || r.Sentences < 499 || r.Sentences > 501 {
			t.Errorf("duration_s %v, sentences %d; want 0.5 (the parent's deadline) and 500", r.DurationS, r.Sentences)
		}
	})
}

func TestRunRejects(t *testing.T) {
	bad := DefaultOptions()
	bad.Mode = "x"
	if _, err := Run(t.Context(), bad, PlainRunner, &bytes.Buffer{}, nil); err == nil || !strings.Contains(err.Error(), "--mode") {
		t.Errorf("Run with --mode x = %v, want an error naming --mode", err)
	}
	if _, err := Run(t.Context(), DefaultOptions(), nil, &bytes.Buffer{}, nil); err == nil {
		t.Error("Run with a nil runner = nil, want an error")
	}
}

// TestRunAppliesWorkerMemory: a run collects as a Gale worker would (the
// runner sees the GC percent and memory limit of the options), and the
// process's own settings are back afterwards.
func TestRunAppliesWorkerMemory(t *testing.T) {
	beforeLimit := debug.SetMemoryLimit(-1)
	beforePercent := debug.SetGCPercent(100)
	debug.SetGCPercent(beforePercent)

	opts := DefaultOptions()
	opts.Runner, opts.Mode, opts.Duration = RunnerPlain, ModeNoAck, 50*time.Millisecond
	opts.GOGC, opts.HeapMB = GOGCOff, 100
	var gotLimit int64
	var gotPercent int
	probe := func(ctx context.Context, opts Options, stats *Stats) error {
		gotLimit = debug.SetMemoryLimit(-1) // -1 reads without changing
		gotPercent = debug.SetGCPercent(GOGCOff)
		stats.SpoutActivated(1)
		stats.Sentences.Add(1)
		<-ctx.Done()
		return nil
	}
	if _, err := Run(t.Context(), opts, probe, &bytes.Buffer{}, nil); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if gotLimit != 100<<20 || gotPercent != GOGCOff {
		t.Errorf("during the run: memory limit %d, GC percent %d; want %d (--heap-mb 100) and %d (off)", gotLimit, gotPercent, 100<<20, GOGCOff)
	}
	afterPercent := debug.SetGCPercent(beforePercent)
	if after := debug.SetMemoryLimit(-1); after != beforeLimit || afterPercent != beforePercent {
		t.Errorf("after the run: memory limit %d, GC percent %d; want them restored to %d and %d", after, afterPercent, beforeLimit, beforePercent)
	}
}

// The report's per-second p99 covers only the trees completed in that
// second, and its after-warm-up latency only those completed after the
// warm-up: a slow start keeps its own values and does not hide the steady
// state, where the whole run's p99 mixes them.
func TestReportLatencyBySecondAndAfterWarmup(t *testing.T) {
	opts := DefaultOptions()
	var stats Stats
	start := time.Now()
	m := &monitor{opts: opts, stats: &stats, start: start}
	m.prevAt = start
	second := func(n int, lat time.Duration) {
		for range 1000 {
			stats.Latency.Record(lat)
		}
		m.sample(start.Add(time.Duration(n) * time.Second))
	}
	second(1, 20*time.Millisecond) // the warm-up: warmupSamples (2) slow seconds
	second(2, 20*time.Millisecond)
	second(3, time.Millisecond)
	second(4, time.Millisecond)
	m.sample(start.Add(5 * time.Second)) // nothing completed

	r := NewReport(opts, &stats, Measurements{Window: 5 * time.Second, P99PerSecond: m.p99s, WarmupLatency: m.warmHist})
	got := r.LatencyP99MSPerSecond
	near := func(v, want float64) bool { return v >= want*0.9 && v <= want*1.1 }
	if len(got) != 5 || !near(got[0], 20) || !near(got[1], 20) || !near(got[2], 1) || !near(got[3], 1) || got[4] != 0 {
		t.Errorf("latency_p99_ms_per_second = %v, want ≈ [20 20 1 1 0]", got)
	}
	if !near(r.LatencyMS.P99, 20) {
		t.Errorf("whole-run p99 = %v ms, want ≈ 20 (half the trees took 20 ms)", r.LatencyMS.P99)
	}
	if l := r.LatencyAfterWarmupMS; l == nil || !near(l.P99, 1) || !near(l.P50, 1) {
		t.Errorf("latency_after_warmup_ms = %+v, want p50 and p99 ≈ 1 ms (the trees after the first 2 s)", l)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil || !strings.Contains(table.String(), "(after 2s warm-up)") {
		t.Errorf("table = %q (err %v), want a latency row after the warm-up", table.String(), err)
	}

	for _, n := range []int{1, warmupSamples} {
		short := NewReport(opts, &stats, Measurements{Window: time.Duration(n) * time.Second, P99PerSecond: m.p99s[:n], WarmupLatency: m.warmHist})
		if short.LatencyAfterWarmupMS != nil {
			t.Errorf("a run of %d samples, no longer than the warm-up, has latency_after_warmup_ms %+v, want none", n, short.LatencyAfterWarmupMS)
		}
	}
	opts.Mode = ModeNoAck
	if r := NewReport(opts, &stats, Measurements{Window: time.Second, WarmupLatency: m.warmHist}); r.LatencyP99MSPerSecond != nil || r.LatencyAfterWarmupMS != nil {
		t.Errorf("noack report has latency_p99_ms_per_second %v, latency_after_warmup_ms %+v; want neither",
			r.LatencyP99MSPerSecond, r.LatencyAfterWarmupMS)
	}
}
