package gale_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/testutil"
)

// classifyingTopology: one spout of n sequence numbers, and a bolt with
// tasks tasks that fails seq%4 == 0 as permanent, 1 as delayable (after
// seq ms), 2 with a plain error and acks 3.
func classifyingTopology(t *testing.T, n, tasks int) *gale.Topology {
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", seqSpout(n), 1)
	b.SetBolt("check", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
			seq := in.GetInt(0)
			err := fmt.Errorf("seq %d: %w", seq, errBoom)
			switch seq % 4 {
			case 0:
				b.Collector.Fail(in, gale.Permanent(err))
			case 1:
				b.Collector.Fail(in, gale.Delayed(err, time.Duration(seq)*time.Millisecond))
			case 2:
				b.Collector.Fail(in, err)
			default:
				b.Collector.Ack(in)
			}
		}}
	}, tasks).ShuffleGrouping("src")
	return build(t, b)
}

// checkClasses fails t unless each failure carries the class and delay
// the bolt gave it, and the bolt's message.
func checkClasses(t *testing.T, n int, failed map[int]error) {
	t.Helper()
	if len(failed) != n*3/4 {
		t.Fatalf("%d failures, want %d", len(failed), n*3/4)
	}
	for seq, reason := range failed {
		class, after := gale.ClassOf(reason)
		want, wantAfter := gale.ClassTransient, time.Duration(0)
		switch seq % 4 {
		case 0:
			want = gale.ClassPermanent
		case 1:
			want, wantAfter = gale.ClassDelayable, time.Duration(seq)*time.Millisecond
		}
		if class != want || after != wantAfter {
			t.Errorf("seq %d: ClassOf(%v) = %v, %v; want %v, %v", seq, reason, class, after, want, wantAfter)
		}
		var fe *gale.FailedError
		if !errors.As(reason, &fe) || fe.Component != "check" {
			t.Errorf("seq %d: reason %v (%T) is not a FailedError naming the bolt", seq, reason, reason)
		}
		if want := fmt.Sprintf("seq %d: boom", seq); fe == nil || fe.Err == nil || fe.Err.Error() != want {
			t.Errorf("seq %d: the bolt's error reads %v, want %q", seq, fe, want)
		}
	}
}

// TestFailureClassReachesSpout: the class a bolt fails a tuple with, and a
// delayable failure's delay, reach the spout's Fail reason.
func TestFailureClassReachesSpout(t *testing.T) {
	const n = 40
	res := complete(t, classifyingTopology(t, n, 2), galetest.Options{})
	failed := map[int]error{}
	for _, f := range res.Failed("src") {
		failed[f.MsgID.(int)] = f.Reason
	}
	checkClasses(t, n, failed)
	if !errors.Is(failed[0], errBoom) {
		t.Errorf("in one process the bolt's own error is kept: errors.Is(%v, errBoom) = false", failed[0])
	}
}

// TestFailureClassCrossesWorkers: the same when the bolt runs in another
// worker than the spout and the failure travels over TCP.
func TestFailureClassCrossesWorkers(t *testing.T) {
	const n = 200
	rec := newRecorder(galetest.NewClock(testEpoch))
	// Executors in id order: check 0–1, src 2. Worker 1 runs both bolt tasks, worker 0 the spout, so every
	// failure crosses.
	topo := classifyingTopology(t, n, 2)
	execs := []int{1, 1, 0}
	startWorkersWith(t, 2, topo, gale.Config{}, workerSetup{
		obs:   func(int) *bridge.Observer { return rec.observer() },
		execs: [][]int{execs, execs},
	})
	testutil.Eventually(t, 10*time.Second, "every tuple acked or failed", func() bool {
		return len(rec.Acked("src"))+len(rec.Failed("src")) >= n
	})
	failed := map[int]error{}
	remote := 0
	for _, f := range rec.Failed("src") {
		failed[f.id.(int)] = f.reason
		var re *gale.RemoteError
		if errors.As(f.reason, &re) {
			remote++
		}
	}
	checkClasses(t, n, failed)
	if remote != len(failed) {
		t.Errorf("%d of %d failures came over the wire (a *gale.RemoteError): the test does not cross workers", remote, len(failed))
	}
}

// TestBoltWakeup: a bolt acks its input from a function run on its own
// goroutine after another goroutine calls wake, as a sink does when a
// broker acknowledges a write.
func TestBoltWakeup(t *testing.T) {
	const n = 300
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", seqSpout(n), 1)
	b.SetBolt("sink", func() gale.Bolt { return &asyncAckBolt{} }, 2).ShuffleGrouping("src")
	res := complete(t, build(t, b), galetest.Options{})
	if got := len(res.Acked("src")); got != n {
		t.Fatalf("%d of %d acked", got, n)
	}
	if f := res.Failed("src"); len(f) > 0 {
		t.Fatalf("%d failed: %v", len(f), f[0].Reason)
	}
}

// asyncAckBolt hands each input to a goroutine of its own that completes
// it and wakes the bolt, which acks it from the wakeup function.
type asyncAckBolt struct {
	gale.BaseBolt
	wake  func()
	work  chan *gale.Tuple
	mu    sync.Mutex
	done  []*gale.Tuple
	wg    sync.WaitGroup
	owner int64 // goroutine-confined check: touched only on the task's goroutine
}

func (b *asyncAckBolt) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *asyncAckBolt) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	b.BaseBolt.Prepare(tc, c)
	b.work = make(chan *gale.Tuple, 16)
	b.wake = c.Wakeup(func() {
		b.mu.Lock()
		done := b.done
		b.done = nil
		b.mu.Unlock()
		for _, t := range done {
			b.owner++ // the race detector flags this if fn ran elsewhere
			b.Collector.Ack(t)
		}
	})
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for t := range b.work {
			b.mu.Lock()
			b.done = append(b.done, t)
			b.mu.Unlock()
			b.wake()
		}
	}()
	return nil
}

func (b *asyncAckBolt) Execute(t *gale.Tuple) {
	b.owner++
	b.work <- t
}

func (b *asyncAckBolt) Cleanup() {
	close(b.work)
	b.wg.Wait()
}
