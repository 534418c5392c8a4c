package gale_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/testutil"
)

// TestContextCancelledAfterDrain pins when a task's Context ends in an
// orderly stop: not when Stop begins (the spout is deactivated and a bolt
// still executes its last tuple with the context live), but once the drain
// is over, before Close and Cleanup.
func TestContextCancelledAfterDrain(t *testing.T) {
	entered := make(chan struct{})     // the bolt is in Execute with the only tuple
	release := make(chan struct{})     // lets it ack
	deactivated := make(chan struct{}) // the spout saw the stop
	var ctx context.Context            // the spout's, from Open
	var errInExecute, errInClose, errInCleanup error
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", func() gale.Spout {
		return &ctxSpout{
			funcSpout: funcSpout{
				declare: func(d gale.OutputDeclarer) { d.Declare("n") },
				open:    func(s *funcSpout) error { ctx = s.tc.Context(); return nil },
				next: func(s *funcSpout) {
					if s.n == 0 {
						s.Collector.Emit(0, 0)
						s.n++
					}
				},
				close: func(s *funcSpout) { errInClose = s.tc.Context().Err() },
			},
			deactivate: func() { close(deactivated) },
		}
	}, 1)
	b.SetBolt("b", func() gale.Bolt {
		return &funcBolt{
			execute: func(b *funcBolt, tu *gale.Tuple) {
				close(entered)
				<-release
				errInExecute = b.tc.Context().Err()
				b.Collector.Ack(tu)
			},
			cleanup: func(b *funcBolt) { errInCleanup = b.tc.Context().Err() },
		}
	}, 1).ShuffleGrouping("s")
	conf := gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 60}
	lt, err := gale.StartLocal("ctx", conf, build(t, b), gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	if err := ctx.Err(); err != nil {
		t.Fatalf("Context while running: %v, want live", err)
	}
	stopped := make(chan struct{})
	go func() { lt.Stop(); close(stopped) }()
	<-deactivated
	// The tree is pending and the bolt holds it: Stop is draining.
	if err := ctx.Err(); err != nil {
		t.Errorf("Context during the drain: %v, want live", err)
	}
	close(release)
	<-stopped
	if errInExecute != nil {
		t.Errorf("Context in Execute during the drain: %v, want live", errInExecute)
	}
	if !errors.Is(errInClose, context.Canceled) || !errors.Is(errInCleanup, context.Canceled) {
		t.Errorf("Context in Close: %v, in Cleanup: %v; want both cancelled", errInClose, errInCleanup)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("Context after Stop: %v, want cancelled", ctx.Err())
	}
}

// ctxSpout is a funcSpout that reports its deactivation.
type ctxSpout struct {
	funcSpout
	deactivate func()
}

func (s *ctxSpout) Deactivate() { s.deactivate() }

// TestContextCancelledOnFailedStart: a spout's failed Open cancels the
// context before the bolt already prepared is cleaned up.
func TestContextCancelledOnFailedStart(t *testing.T) {
	var errInCleanup error
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("n") },
			open:    func(*funcSpout) error { return errors.New("no broker") },
		}
	}, 1)
	b.SetBolt("b", func() gale.Bolt {
		return &funcBolt{cleanup: func(b *funcBolt) { errInCleanup = b.tc.Context().Err() }}
	}, 1).ShuffleGrouping("s")
	_, err := gale.StartLocal("ctx", nil, build(t, b), gale.RunOptions{Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "no broker") {
		t.Fatalf("StartLocal: got %v, want the Open error", err)
	}
	if !errors.Is(errInCleanup, context.Canceled) {
		t.Errorf("Context in Cleanup after a failed start: %v, want cancelled", errInCleanup)
	}
}

// TestRunLocalCancelsBlockedOpen: an Open that waits on its Context, as a
// connector dialing a broker does, gives up when RunLocal's ctx ends.
func TestRunLocalCancelsBlockedOpen(t *testing.T) {
	opening := make(chan struct{})
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("n") },
			open: func(s *funcSpout) error {
				close(opening)
				<-s.tc.Context().Done()
				return s.tc.Context().Err()
			},
		}
	}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- gale.RunLocal(ctx, "ctx", nil, build(t, b), gale.RunOptions{Logger: testLogger(t)}) }()
	<-opening
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("RunLocal: got %v, want the Open's context.Canceled", err)
	}
}

// TestContextCancelledOnFailure: a panic under the kill-worker policy stops
// the topology at once, and the context with it.
func TestContextCancelledOnFailure(t *testing.T) {
	var ctx context.Context
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", seqSpout(1), 1)
	b.SetBolt("b", func() gale.Bolt {
		return &funcBolt{
			prepare: func(b *funcBolt) error { ctx = b.tc.Context(); return nil },
			execute: func(*funcBolt, *gale.Tuple) { panic("boom") },
		}
	}, 1).ShuffleGrouping("s")
	conf := gale.Config{gale.TopologyComponentPanicPolicy: gale.PanicPolicyKillWorker}
	err := gale.RunLocal(context.Background(), "ctx", conf, build(t, b), gale.RunOptions{Logger: testLogger(t)})
	var pe *gale.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("RunLocal: got %v, want the bolt's panic", err)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("Context after the failure: %v, want cancelled", ctx.Err())
	}
}

// TestSpoutStats checks the counters `gale run` shows: per spout
// component, tuples emitted, trees acked and failed, and none pending once
// every tree is resolved, and a complete latency for every tree acked;
// they hold after Stop.
func TestSpoutStats(t *testing.T) {
	const perTask = 50
	b := gale.NewTopologyBuilder()
	b.SetSpout("nums", seqSpout(perTask), 2).SetNumTasks(4)
	b.SetSpout("quiet", seqSpout(0), 1)
	b.SetBolt("b", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, tu *gale.Tuple) {
			if tu.GetInt(0)%10 == 0 {
				b.Collector.Fail(tu, nil)
				return
			}
			b.Collector.Ack(tu)
		}}
	}, 2).ShuffleGrouping("nums")
	lt, err := gale.StartLocal("stats", nil, build(t, b), gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	want := []metrics.Spout{
		{Component: "nums", Tasks: 4, Emitted: 4 * perTask, Acked: 4 * 45, Failed: 4 * 5, FailedByBolt: 4 * 5},
		{Component: "quiet", Tasks: 1},
	}
	var got []metrics.Spout
	testutil.Eventually(t, 10*time.Second, "every tree resolved", func() bool {
		got = bridge.SpoutStats(lt)
		return len(got) == 2 && got[0].Acked+got[0].Failed == 4*perTask && got[0].Pending == 0
	})
	if !slicesEqual(got, want) {
		t.Errorf("running: got %+v, want %+v", got, want)
	}
	lt.Stop()
	if got := bridge.SpoutStats(lt); !slicesEqual(got, want) {
		t.Errorf("after Stop: got %+v, want %+v", got, want)
	}
}

// slicesEqual compares the counters, and checks that each component's
// latency histogram counts one tree for each acked. The time spent
// throttled is on the system clock here: it is not compared
// (TestThrottled checks it).
func slicesEqual(a, b []metrics.Spout) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Latency.Count() != x.Acked {
			return false
		}
		x.Latency, y.Latency = metrics.Latency{}, metrics.Latency{}
		x.ThrottledNanos, y.ThrottledNanos = 0, 0
		x.Executors, y.Executors = nil, nil
		x.Outputs, y.Outputs = nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}
