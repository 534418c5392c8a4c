package wordcount_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/examples/wordcount"
	"github.com/gale-stream/gale/galetest"
)

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// sentences makes n random sentences over a small vocabulary, some with
// leading, trailing or doubled spaces, and counts their words plainly.
func sentences(rng *rand.Rand, n int) ([]string, map[string]int64) {
	vocab := make([]string, 60)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%d", i)
	}
	vocab = append(vocab, "a", "the", "ünïcode", "x-y")
	out := make([]string, n)
	want := map[string]int64{}
	for i := range out {
		var b strings.Builder
		for j := range rng.IntN(9) {
			if j > 0 || rng.IntN(10) == 0 {
				b.WriteByte(' ')
			}
			if rng.IntN(20) == 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[rng.IntN(len(vocab))])
		}
		if rng.IntN(10) == 0 {
			b.WriteByte(' ')
		}
		out[i] = b.String()
		for _, w := range strings.Fields(out[i]) {
			want[w]++
		}
	}
	return out, want
}

// finalCounts collects the counters' final counts and notes any word
// counted by two tasks (the fields grouping must prevent that).
type finalCounts struct {
	mu     sync.Mutex
	counts map[string]int64
	owner  map[string]int
	errs   []string
}

func newFinalCounts() *finalCounts {
	return &finalCounts{counts: map[string]int64{}, owner: map[string]int{}}
}

func (f *finalCounts) onCleanup(task int, counts map[string]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w, n := range counts {
		if o, ok := f.owner[w]; ok && o != task {
			f.errs = append(f.errs, fmt.Sprintf("word %q counted by tasks %d and %d", w, o, task))
		}
		f.owner[w] = task
		f.counts[w] += n
	}
}

func complete(t *testing.T, topo *gale.Topology, conf ...gale.Config) *galetest.Result {
	t.Helper()
	c := gale.Config{}
	for _, x := range conf {
		maps.Copy(c, x)
	}
	res, err := galetest.Complete(context.Background(), topo, galetest.Options{Logger: testLogger(t), Timeout: 30 * time.Second, Config: c})
	if err != nil {
		t.Fatalf("galetest.Complete: %v", err)
	}
	return res
}

func checkAckedOnce(t *testing.T, res *galetest.Result, n int) {
	t.Helper()
	var got []int
	for _, id := range res.Acked("sentences") {
		got = append(got, id.(int))
	}
	slices.Sort(got)
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(got, want) {
		t.Errorf("acked %d ids, want each of the %d sentences exactly once", len(got), n)
	}
}

// TestExactCounts: with acking and no failures, the final counts equal a
// plain count, each word is counted by one task, and every sentence is
// acked once; also when the bolts reuse the tuples they are done with.
func TestExactCounts(t *testing.T) {
	seed := testSeed(t)
	tests := []struct {
		splitters, counters int
		reuse               bool
	}{{1, 1, false}, {2, 3, false}, {4, 2, false}, {3, 5, false}, {1, 1, true}, {3, 2, true}}
	for i, tc := range tests {
		t.Run(fmt.Sprintf("split %d count %d reuse %v", tc.splitters, tc.counters, tc.reuse), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			input, want := sentences(rng, 1200)
			final := newFinalCounts()
			topo, err := wordcount.Topology(input, tc.splitters, tc.counters, final.onCleanup)
			if err != nil {
				t.Fatal(err)
			}
			res := complete(t, topo, gale.Config{gale.TopologyTupleReuse: tc.reuse})
			checkAckedOnce(t, res, len(input))
			if f := res.Failed("sentences"); len(f) > 0 {
				t.Errorf("%d sentences failed, first %v; want none", len(f), f[0])
			}
			final.mu.Lock()
			defer final.mu.Unlock()
			for _, e := range final.errs {
				t.Error(e)
			}
			for w, n := range want {
				if final.counts[w] != n {
					t.Errorf("count of %q = %d, want %d", w, final.counts[w], n)
				}
			}
			if len(final.counts) != len(want) {
				t.Errorf("counted %d distinct words, want %d", len(final.counts), len(want))
			}
			// The last count emitted for each word is its total.
			last := map[string]int64{}
			for _, v := range res.Emitted("count") {
				last[v[0].(string)] = max(last[v[0].(string)], v[1].(int64))
			}
			for w, n := range want {
				if last[w] != n {
					t.Errorf("highest count emitted for %q = %d, want %d", w, last[w], n)
				}
			}
		})
	}
}

var errFlaky = errors.New("flaky")

// flaky passes words on, failing about one in ten with errFlaky.
type flaky struct {
	gale.BaseBasicBolt
	seed uint64
	rng  *rand.Rand
}

func (*flaky) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word") }

func (f *flaky) Prepare(tc *gale.TopologyContext) error {
	f.rng = rand.New(rand.NewPCG(f.seed, uint64(tc.TaskID())))
	return nil
}

func (f *flaky) Execute(t *gale.Tuple, c *gale.BasicCollector) error {
	if f.rng.IntN(10) == 0 {
		return fmt.Errorf("word %q: %w", t.GetString(0), errFlaky)
	}
	_, err := c.Emit(t.Value(0))
	return err
}

// TestReplayAfterFailures: a bolt fails 10% of the words; the spout
// replays failed sentences until every one is acked (each exactly once),
// and no count falls below the exact one (at-least-once).
func TestReplayAfterFailures(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 99))
	input, want := sentences(rng, 1000)
	final := newFinalCounts()
	b := gale.NewTopologyBuilder()
	b.SetSpout("sentences", func() gale.Spout { return &wordcount.SentenceSpout{Sentences: input} }, 1)
	b.SetBolt("split", func() gale.Bolt { return &wordcount.SplitSentence{} }, 2).ShuffleGrouping("sentences")
	b.SetBasicBolt("flaky", func() gale.BasicBolt { return &flaky{seed: seed} }, 3).ShuffleGrouping("split")
	b.SetBasicBolt("count", func() gale.BasicBolt { return &wordcount.WordCount{OnCleanup: final.onCleanup} }, 2).
		FieldsGrouping("flaky", "word")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	res := complete(t, topo)
	checkAckedOnce(t, res, len(input))
	failed := res.Failed("sentences")
	if len(failed) == 0 {
		t.Error("no sentence failed; the flaky bolt did not run")
	}
	for _, f := range failed {
		var fe *gale.FailedError
		if !errors.As(f.Reason, &fe) || fe.Component != "flaky" || !errors.Is(f.Reason, errFlaky) {
			t.Fatalf("sentence %v failed with %v, want a FailedError from flaky wrapping errFlaky", f.MsgID, f.Reason)
		}
	}
	t.Logf("%d failures replayed", len(failed))
	final.mu.Lock()
	defer final.mu.Unlock()
	for _, e := range final.errs {
		t.Error(e)
	}
	for w, n := range want {
		if final.counts[w] < n {
			t.Errorf("count of %q = %d, want ≥ %d", w, final.counts[w], n)
		}
	}
}
