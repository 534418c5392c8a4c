package gale_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/ratelog"
	"github.com/gale-stream/gale/internal/testutil"
)

// TestStatsDisabled: with topology.stats.enabled false the bolts publish
// no counters and the spout records no complete latency, while the
// spout's acked, failed (by reason) and pending counts, which gale list
// and the in-flight limit need, stay exact.
func TestStatsDisabled(t *testing.T) {
	lt, clock := startManual(t, splitTopology(t), gale.Config{gale.TopologyStatsEnabled: false})
	settle(t, lt, clock, 0)
	for _, b := range bridge.BoltStats(lt) {
		if b.Executed != 0 || b.Acked != 0 || b.Emitted != 0 || b.ExecuteSamples != 0 || b.ProcessSamples != 0 || b.QueueDepth != 0 || len(b.Executors) != 0 {
			t.Errorf("%s with stats off: %+v, want no counters", b.Component, b)
		}
	}
	s := metrics.TotalSpouts(bridge.SpoutStats(lt))
	if s.Emitted != 100 || s.Acked != 98 || s.Failed != 2 || s.FailedByBolt != 1 || s.TimedOut != 1 || s.Pending != 0 {
		t.Errorf("spout with stats off: emitted %d, acked %d, failed %d (by a bolt %d, timed out %d), pending %d; want 100, 98, 2 (1, 1), 0",
			s.Emitted, s.Acked, s.Failed, s.FailedByBolt, s.TimedOut, s.Pending)
	}
	if n := s.Latency.Count(); n != 0 {
		t.Errorf("spout with stats off: %d complete latencies recorded, want none", n)
	}
}

// TestStatsSampleRate: topology.stats.sample.rate r times one Execute in
// round(1/r), the first included; unset, one in 64.
func TestStatsSampleRate(t *testing.T) {
	for _, c := range []struct {
		rate any
		want int64
	}{
		{nil, 2},   // 1 and 65 of 100
		{0.25, 25}, // 1, 5, …, 97
		{0.3, 34},  // one in 3
		{1, 100},
	} {
		t.Run(fmt.Sprint(c.rate), func(t *testing.T) {
			conf := gale.Config{}
			if c.rate != nil {
				conf[gale.TopologyStatsSampleRate] = c.rate
			}
			lt, clock := startManual(t, splitTopology(t), conf)
			settle(t, lt, clock, 0)
			for _, b := range bridge.BoltStats(lt) {
				if b.Component == "split" && b.ExecuteSamples != c.want {
					t.Errorf("rate %v: %d of split's 100 Execute calls timed, want %d", c.rate, b.ExecuteSamples, c.want)
				}
			}
		})
	}
	for _, bad := range []any{0, 1.5, -0.1, "often"} {
		_, err := gale.StartLocal("rate", gale.Config{gale.TopologyStatsSampleRate: bad}, splitTopology(t), gale.RunOptions{Logger: testLogger(t)})
		if err == nil || !strings.Contains(err.Error(), gale.TopologyStatsSampleRate) {
			t.Errorf("sample rate %v: error %v, want one naming %s", bad, err, gale.TopologyStatsSampleRate)
		}
	}
}

// TestProcessLatency: a bolt's process latency runs from the arrival of
// a tuple's batch at the executor to the tuple's ack, so it counts the
// time the tuple waited behind the ones before it in the batch, which
// the execute latency does not; failed tuples are not timed. Every
// Execute here takes 1 ms of the clock and all 100 tuples arrive in one
// batch: the k-th tuple acked is acked k ms after the batch arrived.
func TestProcessLatency(t *testing.T) {
	var clock *galetest.Clock
	b := gale.NewTopologyBuilder()
	b.SetSpout("nums", seqSpout(100), 1)
	b.SetBolt("slow", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, tu *gale.Tuple) {
			clock.Advance(time.Millisecond)
			if tu.GetInt(0) == 7 {
				b.Collector.Fail(tu, errors.New("seven"))
				return
			}
			b.Collector.Ack(tu)
		}}
	}, 1).ShuffleGrouping("nums")
	clock = galetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	conf := gale.Config{gale.TopologyStatsSampleRate: 1, gale.TopologyProducerBatchSize: 100, gale.TopologyMaxSpoutPending: 1000}
	lt, err := gale.StartLocal("process", conf, build(t, b), gale.RunOptions{Logger: testLogger(t), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	settle(t, lt, clock, 0)
	slow := bridge.BoltStats(lt)[0]
	if slow.ExecuteSamples != 100 || slow.ExecuteLatency() != time.Millisecond {
		t.Errorf("execute: %d timed, mean %v; want 100, 1ms", slow.ExecuteSamples, slow.ExecuteLatency())
	}
	// 1 + 2 + … + 100 ms, less the 8 ms of seq 7, the 8th, which failed.
	if want := time.Duration(5050-8) * time.Millisecond; slow.ProcessSamples != 99 || time.Duration(slow.ProcessSampledNanos) != want {
		t.Errorf("process: %d timed in %v; want 99 in %v", slow.ProcessSamples, time.Duration(slow.ProcessSampledNanos), want)
	}
}

// TestThrottled: a spout whose tasks sit at max pending counts the time
// it is held back as throttled; one that is never capped counts none.
func TestThrottled(t *testing.T) {
	held := make(chan struct{})
	b := gale.NewTopologyBuilder()
	b.SetSpout("nums", seqSpout(1000), 1)
	b.SetBolt("hold", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, tu *gale.Tuple) {
			b.held = append(b.held, tu) // never acked
			if len(b.held) == 10 {
				close(held)
			}
		}}
	}, 1).ShuffleGrouping("nums")
	lt, clock := startManual(t, build(t, b), gale.Config{gale.TopologyMaxSpoutPending: 10, gale.TopologyMessageTimeoutSecs: 300})
	<-held
	tick := bridge.LocalOf(lt).TimeoutTick()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clock.Advance(tick)
	if err := clock.WaitHandled(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, fmt.Sprintf("throttled %v", tick), func() bool {
		return bridge.SpoutStats(lt)[0].ThrottledNanos == int64(tick)
	})

	lt2, clock2 := startManual(t, splitTopology(t), nil)
	settle(t, lt2, clock2, 0)
	if s := bridge.SpoutStats(lt2)[0]; s.ThrottledNanos != 0 {
		t.Errorf("a spout never at its limit: throttled %v, want 0", time.Duration(s.ThrottledNanos))
	}
}

// TestQueueDepth: the tuples waiting in a bolt's input queue show as its
// queue depth, against the queue's capacity, and none once it drained.
// The spout emits the rest of its 500 tuples once the bolt is stuck on
// the first: they wait in its queue.
func TestQueueDepth(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	var started atomic.Bool
	b := gale.NewTopologyBuilder()
	b.SetSpout("nums", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("seq") },
			next: func(s *funcSpout) {
				if s.n == 0 || started.Load() && s.n < 500 {
					s.Collector.Emit(s.n, s.n)
					s.n++
				}
			},
		}
	}, 1)
	b.SetBolt("stuck", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, tu *gale.Tuple) {
			if started.CompareAndSwap(false, true) {
				<-release
			}
			b.Collector.Ack(tu)
		}}
	}, 1).ShuffleGrouping("nums")
	conf := gale.Config{gale.TopologyMaxSpoutPending: 1000, gale.TopologyExecutorReceiveBufferSize: 1000}
	lt, clock := startManual(t, build(t, b), conf)
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before Stop
	testutil.Eventually(t, 10*time.Second, "499 tuples queued", func() bool { return bridge.BoltStats(lt)[0].QueueDepth == 499 })
	if c := bridge.BoltStats(lt)[0].QueueCapacity; c != 1000 {
		t.Errorf("queue capacity %d, want 1000 (topology.executor.receive.buffer.size)", c)
	}
	once.Do(func() { close(release) })
	settle(t, lt, clock, 0)
	if d := bridge.BoltStats(lt)[0].QueueDepth; d != 0 {
		t.Errorf("queue depth %d once drained, want 0", d)
	}
}

// retrySpout reports as many retries as it emitted tuples, and twice as
// many dead letters.
type retrySpout struct {
	funcSpout
	n int64
}

func (s *retrySpout) RetryStats() (retries, deadLetters int64) { return s.n, 2 * s.n }

// TestRetryReporter: the retries and dead letters a spout or bolt
// reports through gale.RetryReporter show in its counters, summed over
// its tasks.
func TestRetryReporter(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		s := &retrySpout{}
		s.declare = func(d gale.OutputDeclarer) { d.Declare("seq") }
		s.next = func(*funcSpout) {
			if s.n < 50 {
				s.Collector.Emit(s.n, s.n)
				s.n++
			}
		}
		return s
	}, 2)
	b.SetBolt("sink", func() gale.Bolt { return &retryBolt{} }, 1).ShuffleGrouping("src")
	lt, clock := startManual(t, build(t, b), nil)
	settle(t, lt, clock, 0)
	if s := bridge.SpoutStats(lt)[0]; s.Retries != 100 || s.DeadLetters != 200 {
		t.Errorf("spout: retries %d, dead letters %d; want 100, 200 (50 and 100 per task)", s.Retries, s.DeadLetters)
	}
	testutil.Eventually(t, 10*time.Second, "the sink's retries", func() bool {
		b := bridge.BoltStats(lt)[0]
		return b.Retries == 100 && b.DeadLetters == 1
	})
}

// retryBolt acks and reports a retry per input and one dead letter.
type retryBolt struct {
	funcBolt
	n int64
}

func (b *retryBolt) Execute(t *gale.Tuple) {
	b.n++
	b.Collector.Ack(t)
}

func (b *retryBolt) RetryStats() (retries, deadLetters int64) { return b.n, min(b.n, 1) }

// TestComponentErrors: ReportError and a panic in Execute show in the
// component's errors with the task and the clock's time, oldest first,
// the last metrics.MaxErrors only.
func TestComponentErrors(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("nums", seqSpout(30), 1)
	b.SetBolt("bad", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, tu *gale.Tuple) {
			switch seq := tu.GetInt(0); {
			case seq == 29:
				panic("twenty-nine")
			case seq%2 == 1:
				b.Collector.ReportError(fmt.Errorf("odd %d", seq))
			}
			b.Collector.Ack(tu)
		}}
	}, 1).ShuffleGrouping("nums")
	lt, clock := startManual(t, build(t, b), nil)
	settle(t, lt, clock, 0)
	bad := bridge.BoltStats(lt)[0]
	if len(bad.Errors) != metrics.MaxErrors {
		t.Fatalf("%d errors kept, want %d: %+v", len(bad.Errors), metrics.MaxErrors, bad.Errors)
	}
	task := bridge.LocalOf(lt).TaskIDs("bad")[0]
	at := clock.Now().UnixMilli()
	for i, e := range bad.Errors[:metrics.MaxErrors-1] {
		// 14 reported (1, 3, …, 27), then the panic: the last 9 are 11, 13, …, 27.
		if want := fmt.Sprintf("odd %d", 11+2*i); e.Error != want || e.Task != task || e.TimeUnixMs != at {
			t.Errorf("error %d: %+v, want %q from task %d at %d", i, e, want, task, at)
		}
	}
	if last := bad.Errors[metrics.MaxErrors-1]; !strings.Contains(last.Error, "twenty-nine") {
		t.Errorf("the last error: %q, want the panic", last.Error)
	}
	if errs := bridge.SpoutStats(lt)[0].Errors; len(errs) != 0 {
		t.Errorf("the spout's errors: %+v, want none", errs)
	}
}

// TestStreamStats: a bolt's counters per input stream (by source
// component and stream) and per output stream, and a spout's per output
// stream, are what went on each.
func TestStreamStats(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("nums", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) {
				d.Declare("seq")
				d.DeclareStream("odd", "seq")
			},
			next: func(s *funcSpout) {
				if s.n < 30 {
					stream := gale.DefaultStream
					if s.n%2 == 1 {
						stream = "odd"
					}
					s.Collector.EmitStream(stream, s.n, s.n)
					s.n++
				}
			},
		}
	}, 1)
	b.SetSpout("more", seqSpout(7), 1)
	b.SetBolt("mix", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) {
				d.Declare("seq")
				d.DeclareStream("big", "seq")
			},
			execute: func(b *funcBolt, tu *gale.Tuple) {
				seq := tu.GetInt(0)
				if seq == 3 && tu.SourceStream() == "odd" {
					b.Collector.Fail(tu, errors.New("three"))
					return
				}
				if seq >= 20 {
					b.Collector.EmitStream("big", []*gale.Tuple{tu}, seq)
				}
				b.Collector.Ack(tu)
			},
		}
	}, 1).ShuffleGrouping("nums").Grouping("nums", "odd", gale.Shuffle()).ShuffleGrouping("more")
	b.SetBolt("sink", func() gale.Bolt { return &funcBolt{} }, 1).Grouping("mix", "big", gale.Shuffle())
	lt, clock := startManual(t, build(t, b), gale.Config{gale.TopologyStatsSampleRate: 1})
	settle(t, lt, clock, 0)
	var mix metrics.Bolt
	for _, bs := range bridge.BoltStats(lt) {
		if bs.Component == "mix" {
			mix = bs
		}
	}
	wantIn := []metrics.Stream{
		{Component: "more", Stream: gale.DefaultStream, Executed: 7, Acked: 7, ExecuteSamples: 7, ProcessSamples: 7},
		{Component: "nums", Stream: gale.DefaultStream, Executed: 15, Acked: 15, ExecuteSamples: 15, ProcessSamples: 15},
		{Component: "nums", Stream: "odd", Executed: 15, Acked: 14, Failed: 1, ExecuteSamples: 15, ProcessSamples: 14},
	}
	if !reflect.DeepEqual(mix.Inputs, wantIn) {
		t.Errorf("mix's inputs:\n got %+v\nwant %+v", mix.Inputs, wantIn)
	}
	wantOut := []metrics.Stream{{Component: "mix", Stream: "big", Emitted: 10}, {Component: "mix", Stream: gale.DefaultStream}}
	if !reflect.DeepEqual(mix.Outputs, wantOut) {
		t.Errorf("mix's outputs:\n got %+v\nwant %+v", mix.Outputs, wantOut)
	}
	for _, s := range bridge.SpoutStats(lt) {
		if s.Component != "nums" {
			continue
		}
		want := []metrics.Stream{{Component: "nums", Stream: gale.DefaultStream, Emitted: 15}, {Component: "nums", Stream: "odd", Emitted: 15}}
		if !reflect.DeepEqual(s.Outputs, want) {
			t.Errorf("nums's outputs:\n got %+v\nwant %+v", s.Outputs, want)
		}
	}
}

// TestSpoutPanicError: a panic in NextTuple shows in the spout's errors.
func TestSpoutPanicError(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("boom", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("seq") },
			next: func(s *funcSpout) {
				if s.n == 0 {
					s.n++
					panic("no more")
				}
			},
		}
	}, 1)
	lt, _ := startManual(t, build(t, b), nil)
	testutil.Eventually(t, 10*time.Second, "the panic among the spout's errors", func() bool {
		errs := bridge.SpoutStats(lt)[0].Errors
		return len(errs) == 1 && strings.Contains(errs[0].Error, "no more") && errs[0].Task == bridge.LocalOf(lt).TaskIDs("boom")[0]
	})
}

// lockedBuffer is a bytes.Buffer for a logger written from several
// goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestFailErrorsKept: the errors a bolt passes to Fail(t, err) are kept
// among the component's recent errors (what nimbus, the UI and gale
// doctor read) and logged, both rate-limited: a bolt failing each of 30
// inputs at one instant keeps metrics.MaxErrors of them and logs at
// most ratelog's burst, with a count of those held back once the
// window has passed.
func TestFailErrorsKept(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("nums", seqSpout(30), 1)
	b.SetBolt("bad", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, tu *gale.Tuple) {
			b.Collector.Fail(tu, fmt.Errorf("bad input %d", tu.GetInt(0)))
		}}
	}, 1).ShuffleGrouping("nums")
	var logs lockedBuffer
	clock := galetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	lt, err := gale.StartLocal("fails", nil, build(t, b), gale.RunOptions{
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lt.Stop)
	settle(t, lt, clock, 0)
	bad := bridge.BoltStats(lt)[0]
	if bad.Failed != 30 {
		t.Fatalf("bad failed %d inputs, want 30", bad.Failed)
	}
	if len(bad.Errors) != metrics.MaxErrors {
		t.Fatalf("%d of the Fail errors kept, want %d: %+v", len(bad.Errors), metrics.MaxErrors, bad.Errors)
	}
	task := bridge.LocalOf(lt).TaskIDs("bad")[0]
	for _, e := range bad.Errors {
		if !strings.HasPrefix(e.Error, "bad input ") || e.Task != task || e.TimeUnixMs != clock.Now().UnixMilli() {
			t.Errorf("kept error %+v, want a \"bad input N\" of task %d at %d", e, task, clock.Now().UnixMilli())
		}
	}
	if errs, n := lt.Errors(); n != int64(metrics.MaxErrors) || len(errs) != metrics.MaxErrors || errs[0].Component != "bad" {
		t.Errorf("LocalTopology.Errors: %d errors (%d in all), want %d of bad's", len(errs), n, metrics.MaxErrors)
	}
	lines := strings.Count(logs.String(), "input failed")
	if lines == 0 || lines > ratelog.DefaultBurst {
		t.Errorf("%d \"input failed\" lines for 30 failures at one instant, want 1 to %d:\n%s", lines, ratelog.DefaultBurst, logs.String())
	}
	if !strings.Contains(logs.String(), "bad input 0") {
		t.Errorf("the log does not carry the error:\n%s", logs.String())
	}
}
