package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// record adds n random sentences' worth of work to s.
func record(s *Stats, rng *rand.Rand, n int) {
	for range n {
		s.Sentences.Add(1)
		s.Words.Add(WordsPerSentence)
		switch rng.IntN(20) {
		case 0:
			s.Failed.Add(1)
		case 1:
			s.Timeouts.Add(1)
		case 2:
			s.Unfinished.Add(1)
		default:
			s.Acked.Add(1)
			s.Latency.Record(time.Duration(rng.ExpFloat64() * float64(2*time.Millisecond)))
		}
	}
}

// viaJSON sends snap through JSON, as a worker does over its pipe.
func viaJSON(t *testing.T, snap StatsSnapshot) StatsSnapshot {
	t.Helper()
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var got StatsSnapshot
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestStatsSnapshotJSON(t *testing.T) {
	var s Stats
	s.Sentences.Store(1)
	s.Words.Store(2)
	s.Acked.Store(3)
	s.Failed.Store(4)
	s.Timeouts.Store(5)
	s.Unfinished.Store(6)
	s.Replayed.Store(7)
	s.SpoutsActivated.Store(8)
	s.Latency.Record(time.Millisecond)
	b, err := json.Marshal(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"sentences": 1, "words": 2, "acked": 3, "failed": 4, "timeouts": 5, "unfinished": 6, "replayed": 7, "spouts_activated": 8} {
		if got, ok := doc[k].(float64); !ok || got != want {
			t.Errorf("snapshot JSON %q = %v, want %v", k, doc[k], want)
		}
	}
	if l, ok := doc["latency_buckets"].([]any); !ok || len(l) != numBuckets {
		t.Errorf("snapshot JSON latency_buckets has %d entries, want %d", len(l), numBuckets)
	}
	if len(doc) != 9 {
		t.Errorf("snapshot JSON has %d keys, want 9: %s", len(doc), b)
	}
}

// TestStatsAddDeltaFoldsWorkers folds two workers' successive snapshots, taken while
// they are being added to, into one Stats, and checks the result equals both workers'
// Stats combined.
func TestStatsAddDeltaFoldsWorkers(t *testing.T) {
	seed := testSeed(t)
	var workers [2]Stats
	var launcher Stats
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for {
				select {
				case <-stop:
					return
				default:
					record(&workers[i], rng, 10)
				}
			}
		})
	}
	// The launcher side: for each worker, fold each snapshot's change since the
	// previous one, the first against the zero snapshot.
	var prev [2]StatsSnapshot
	fold := func(i int) {
		t.Helper()
		cur := viaJSON(t, workers[i].Snapshot())
		if err := launcher.AddDelta(cur, prev[i]); err != nil {
			t.Fatalf("worker %d: AddDelta = %v", i, err)
		}
		prev[i] = cur
	}
	for range 20 {
		fold(0)
		fold(1)
	}
	close(stop)
	wg.Wait()
	fold(0)
	fold(1)

	var want Stats
	for i := range workers {
		c := workers[i].load()
		want.Sentences.Add(c.sentences)
		want.Words.Add(c.words)
		want.Acked.Add(c.acked)
		want.Failed.Add(c.failed)
		want.Timeouts.Add(c.timeouts)
		want.Unfinished.Add(c.unfinished)
		want.Latency.Merge(&workers[i].Latency)
	}
	if got, w := launcher.load(), want.load(); got != w {
		t.Errorf("folded counters = %+v, want the workers' sums %+v", got, w)
	}
	if w := want.Sentences.Load(); w < 2 {
		t.Errorf("the workers recorded %d sentences, want some", w)
	}
	if !slices.Equal(launcher.Latency.Counts(), want.Latency.Counts()) {
		t.Errorf("folded latency histogram differs from the workers' merged histograms")
	}
	for _, q := range []float64{0.5, 0.99, 0.999} {
		if got, w := launcher.Latency.Quantile(q), want.Latency.Quantile(q); got != w {
			t.Errorf("folded Quantile(%v) = %v, want %v", q, got, w)
		}
	}
}

func TestStatsAddDeltaTwoSnapshots(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 4))
	var src, dst Stats
	record(&src, rng, 500)
	s1 := src.Snapshot()
	record(&src, rng, 700)
	s2 := src.Snapshot()
	if err := dst.AddDelta(s1, StatsSnapshot{}); err != nil {
		t.Fatalf("AddDelta(s1, zero) = %v", err)
	}
	if err := dst.AddDelta(s2, s1); err != nil {
		t.Fatalf("AddDelta(s2, s1) = %v", err)
	}
	if got, want := dst.Snapshot(), src.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("after folding two snapshots: counters %+v, want %+v (or the latency buckets differ)", dst.load(), src.load())
	}
	for _, q := range []float64{0, 0.5, 0.99, 0.999, 1} {
		if got, want := dst.Latency.Quantile(q), src.Latency.Quantile(q); got != want {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	// An unchanged snapshot adds nothing; nil latency is all zero on both sides.
	if err := dst.AddDelta(s2, s2); err != nil {
		t.Fatal(err)
	}
	if err := dst.AddDelta(StatsSnapshot{Words: 3}, StatsSnapshot{Words: 1}); err != nil {
		t.Fatal(err)
	}
	if got, want := dst.Words.Load(), src.Words.Load()+2; got != want {
		t.Errorf("words after a 1 → 3 delta = %d, want %d", got, want)
	}
}

func TestStatsAddDeltaRejects(t *testing.T) {
	var base Stats
	record(&base, rand.New(rand.NewPCG(testSeed(t), 5)), 100)
	prev := base.Snapshot()
	lat := func(edit func([]int64) []int64) func(*StatsSnapshot) {
		return func(s *StatsSnapshot) { s.Latency = edit(slices.Clone(s.Latency)) }
	}
	b := bucketOf(int64(time.Millisecond))
	prev.Latency[b] += 3 // so that the bucket can go backwards
	tests := []struct {
		name     string
		edit     func(cur *StatsSnapshot) // applied to a copy of prev with every counter + 10
		wantErrs []string
	}{
		{"sentences", func(c *StatsSnapshot) { c.Sentences = prev.Sentences - 1 }, []string{"sentences"}},
		{"words", func(c *StatsSnapshot) { c.Words = 0 }, []string{"words"}},
		{"acked", func(c *StatsSnapshot) { c.Acked = prev.Acked - 1 }, []string{"acked"}},
		{"failed", func(c *StatsSnapshot) { c.Failed = prev.Failed - 1 }, []string{"failed"}},
		{"timeouts", func(c *StatsSnapshot) { c.Timeouts = prev.Timeouts - 1 }, []string{"timeouts"}},
		{"unfinished", func(c *StatsSnapshot) { c.Unfinished = prev.Unfinished - 1 }, []string{"unfinished"}},
		// Both behind the previous snapshot whatever the seed drew (a count
		// of 0 set to 0 would not be).
		{"two fields", func(c *StatsSnapshot) { c.Acked, c.Timeouts = prev.Acked-1, prev.Timeouts-1 }, []string{"acked", "timeouts"}},
		// Every counter goes forward; only the histogram goes back: nothing may be
		// applied, counters included.
		{"latency bucket", lat(func(l []int64) []int64 { l[b]--; return l }),
			[]string{fmt.Sprintf("latency_buckets[%d] %d → %d", b, prev.Latency[b], prev.Latency[b]-1)}},
		{"latency nil after counts", lat(func([]int64) []int64 { return nil }), []string{"latency_buckets["}},
		{"latency too short", lat(func(l []int64) []int64 { return l[:10] }), []string{"current latency_buckets has 10 buckets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := prev
			cur.Sentences += 10
			cur.Words += 10
			cur.Acked += 10
			cur.Failed += 10
			cur.Timeouts += 10
			cur.Unfinished += 10
			cur.Latency = slices.Clone(prev.Latency)
			cur.Latency[0]++
			tt.edit(&cur)

			var dst Stats
			dst.Sentences.Store(1000)
			dst.Acked.Store(7)
			dst.Latency.Record(time.Second)
			before := dst.Snapshot()
			err := dst.AddDelta(cur, prev)
			if err == nil {
				t.Fatal("AddDelta = nil, want an error")
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("AddDelta = %q, want it to name %q", err, want)
				}
			}
			if after := dst.Snapshot(); !reflect.DeepEqual(after, before) {
				t.Errorf("AddDelta failed but changed the stats: counters %+v, want %+v unchanged", dst.load(), before)
			}
		})
	}
	t.Run("previous latency wrong length", func(t *testing.T) {
		var dst Stats
		err := dst.AddDelta(StatsSnapshot{Words: 1}, StatsSnapshot{Latency: []int64{0}})
		if err == nil || !strings.Contains(err.Error(), "previous latency_buckets has 1 buckets") {
			t.Errorf("AddDelta = %v, want an error naming the previous latency_buckets", err)
		}
		if got := dst.Words.Load(); got != 0 {
			t.Errorf("words = %d after a rejected delta, want 0", got)
		}
	})
}

func TestStatsRecordWorkerRSS(t *testing.T) {
	var s Stats
	if got := s.workerRSS(); len(got) != 0 {
		t.Fatalf("workerRSS() of a zero Stats = %v, want none", got)
	}
	var wg sync.WaitGroup
	for _, w := range []int{3, 0, 2} {
		wg.Go(func() {
			for i := range 50 {
				s.RecordWorkerRSS(w, int64(w*1000+i))
			}
		})
	}
	wg.Wait()
	got := s.workerRSS()
	if len(got) != 3 {
		t.Fatalf("workerRSS() has %d workers, want 3", len(got))
	}
	for i, w := range []int{0, 2, 3} {
		if got[i].worker != w {
			t.Errorf("workerRSS()[%d] is worker %d, want %d (worker order)", i, got[i].worker, w)
		}
		if n := len(got[i].samples); n != 50 || got[i].samples[0] != int64(w*1000) || got[i].samples[49] != int64(w*1000+49) {
			t.Errorf("worker %d samples = %d from %d to %d, want 50 in order from %d", w, n, got[i].samples[0], got[i].samples[n-1], w*1000)
		}
	}
	got[0].samples[0] = -1 // a copy
	if s.workerRSS()[0].samples[0] != 0 {
		t.Error("workerRSS() returned the Stats' own slice, want a copy")
	}
}
