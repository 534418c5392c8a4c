package galetest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

// taskSpout emits n tuples whose message ids name the task that emitted
// them ("task-i").
type taskSpout struct {
	gale.BaseSpout
	n, next int
	task    int
}

func (s *taskSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("i") }

func (s *taskSpout) Open(tc *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.task = tc.TaskID()
	return s.BaseSpout.Open(tc, c)
}

func (s *taskSpout) NextTuple() {
	if s.next == s.n {
		return
	}
	s.Collector.Emit(fmt.Sprintf("%d-%d", s.task, s.next), s.next)
	s.next++
}

// TestCompleteKeepsSpoutTasks: Result says which spout task saw each ack
// and each fail.
func TestCompleteKeepsSpoutTasks(t *testing.T) {
	const perTask = 10
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", func() gale.Spout { return &taskSpout{n: perTask} }, 3)
	b.SetBolt("odd-fails", func() gale.Bolt {
		return &bolt{execute: func(b *bolt, in *gale.Tuple) {
			if in.GetInt(0)%2 == 1 {
				b.Collector.Fail(in, errors.New("odd"))
				return
			}
			b.Collector.Ack(in)
		}}
	}, 2).ShuffleGrouping("s")
	res, err := run(t, b, galetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	taskOf := func(id any) int {
		var task, i int
		if _, err := fmt.Sscanf(id.(string), "%d-%d", &task, &i); err != nil {
			t.Fatalf("message id %v: %v", id, err)
		}
		return task
	}
	acks, fails := res.Acks("s"), res.Failed("s")
	if len(acks) != 3*perTask/2 || len(fails) != 3*perTask/2 {
		t.Fatalf("got %d acks and %d fails, want %d each", len(acks), len(fails), 3*perTask/2)
	}
	tasks := map[int]bool{}
	for i, a := range acks {
		if want := taskOf(a.MsgID); a.Task != want {
			t.Errorf("ack of %v: Task %d, want %d, the task that emitted it", a.MsgID, a.Task, want)
		}
		if id := res.Acked("s")[i]; id != a.MsgID {
			t.Errorf("Acked()[%d] = %v, Acks()[%d].MsgID = %v; want the same order", i, id, i, a.MsgID)
		}
		tasks[a.Task] = true
	}
	for _, f := range fails {
		if want := taskOf(f.MsgID); f.Task != want {
			t.Errorf("fail of %v: Task %d, want %d, the task that emitted it", f.MsgID, f.Task, want)
		}
	}
	if len(tasks) != 3 {
		t.Errorf("acks seen by tasks %v, want 3 distinct spout tasks", tasks)
	}
}

// TestCompleteReturnsErrors: Result.Errors has every error the components
// reported or caused, in order, with component, task and simulated time,
// beyond the few LocalTopology.Errors keeps.
func TestCompleteReturnsErrors(t *testing.T) {
	const reports = 100
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", fixed(1), 1)
	b.SetBolt("bad", func() gale.Bolt {
		return &bolt{execute: func(b *bolt, in *gale.Tuple) {
			for i := range reports {
				b.Collector.ReportError(fmt.Errorf("report %d", i))
			}
			if _, err := b.Collector.EmitStream("undeclared", []*gale.Tuple{in}, 1); err == nil {
				panic("emit on an undeclared stream succeeded")
			}
			panic("bad bolt") // the fail-tuple policy fails the tuple
		}}
	}, 1).ShuffleGrouping("s")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	clk := galetest.NewClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	// The errors are logged too: discard them, the test looks at Errors.
	res, err := galetest.Complete(context.Background(), topo, galetest.Options{Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	errs := res.Errors()
	if len(errs) != reports+2 {
		t.Fatalf("got %d errors, want %d: %d reports, the rejected emit and the panic", len(errs), reports+2, reports)
	}
	for i, e := range errs[:reports] {
		if e.Component != "bad" || e.Err.Error() != fmt.Sprintf("report %d", i) {
			t.Errorf("error %d: %s %v, want bad's report %d", i, e.Component, e.Err, i)
		}
	}
	if e := errs[reports]; e.Component != "bad" || !strings.Contains(e.Err.Error(), "undeclared") {
		t.Errorf("error %d: %s %v, want bad's rejected emit naming the stream", reports, e.Component, e.Err)
	}
	var pe *gale.PanicError
	if e := errs[reports+1]; e.Component != "bad" || !errors.As(e.Err, &pe) {
		t.Errorf("error %d: %s %v, want bad's panic", reports+1, e.Component, e.Err)
	}
	for i, e := range errs {
		if e.Task != errs[0].Task || e.Task == 0 {
			t.Errorf("error %d from task %d, want bad's one task (%d)", i, e.Task, errs[0].Task)
		}
		if !e.Time.Equal(clk.Now()) {
			t.Errorf("error %d at %s, want the simulated time %s", i, e.Time, clk.Now())
		}
	}
}

// clockBolt records the topology's time, as its context reads it, at
// Prepare and at every tick tuple, and holds the tuples it gets (so that
// Complete moves the clock until they time out).
type clockBolt struct {
	gale.BaseBolt
	tc  *gale.TopologyContext
	rec *timeRecord
}

type timeRecord struct {
	mu       sync.Mutex
	prepared time.Time
	ticks    []time.Time
}

func (*clockBolt) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *clockBolt) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	b.tc = tc
	b.rec.mu.Lock()
	b.rec.prepared = tc.Now()
	b.rec.mu.Unlock()
	return b.BaseBolt.Prepare(tc, c)
}

func (b *clockBolt) Execute(in *gale.Tuple) {
	if in.IsTick() {
		b.rec.mu.Lock()
		b.rec.ticks = append(b.rec.ticks, b.tc.Now())
		b.rec.mu.Unlock()
	}
}

// TestCompleteBoltReadsSimulatedTime: a bolt's TopologyContext.Now is the
// simulated clock, and Complete delivers every tick tuple due as it moves
// the clock (the clock's tickers lose none): with tick tuples every
// second, and the timeout check every 3 s of a 30 s timeout, the bolt
// gets one tick per simulated second.
func TestCompleteBoltReadsSimulatedTime(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := galetest.NewClock(start)
	rec := &timeRecord{}
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", fixed(1), 1)
	b.SetBolt("hold", func() gale.Bolt { return &clockBolt{rec: rec} }, 1).
		ShuffleGrouping("s").AddConfiguration(gale.TopologyTickTupleFreqSecs, 1)
	res, err := run(t, b, galetest.Options{Clock: clk, Config: gale.Config{gale.TopologyMessageTimeoutSecs: 30}})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Failed("s"); len(f) != 1 || !errors.Is(f[0].Reason, gale.ErrTimeout) {
		t.Fatalf("failed %v, want the one tuple timed out", f)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.prepared.Equal(start) {
		t.Errorf("Now at Prepare %s, want the clock's start %s", rec.prepared, start)
	}
	if want := int(res.Elapsed / time.Second); len(rec.ticks) != want {
		t.Fatalf("the bolt got %d tick tuples over %s of simulated time, want %d, one a second", len(rec.ticks), res.Elapsed, want)
	}
	// Each tick is executed at or after its due time and in order; the
	// clock moves in steps of 3 s, so a tick can see up to 2 s more.
	for i, at := range rec.ticks {
		due := start.Add(time.Duration(i+1) * time.Second)
		if at.Before(due) || at.After(due.Add(2*time.Second)) || i > 0 && at.Before(rec.ticks[i-1]) {
			t.Errorf("tick %d read Now = %s, want between %s and %s, not before the tick before", i, at, due, due.Add(2*time.Second))
		}
	}
}
