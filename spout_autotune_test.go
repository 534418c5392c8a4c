package gale_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/testutil"
	"github.com/gale-stream/gale/internal/worker"
)

// progressSpout is a funcSpout that reports the progress the test sets.
type progressSpout struct {
	*funcSpout
	progress *atomic.Int64
}

func (s progressSpout) Progress() int64 { return s.progress.Load() }

var _ gale.ProgressReporter = progressSpout{}

// logRecords keeps the records logged at Info and above, and passes them
// on to t.Log.
type logRecords struct {
	mu   sync.Mutex
	recs []map[string]any
	next slog.Handler
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecords) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelInfo {
		return nil
	}
	m := map[string]any{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.Any()
		return true
	})
	h.mu.Lock()
	h.recs = append(h.recs, m)
	h.mu.Unlock()
	return h.next.Handle(ctx, r)
}

func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h } // the test matches on a record's own attributes
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

func (h *logRecords) with(msg string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, r := range h.recs {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// TestAutotuneMovesMaxPendingWithProgress runs a spout through the runtime
// on a manual clock and sets the progress it makes in each tune interval:
// the trees acked (the spout emits only as many as the test allows and
// the bolt acks each at once) or, for a ProgressReporter, what it
// reports (while its acks stay the same every interval). After each
// interval the max spout pending in the spout's counters, and the log
// line of each change, are the auto-tuner's.
func TestAutotuneMovesMaxPendingWithProgress(t *testing.T) {
	for _, c := range []struct {
		name     string
		conf     gale.Config
		reporter bool
		interval time.Duration
		progress []int64
		want     []int64 // max pending after each interval
		actions  []string
	}{
		{"trees acked", gale.Config{gale.TopologyMaxSpoutPending: 100, gale.TopologyMaxSpoutPendingAutotune: true,
			gale.TopologyMaxSpoutPendingAutotuneIntervalSecs: 10},
			false, 10 * time.Second,
			[]int64{400, 800, 800, 200, 200}, []int64{125, 156, 125, 31, 23},
			[]string{"increase", "increase", "back", "decrease", "decrease"}},
		{"a progress reporter, not acks", gale.Config{gale.TopologyMaxSpoutPending: 100, gale.TopologyMaxSpoutPendingAutotune: true,
			gale.TopologyMaxSpoutPendingAutotuneIntervalSecs: 10},
			true, 10 * time.Second,
			[]int64{400, 800, 800, 200, 200}, []int64{125, 156, 125, 31, 23},
			[]string{"increase", "increase", "back", "decrease", "decrease"}},
		{"unset, it starts from 1000 and tunes every message timeout", gale.Config{gale.TopologyMaxSpoutPendingAutotune: true,
			gale.TopologyMessageTimeoutSecs: 7},
			false, 7 * time.Second,
			[]int64{400, 800}, []int64{1250, 1562},
			[]string{"increase", "increase"}},
		{"off, the fixed value stays", gale.Config{gale.TopologyMaxSpoutPending: 100},
			false, 10 * time.Second,
			[]int64{400, 800, 200}, []int64{100, 100, 100}, nil},
		{"acking off, there are no trees to limit", gale.Config{gale.TopologyMaxSpoutPending: 100, gale.TopologyMaxSpoutPendingAutotune: true,
			gale.TopologyMaxSpoutPendingAutotuneIntervalSecs: 10, gale.TopologyAckerExecutors: 0},
			false, 10 * time.Second,
			[]int64{400, 800}, []int64{0, 0}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var allowed, reported atomic.Int64
			topo := gatedTopology(t, &allowed, &reported, c.reporter)
			conf := gale.Config{gale.TopologyMessageTimeoutSecs: 30, gale.TopologyShutdownDrainTimeoutSecs: 0}
			for k, v := range c.conf {
				conf[k] = v
			}
			clk := galetest.NewClock(testEpoch)
			logs := &logRecords{next: testLogger(t).Handler()}
			lt, err := gale.StartLocal("autotune", conf, topo, gale.RunOptions{Logger: slog.New(logs), Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			defer lt.Stop()
			maxPending := func() (acked, max int64) {
				s := bridge.SpoutStats(lt)[0]
				return s.Acked, s.MaxPending
			}
			var total int64
			for i, p := range c.progress {
				// The spout emits only once active, so the window of the
				// first interval starts before these acks (and the
				// progress reported after them).
				step := p
				if c.reporter {
					step = 500 // acks that are not progress
				}
				total += step
				allowed.Store(total)
				testutil.Eventually(t, 10*time.Second, fmt.Sprintf("interval %d's %d acks", i, step), func() bool { a, _ := maxPending(); return a == total })
				if c.reporter {
					reported.Add(p)
				}
				clk.Advance(c.interval)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := clk.WaitHandled(ctx)
				cancel()
				if err != nil {
					t.Fatalf("interval %d: %v", i, err)
				}
				if _, got := maxPending(); got != c.want[i] {
					t.Fatalf("after interval %d (progress %d): max pending %d, want %d", i, p, got, c.want[i])
				}
			}
			lines := logs.with("max spout pending tuned")
			if len(lines) != len(c.actions) {
				t.Fatalf("got %d tuning log lines, want %d: %v", len(lines), len(c.actions), lines)
			}
			for i, l := range lines {
				old := int64(100)
				if i > 0 {
					old = c.want[i-1]
				} else if _, set := c.conf[gale.TopologyMaxSpoutPending]; !set {
					old = 1000
				}
				if l["action"] != c.actions[i] || l["old"] != old || l["new"] != c.want[i] || l["progress"] != c.progress[i] || l["component"] != "src" {
					t.Errorf("log line %d: got %v, want action %s, old %d, new %d, progress %d, component src",
						i, l, c.actions[i], old, c.want[i], c.progress[i])
				}
			}
		})
	}
}

// gatedTopology is a spout that emits only as many tuples as allowed says
// (reporting reported as its progress when reporter), and a bolt that acks
// each at once.
func gatedTopology(t *testing.T, allowed, reported *atomic.Int64, reporter bool) *gale.Topology {
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		s := &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("seq") },
			next: func(s *funcSpout) {
				if int64(s.n) < allowed.Load() {
					if _, err := s.Collector.Emit(s.n, s.n); err != nil {
						panic(err)
					}
					s.n++
				}
			},
		}
		if reporter {
			return progressSpout{s, reported}
		}
		return s
	}, 1)
	b.SetBolt("sink", func() gale.Bolt { return &funcBolt{} }, 1).ShuffleGrouping("src")
	return build(t, b)
}

// TestAutotuneSkipsInactiveIntervals: intervals while the spout is
// deactivated make no step (their lack of progress is not the topology's),
// and the window after the activation starts there.
func TestAutotuneSkipsInactiveIntervals(t *testing.T) {
	var allowed, reported atomic.Int64
	topo := gatedTopology(t, &allowed, &reported, false)
	conf := gale.Config{gale.TopologyMessageTimeoutSecs: 30, gale.TopologyShutdownDrainTimeoutSecs: 0,
		gale.TopologyMaxSpoutPending: 100, gale.TopologyMaxSpoutPendingAutotune: true,
		gale.TopologyMaxSpoutPendingAutotuneIntervalSecs: 10}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	clk := galetest.NewClock(testEpoch)
	logs := &logRecords{next: testLogger(t).Handler()}
	wk, err := bridge.StartWorker("autotune", conf, topo, worker.Assignment{Workers: []string{ln.Addr().String()}},
		worker.Options{Logger: slog.New(logs), Listener: ln}, bridge.Hooks{Clock: clk})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	defer wk.Stop()
	stats := func() (acked, max int64) {
		s := bridge.SpoutStats(wk)[0]
		return s.Acked, s.MaxPending
	}
	interval := func(what string) {
		t.Helper()
		clk.Advance(10 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := clk.WaitHandled(ctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	allowed.Store(400)
	testutil.Eventually(t, 10*time.Second, "400 acks", func() bool { a, _ := stats(); return a == 400 })
	interval("the first interval")
	if _, got := stats(); got != 125 {
		t.Fatalf("after 400 trees: max pending %d, want 125 (the first step increases)", got)
	}
	wk.Deactivate()
	testutil.Eventually(t, 10*time.Second, "the spout to stop", func() bool { return wk.Status().Stopped })
	interval("an inactive interval")
	interval("another inactive interval")
	if _, got := stats(); got != 125 {
		t.Fatalf("after two inactive intervals: max pending %d, want 125 (no step)", got)
	}
	wk.Activate()
	testutil.Eventually(t, 10*time.Second, "the spout to start again", func() bool { return !wk.Status().Stopped })
	allowed.Store(400 + 800)
	testutil.Eventually(t, 10*time.Second, "800 more acks", func() bool { a, _ := stats(); return a == 1200 })
	interval("the interval after the activation")
	if _, got := stats(); got != 156 {
		t.Fatalf("after 800 trees in the active interval: max pending %d, want 156 (an increase after a gain)", got)
	}
	if n := len(logs.with("max spout pending tuned")); n != 2 {
		t.Errorf("got %d tuning log lines, want 2", n)
	}
}
