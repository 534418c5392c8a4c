package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestCompareStats: the runs alternate in ABBA order, each pair's ratio
// is the throughput with the metrics over that without, and the median
// is over the pairs. The runner on the fake clock emits a sentence every
// 2 ms with the metrics and every 1 ms without, except in the second
// pair, where the machine "slowed down" both.
func TestCompareStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var order []bool // stats on, per run
		runner := func(ctx context.Context, opts Options, stats *Stats) error {
			on := !opts.StatsOff
			order = append(order, on)
			every := time.Millisecond
			if on {
				every *= 2
			}
			if len(order) == 3 || len(order) == 4 {
				every *= 4
			}
			return pacedEvery(every)(ctx, opts, stats)
		}
		opts := fakeClockOptions()
		opts.Duration = time.Second
		var out bytes.Buffer
		c, err := CompareStats(t.Context(), opts, runner, 3, &out, nil)
		if err != nil {
			t.Fatalf("CompareStats: %v", err)
		}
		if want := []bool{true, false, false, true, true, false}; !slices.Equal(order, want) {
			t.Errorf("runs with stats %v, want %v (ABBA)", order, want)
		}
		var doc StatsComparison
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Pairs) != 3 {
			t.Fatalf("JSON %q: %v, want 3 pairs", out.String(), err)
		}
		for i, p := range doc.Pairs {
			if math.Abs(p.Ratio-0.5) > 0.01 {
				t.Errorf("pair %d: ratio %.3f (%v/%v), want 0.5", i+1, p.Ratio, p.On.SentencesPerSec, p.Off.SentencesPerSec)
			}
		}
		if math.Abs(c.MedianRatio-0.5) > 0.01 || math.Abs(c.MedianOffPerSec-1000) > 2 || math.Abs(c.MedianOnPerSec-500) > 2 {
			t.Errorf("medians: ratio %.3f, on %v/s, off %v/s; want 0.5, 500, 1000", c.MedianRatio, c.MedianOnPerSec, c.MedianOffPerSec)
		}
	})
}

// TestCompareStatsStopsOnFailure: a failed run ends the comparison with
// its error, naming the pair, and what was measured before it is kept.
func TestCompareStatsStopsOnFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runs := 0
		boom := errors.New("boom")
		runner := func(ctx context.Context, opts Options, stats *Stats) error {
			if runs++; runs == 3 {
				return boom
			}
			return pacedEvery(time.Millisecond)(ctx, opts, stats)
		}
		opts := fakeClockOptions()
		opts.Duration = time.Second
		c, err := CompareStats(t.Context(), opts, runner, 4, &bytes.Buffer{}, nil)
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "pair 2") {
			t.Errorf("error %v, want boom in pair 2", err)
		}
		if c == nil || len(c.Pairs) != 1 || !strings.Contains(c.Error, "boom") {
			t.Errorf("comparison %+v, want the first pair and the error", c)
		}
	})
	if _, err := CompareStats(t.Context(), fakeClockOptions(), nil, 0, &bytes.Buffer{}, nil); err == nil {
		t.Error("0 pairs: no error")
	}
}

// pacedEvery is paced with no start-up, a sentence every d.
func pacedEvery(d time.Duration) Runner {
	return func(ctx context.Context, opts Options, stats *Stats) error {
		stats.SpoutActivated(1)
		tk := time.NewTicker(d)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tk.C:
				stats.Sentences.Add(1)
				stats.Words.Add(WordsPerSentence)
				stats.Acked.Add(1)
			}
		}
	}
}

// TestStatsComparisonMedians: the medians are over the pairs, the mean
// of the middle two for an even count, for the throughput and CPU ratios.
func TestStatsComparisonMedians(t *testing.T) {
	c := &StatsComparison{}
	for _, r := range [][2]float64{{0.9, 1.2}, {1.1, 0.8}, {1.0, 1.0}, {0.5, 3}} {
		c.Pairs = append(c.Pairs, StatsPair{Ratio: r[0], CPURatio: r[1]})
	}
	c.summarise()
	if c.MedianRatio != 0.95 || c.MedianCPURatio != 1.1 {
		t.Errorf("medians %v, %v; want 0.95, 1.1", c.MedianRatio, c.MedianCPURatio)
	}
}
