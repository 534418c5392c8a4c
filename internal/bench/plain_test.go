package bench

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func runPlainFor(t *testing.T, opts Options, d time.Duration) (*plain, *Stats) {
	t.Helper()
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var stats Stats
	p := newPlain(opts, &stats)
	p.run(ctx)
	return p, &stats
}

func checkExactCounts(t *testing.T, p *plain, stats *Stats) {
	t.Helper()
	sentences, words := stats.Sentences.Load(), stats.Words.Load()
	if sentences == 0 {
		t.Fatal("no sentences generated")
	}
	if words != WordsPerSentence*sentences {
		t.Errorf("words = %d, want %d × sentences = %d", words, WordsPerSentence, WordsPerSentence*sentences)
	}
	inVocab := make(map[string]bool, VocabularySize)
	for _, w := range vocab {
		inVocab[w] = true
	}
	var sum int64
	for w, c := range p.counts {
		if !inVocab[w] {
			t.Errorf("counted word %q is not in the vocabulary", w)
		}
		sum += c
	}
	if sum != words {
		t.Errorf("sum of the counter's map = %d, want Stats.Words = %d", sum, words)
	}
}

func TestPlainNoAck(t *testing.T) {
	opts := DefaultOptions()
	opts.Mode, opts.Runner = ModeNoAck, RunnerPlain
	p, stats := runPlainFor(t, opts, 200*time.Millisecond)
	checkExactCounts(t, p, stats)
	if a, n := stats.Acked.Load(), stats.Latency.Count(); a != 0 || n != 0 {
		t.Errorf("noack: acked = %d, latency count = %d; want 0, 0", a, n)
	}
	t.Logf("%d sentences in 200ms", stats.Sentences.Load())
}

func TestPlainAck(t *testing.T) {
	opts := DefaultOptions()
	opts.Runner = RunnerPlain
	p, stats := runPlainFor(t, opts, 200*time.Millisecond)
	checkExactCounts(t, p, stats)
	s := stats.Sentences.Load()
	if a, n := stats.Acked.Load(), stats.Latency.Count(); a != s || n != s {
		t.Errorf("ack: acked = %d, latency count = %d; want both = sentences = %d", a, n, s)
	}
	if p99 := stats.Latency.Quantile(0.99); p99 <= 0 || p99 > time.Second {
		t.Errorf("ack: p99 latency = %v, want in (0, 1s]", p99)
	}
}

// TestPlainRate paces the generator on testing/synctest's clock: exactly
// the emits the rate schedules in the run, the run ending when it is due
// to, and partial batches handed over while the generator waits.
func TestPlainRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := DefaultOptions()
		opts.Runner, opts.Rate = RunnerPlain, 2000
		start := time.Now()
		p, stats := runPlainFor(t, opts, 300*time.Millisecond)
		if took := time.Since(start); took != 300*time.Millisecond {
			t.Errorf("a 300ms run took %v, want it to stop when its ctx is done", took)
		}
		checkExactCounts(t, p, stats)
		// Emits are due at 0, 0.5ms, …: 600 before 300ms, and the one due
		// at 300ms as the run ends may go either way.
		if got := stats.Sentences.Load(); got < 600 || got > 601 {
			t.Errorf("at --rate 2000 for 300ms: %d sentences, want 600 (or 601)", got)
		}
		// The generator hands over partial batches while it waits: a batch
		// of 100 takes 50ms to fill, and a sentence waiting for its batch
		// would show that as latency.
		if worst := stats.Latency.Quantile(1); worst > time.Millisecond {
			t.Errorf("at --rate 2000: slowest latency %v, want < 1ms (partial batches handed over)", worst)
		}
	})
}

func TestPlainCountDelay(t *testing.T) {
	opts := DefaultOptions()
	opts.Mode, opts.Runner, opts.CountDelay = ModeNoAck, RunnerPlain, 20*time.Microsecond
	p, stats := runPlainFor(t, opts, 200*time.Millisecond)
	checkExactCounts(t, p, stats)
	// 160µs of busy work per sentence caps the pipeline near 1250 sentences in 200ms,
	// plus what sits in the channels when it stops.
	if got := stats.Sentences.Load(); got > 4000 {
		t.Errorf("with --count-delay 20µs: %d sentences in 200ms, want the counter to throttle the generator (≤ 4000)", got)
	}
}

func TestPlainCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stats Stats
	opts := DefaultOptions()
	opts.Runner = RunnerPlain
	if err := RunPlain(ctx, opts, &stats); err != nil {
		t.Fatalf("RunPlain with a done ctx = %v, want nil", err)
	}
	if s, w := stats.Sentences.Load(), stats.Words.Load(); w != WordsPerSentence*s {
		t.Errorf("words = %d, sentences = %d; want words = 8 × sentences", w, s)
	}
}

func TestRunPlainValidates(t *testing.T) {
	opts := DefaultOptions()
	opts.Spouts = 0
	if err := RunPlain(t.Context(), opts, &Stats{}); err == nil {
		t.Error("RunPlain with --spouts 0 = nil, want a validation error")
	}
}
