package wordcount_test

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bench"
	benchtopo "github.com/gale-stream/gale/internal/bench/wordcount"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/worker"
	"github.com/gale-stream/gale/internal/workermem"
)

// testLogger routes the runtime's logs to t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// runFor builds the bench topology for opts, applies extra config on top of the
// topology's own, runs it with gale.RunLocal for d and returns the final stats
// (RunLocal has drained and stopped everything) and the wall time it took.
func runFor(t *testing.T, opts bench.Options, extra gale.Config, d time.Duration) (*bench.Stats, time.Duration) {
	t.Helper()
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	stats := new(bench.Stats)
	topo, conf, err := benchtopo.Topology(opts, stats)
	if err != nil {
		t.Fatalf("Topology: %v", err)
	}
	for k, v := range extra {
		conf[k] = v
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	start := time.Now()
	if err := gale.RunLocal(ctx, "bench-wordcount", conf, topo, gale.RunOptions{Logger: testLogger(t)}); err != nil {
		t.Fatalf("RunLocal: %v", err)
	}
	elapsed := time.Since(start)
	t.Logf("%v: sentences %d, words %d, acked %d, failed %d, timeouts %d, unfinished %d",
		elapsed.Round(time.Millisecond), stats.Sentences.Load(), stats.Words.Load(), stats.Acked.Load(),
		stats.Failed.Load(), stats.Timeouts.Load(), stats.Unfinished.Load())
	return stats, elapsed
}

func TestTopologyShape(t *testing.T) {
	tests := []struct {
		name       string
		mode       string
		maxPending int
		wantAckers int
		wantMaxSet bool
	}{
		{name: "ack", mode: bench.ModeAck, wantAckers: 3},
		{name: "ack with max pending", mode: bench.ModeAck, maxPending: 50, wantAckers: 3, wantMaxSet: true},
		{name: "noack ignores ackers and max pending", mode: bench.ModeNoAck, maxPending: 50, wantAckers: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := bench.DefaultOptions()
			opts.Mode, opts.MaxSpoutPending = tt.mode, tt.maxPending
			opts.Spouts, opts.Splitters, opts.Counters, opts.Ackers = 2, 4, 5, 3
			topo, conf, err := benchtopo.Topology(opts, new(bench.Stats))
			if err != nil {
				t.Fatal(err)
			}
			if got := conf[gale.TopologyAckerExecutors]; got != tt.wantAckers {
				t.Errorf("%s: got %v, want %d", gale.TopologyAckerExecutors, got, tt.wantAckers)
			}
			if got, set := conf[gale.TopologyMaxSpoutPending]; set != tt.wantMaxSet || (set && got != tt.maxPending) {
				t.Errorf("%s: got %v (set %t), want %d (set %t)", gale.TopologyMaxSpoutPending, got, set, tt.maxPending, tt.wantMaxSet)
			}
			for _, c := range []struct {
				id       string
				par      int
				grouping gale.GroupingDef
				from     string
			}{
				{"sentences", 2, gale.GroupingDef{}, ""},
				{"split", 4, gale.GroupingDef{Type: gale.GroupingLocalOrShuffle}, "sentences"},
				{"count", 5, gale.GroupingDef{Type: gale.GroupingFields, Fields: []string{"word"}}, "split"},
			} {
				def, ok := topo.Def.Component(c.id)
				if !ok {
					t.Fatalf("no component %q", c.id)
				}
				if def.Parallelism != c.par {
					t.Errorf("%s parallelism: got %d, want %d", c.id, def.Parallelism, c.par)
				}
				if c.from == "" {
					continue
				}
				if len(def.Inputs) != 1 || def.Inputs[0].Component != c.from ||
					def.Inputs[0].Grouping.Type != c.grouping.Type || !slices.Equal(def.Inputs[0].Grouping.Fields, c.grouping.Fields) {
					t.Errorf("%s inputs: got %+v, want one from %s with %v", c.id, def.Inputs, c.from, c.grouping)
				}
			}
		})
	}
}

// TestTopologyStatsOff: --stats=false runs the topology with
// topology.stats.enabled false; by default the key is left to Gale's
// default (on).
func TestTopologyStatsOff(t *testing.T) {
	opts := bench.DefaultOptions()
	if _, conf, err := benchtopo.Topology(opts, new(bench.Stats)); err != nil || conf[gale.TopologyStatsEnabled] != nil {
		t.Errorf("default: %s = %v (err %v), want unset", gale.TopologyStatsEnabled, conf[gale.TopologyStatsEnabled], err)
	}
	opts.StatsOff = true
	if _, conf, err := benchtopo.Topology(opts, new(bench.Stats)); err != nil || conf[gale.TopologyStatsEnabled] != false {
		t.Errorf("StatsOff: %s = %v (err %v), want false", gale.TopologyStatsEnabled, conf[gale.TopologyStatsEnabled], err)
	}
}

// TestCompleteFixedSentences feeds fixed sentences through split and count with
// galetest: each is acked, split emits exactly its words in order, and count
// counts each word once.
func TestCompleteFixedSentences(t *testing.T) {
	const n = 500
	gen := bench.NewSentenceGen(bench.SpoutSeed(0))
	var src []gale.Values
	var words []string
	for range n {
		s := gen.Next()
		src = append(src, gale.Values{s})
		words = append(words, strings.Split(s, " ")...)
	}
	stats := new(bench.Stats)
	topo, conf, err := benchtopo.Topology(bench.DefaultOptions(), stats)
	if err != nil {
		t.Fatal(err)
	}
	res, err := galetest.Complete(t.Context(), topo, galetest.Options{
		Config:  conf,
		Sources: map[string][]gale.Values{"sentences": src},
		Logger:  testLogger(t),
	})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got := len(res.Acked("sentences")); got != n {
		t.Errorf("acked: got %d, want %d", got, n)
	}
	if f := res.Failed("sentences"); len(f) != 0 {
		t.Errorf("failed: got %d (first %v), want 0", len(f), f[0])
	}
	var got []string
	for _, v := range res.Emitted("split") {
		got = append(got, v[0].(string))
	}
	if !slices.Equal(got, words) {
		t.Errorf("split emitted %d words, want the %d words of the sentences in order", len(got), len(words))
	}
	if w := stats.Words.Load(); w != int64(len(words)) {
		t.Errorf("counted words: got %d, want %d", w, len(words))
	}
}

// TestAckMode runs the topology briefly: every sentence emitted is acked (the
// drain has 5 s, far more than the bounded queues need), none fails or times
// out, and each was counted as exactly 8 words. Paced, the spouts emit no more
// than the rate allows.
func TestAckMode(t *testing.T) {
	const run = 300 * time.Millisecond
	tests := []struct {
		name                                string
		spouts, splitters, counters, ackers int
		rate                                float64 // sentences/s over all spouts; 0 = unpaced
	}{
		{name: "one each", spouts: 1, splitters: 1, counters: 1, ackers: 1},
		{name: "parallel", spouts: 2, splitters: 2, counters: 3, ackers: 2},
		{name: "paced", spouts: 2, splitters: 1, counters: 2, ackers: 1, rate: 4000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := bench.DefaultOptions()
			opts.Spouts, opts.Splitters, opts.Counters, opts.Ackers = tt.spouts, tt.splitters, tt.counters, tt.ackers
			opts.Rate = tt.rate
			var stats *bench.Stats
			if tt.rate > 0 {
				// Paced, the run is on testing/synctest's clock, where the
				// rate is exact whatever else the machine does. (Unpaced
				// spouts never let the fake clock move.)
				synctest.Test(t, func(t *testing.T) { stats, _ = runFor(t, opts, nil, run) })
			} else {
				stats, _ = runFor(t, opts, nil, run)
			}
			sentences, words := stats.Sentences.Load(), stats.Words.Load()
			acked, unfinished := stats.Acked.Load(), stats.Unfinished.Load()
			if sentences == 0 {
				t.Fatalf("no sentences emitted in %v", run)
			}
			if f, to := stats.Failed.Load(), stats.Timeouts.Load(); f != 0 || to != 0 {
				t.Errorf("failed %d, timeouts %d: want 0, 0", f, to)
			}
			if acked+unfinished != sentences {
				t.Errorf("acked %d + unfinished %d = %d, want sentences %d", acked, unfinished, acked+unfinished, sentences)
			}
			if unfinished != 0 {
				t.Errorf("unfinished: got %d, want 0 (the drain should complete)", unfinished)
			}
			if words != bench.WordsPerSentence*sentences {
				t.Errorf("words: got %d, want %d × %d sentences = %d", words, bench.WordsPerSentence, sentences, bench.WordsPerSentence*sentences)
			}
			if c := stats.Latency.Count(); c != acked {
				t.Errorf("latency samples: got %d, want one per acked tree, %d", c, acked)
			}
			if tt.rate > 0 {
				// Each spout's emit n is due at its activation + n/(rate/spouts):
				// rate·run in the run, give or take the few emits by which the
				// spout executors' seeing the start and the end may move them.
				lo := int64(tt.rate*run.Seconds()) - 5
				hi := lo + 10 + int64(tt.spouts)
				if sentences > hi || sentences < lo {
					t.Errorf("sentences: got %d in %v at %v/s, want between %d and %d", sentences, run, tt.rate, lo, hi)
				}
			}
		})
	}
}

func TestNoAckMode(t *testing.T) {
	opts := bench.DefaultOptions()
	opts.Mode = bench.ModeNoAck
	stats, _ := runFor(t, opts, nil, 300*time.Millisecond)
	sentences, words := stats.Sentences.Load(), stats.Words.Load()
	if sentences == 0 || words == 0 {
		t.Fatalf("sentences %d, words %d: want both > 0", sentences, words)
	}
	for name, v := range map[string]int64{
		"acked": stats.Acked.Load(), "failed": stats.Failed.Load(),
		"timeouts": stats.Timeouts.Load(), "unfinished": stats.Unfinished.Load(),
		"latency samples": stats.Latency.Count(),
	} {
		if v != 0 {
			t.Errorf("%s: got %d, want 0 in noack mode", name, v)
		}
	}
	if words != bench.WordsPerSentence*sentences {
		t.Errorf("words: got %d, want %d × %d sentences (the drain delivers what is queued)", words, bench.WordsPerSentence, sentences)
	}
}

// TestNoAckModeDrains holds the Runner contract (internal/bench/doc.go: "stop
// emitting, drain what is in flight and return") in noack mode too.
func TestNoAckModeDrains(t *testing.T) {
	opts := bench.DefaultOptions()
	opts.Mode = bench.ModeNoAck
	stats, _ := runFor(t, opts, nil, 300*time.Millisecond)
	sentences, words := stats.Sentences.Load(), stats.Words.Load()
	if words != bench.WordsPerSentence*sentences {
		t.Errorf("words: got %d, want %d × %d sentences = %d (%d sentences' words lost at shutdown)",
			words, bench.WordsPerSentence, sentences, bench.WordsPerSentence*sentences,
			sentences-words/bench.WordsPerSentence)
	}
}

// TestOverloadThrottlesSpout overloads the count bolt (200µs of work per
// word, so at most 625 sentences/s) under an unpaced spout, with acking on and a
// 1 s message timeout, for 1.5 s. It runs on testing/synctest's clock, the
// count bolt sleeping for its work: the bolt's rate, the timeouts and the
// in-flight limit Gale derives from the completion rate are then what they
// would be on an idle machine, whatever else this one runs.
//
// Without throttling, the spout (tens of thousands of sentences/s) would fill
// every queue, and the queues alone hold a backlog of ~2,500 sentences, ~4 s of
// the count bolt's work: trees would time out at 1 s. The in-flight limit Gale
// sets from Little's law (trees completed per quarter timeout) must keep the
// backlog under the timeout, so nothing times out or fails.
func TestOverloadThrottlesSpout(t *testing.T) {
	const (
		delay     = 200 * time.Microsecond
		run       = 1500 * time.Millisecond
		recvBuf   = 1024 // topology.executor.receive.buffer.size, tuples
		batchSize = 100  // topology.producer.batch.size, tuples
	)
	opts := bench.DefaultOptions()
	opts.CountDelay = delay
	defer benchtopo.SleepForBusyWork()()
	var stats *bench.Stats
	var elapsed time.Duration
	synctest.Test(t, func(t *testing.T) {
		stats, elapsed = runFor(t, opts, gale.Config{
			gale.TopologyMessageTimeoutSecs:        1,
			gale.TopologyExecutorReceiveBufferSize: recvBuf,
			gale.TopologyProducerBatchSize:         batchSize,
		}, run)
	})
	sentences, words := stats.Sentences.Load(), stats.Words.Load()
	acked, unfinished := stats.Acked.Load(), stats.Unfinished.Load()

	if to, f := stats.Timeouts.Load(), stats.Failed.Load(); to != 0 || f != 0 {
		t.Errorf("timeouts %d, failed %d: want 0, 0 (the spout must be throttled below the timeout)", to, f)
	}
	if acked+unfinished != sentences || unfinished != 0 {
		t.Errorf("acked %d, unfinished %d: want acked = sentences %d, unfinished 0", acked, unfinished, sentences)
	}
	if words != bench.WordsPerSentence*sentences {
		t.Errorf("words: got %d, want %d × %d sentences", words, bench.WordsPerSentence, sentences)
	}

	// The bound. The one count task works delay per word on one goroutine,
	// so over the whole run (elapsed, drain included) it counts at most
	// elapsed/delay words: elapsed/(8·delay) sentences. Whatever else the spout
	// emitted sits in bounded buffers: its own unflushed round (≤ batchSize
	// tuples), split's input queue (≤ recvBuf), the batch split is executing and
	// its outbox (≤ 3·batchSize), count's input queue (≤ recvBuf) and the batch
	// it is executing (≤ batchSize). Counting every buffered tuple, word or
	// sentence, as a whole sentence, and doubling, gives a generous bound that an
	// unthrottled spout (≥ 10× the count rate) breaks at once.
	processable := int64(elapsed / (bench.WordsPerSentence * delay))
	capacity := int64(2 * (2*recvBuf + 5*batchSize))
	if sentences > processable+capacity {
		t.Errorf("sentences: got %d in %v, want ≤ %d the count bolt could process + %d queue capacity: the spout was not throttled",
			sentences, elapsed.Round(time.Millisecond), processable, capacity)
	}
	if sentences == 0 {
		t.Errorf("no sentences emitted")
	}
}

// TestBenchDefaultsAreAWorkers: by default the bench collects as a Gale
// worker does, so its figures are a worker's; and its worker processes
// get the bench's memory settings as their cluster layer.
func TestBenchDefaultsAreAWorkers(t *testing.T) {
	settings := func(opts bench.Options) workermem.Settings {
		return workermem.Settings{GCPercent: opts.GOGC, LimitBytes: int64(opts.HeapMB) << 20,
			FloorBytes: int64(opts.GCFloorMB) << 20, Pretouch: opts.HeapPretouch}
	}
	e, err := config.Resolve(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := bench.DefaultOptions()
	if got, want := settings(o), workermem.Of(e); got != want || bench.GOGCOff != workermem.GOGCOff {
		t.Errorf("bench defaults %+v, a worker's %+v", got, want)
	}

	o.GOGC, o.HeapMB, o.GCFloorMB, o.HeapPretouch = bench.GOGCOff, 1024, 0, false
	e, err = config.Resolve(benchtopo.WorkerCluster(o), nil)
	if err != nil {
		t.Fatalf("the workers' cluster layer: %v", err)
	}
	if got, want := workermem.Of(e), settings(o); got != want {
		t.Errorf("bench workers run with %+v, want the bench's %+v", got, want)
	}
}

// TestPacingStartsAtActivation: a paced spout's emits are due from when it
// is activated, not from when it was opened, and a deactivated spout does
// not catch up the time it was off. A worker opens its spouts, then waits
// for its peers before activating them; counting from Open made that wait
// a backlog, emitted in a burst whose sentences reported the wait as their
// complete latency. On testing/synctest's clock the counts are exact.
func TestPacingStartsAtActivation(t *testing.T) {
	const (
		rate = 2000
		on   = 100 * time.Millisecond
		off  = 300 * time.Millisecond
	)
	opts := bench.DefaultOptions()
	opts.Rate = rate
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		stats := new(bench.Stats)
		topo, conf, err := benchtopo.Topology(opts, stats)
		if err != nil {
			t.Fatal(err)
		}
		// One worker with no peers: it activates at once, and its
		// listener (which nobody dials) keeps the fake clock free to move.
		ln := newIdleListener()
		w, err := bridge.StartWorker("bench-wordcount", conf, topo,
			worker.Assignment{Worker: 0, Workers: []string{ln.Addr().String()}},
			worker.Options{Logger: testLogger(t), Listener: ln}, bridge.Hooks{})
		if err != nil {
			t.Fatalf("StartWorker: %v", err)
		}
		defer w.Stop()
		time.Sleep(on)
		w.Deactivate()
		time.Sleep(off) // the spout is open and switched off; its trees complete
		first := stats.Acked.Load()
		w.Activate()
		time.Sleep(on)
		w.Deactivate()
		time.Sleep(off)
		second := stats.Acked.Load() - first
		// rate·on each time on; the spout executor sees a switch when it
		// next looks, which moves either end by a few emits. Catching up
		// the time off would add rate·off, 600.
		want := int64(rate * on.Seconds())
		for i, got := range []int64{first, second} {
			if got < want-5 || got > want+5 {
				t.Errorf("switched on for the %s time: %d sentences acked, want %d (%v at %d/s)", []string{"first", "second"}[i], got, want, on, rate)
			}
		}
		if worst := stats.Latency.Quantile(1); worst >= off/2 {
			t.Errorf("slowest complete latency %v, want well under the %v the spout was off", worst, off)
		}
	})
}

// idleListener is a net.Listener nobody connects to, whose Accept waits
// on a channel: inside a synctest bubble that blocks durably, where a real
// socket's Accept would keep the fake clock from moving.
type idleListener struct {
	closed chan struct{}
	once   sync.Once
}

func newIdleListener() *idleListener { return &idleListener{closed: make(chan struct{})} }

func (l *idleListener) Accept() (net.Conn, error) {
	<-l.closed
	return nil, net.ErrClosed
}

func (l *idleListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *idleListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
