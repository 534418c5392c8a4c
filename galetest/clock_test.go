package galetest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

var clockStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// take receives a tick from tk or fails the test; in a synctest bubble
// the hour passes as soon as nothing else can run.
func take(t *testing.T, tk gale.Ticker, what string) time.Time {
	t.Helper()
	select {
	case at := <-tk.C():
		return at
	case <-time.After(time.Hour):
		t.Fatalf("%s never came", what)
		return time.Time{}
	}
}

// TestClockTickerLosesNoTick: a ticker owes one tick per period that
// Advance passes, delivers them one at a time in order, each carrying the
// time it was due, and owes nothing more until the next period passes.
func TestClockTickerLosesNoTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := galetest.NewClock(clockStart)
		tk := c.NewTicker(time.Second)
		defer tk.Stop()
		c.Advance(3500 * time.Millisecond)
		for i := 1; i <= 3; i++ {
			if at, want := take(t, tk, fmt.Sprintf("tick %d", i)), clockStart.Add(time.Duration(i)*time.Second); !at.Equal(want) {
				t.Errorf("tick %d carries %s, want %s", i, at, want)
			}
		}
		synctest.Wait()
		if n := len(tk.C()); n != 0 {
			t.Fatalf("%d ticks after 3.5 periods and 3 taken, want none", n)
		}
		c.Advance(500 * time.Millisecond)
		if at, want := take(t, tk, "tick 4"), clockStart.Add(4*time.Second); !at.Equal(want) {
			t.Errorf("tick 4 carries %s, want %s", at, want)
		}
	})
}

// TestClockStopDropsOwedTicks: Stop ends the delivery of ticks nobody
// takes (the bubble ends only when every goroutine has).
func TestClockStopDropsOwedTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := galetest.NewClock(clockStart)
		tk := c.NewTicker(time.Second)
		c.Advance(time.Minute)
		take(t, tk, "tick 1")
		tk.Stop()
		tk.Stop() // idempotent
		if err := c.WaitHandled(t.Context()); err != nil {
			t.Fatalf("WaitHandled after Stop: %v, want nil: a stopped ticker owes nothing", err)
		}
	})
}

// TestClockWaitHandled: WaitHandled returns once every tick owed has been
// taken, or for a ticker a runtime reads (TrackDone), reported handled
// (TickDone); until then it waits, and it gives up with ctx.
func TestClockWaitHandled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := galetest.NewClock(clockStart)
		plain := c.NewTicker(time.Second)
		defer plain.Stop()
		tracked := c.NewTicker(2 * time.Second)
		defer tracked.Stop()
		rt, ok := tracked.(interface {
			TrackDone()
			TickDone()
		})
		if !ok {
			t.Fatal("the clock's ticker does not take TrackDone and TickDone from the runtime")
		}
		rt.TrackDone()
		c.Advance(4 * time.Second) // plain owes 4 ticks, tracked 2

		var returned atomic.Bool
		done := make(chan error, 1)
		go func() {
			done <- c.WaitHandled(context.Background())
			returned.Store(true)
		}()
		step := func(what string, want bool) {
			t.Helper()
			synctest.Wait()
			if returned.Load() != want {
				t.Fatalf("after %s: WaitHandled returned %v, want %v", what, returned.Load(), want)
			}
		}
		step("nothing taken", false)
		for i := range 4 {
			take(t, plain, fmt.Sprintf("plain tick %d", i+1))
		}
		step("the plain ticks taken", false)
		take(t, tracked, "tracked tick 1")
		take(t, tracked, "tracked tick 2")
		step("the tracked ticks taken, none handled", false)
		rt.TickDone()
		step("one tracked tick handled", false)
		rt.TickDone()
		step("both tracked ticks handled", true)
		if err := <-done; err != nil {
			t.Fatalf("WaitHandled: %v", err)
		}

		c.Advance(time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := c.WaitHandled(ctx); err != context.DeadlineExceeded {
			t.Fatalf("WaitHandled with a tick nobody takes: %v, want context.DeadlineExceeded", err)
		}
	})
}

// tickCounter counts the tick tuples it executes.
type tickCounter struct {
	gale.BaseBolt
	n *atomic.Int64
}

func (*tickCounter) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *tickCounter) Execute(in *gale.Tuple) {
	if in.IsTick() {
		b.n.Add(1)
	}
}

// TestClockWaitHandledByRuntime: after Advance, WaitHandled returns once
// the topology has executed every tick tuple that fell due, so a test can
// look at once.
func TestClockWaitHandledByRuntime(t *testing.T) {
	var ticks atomic.Int64
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", fixed(0), 1)
	b.SetBolt("ticks", func() gale.Bolt { return &tickCounter{n: &ticks} }, 1).
		ShuffleGrouping("s").AddConfiguration(gale.TopologyTickTupleFreqSecs, 1)
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	clk := galetest.NewClock(clockStart)
	lt, err := gale.StartLocal("ticks", nil, topo, gale.RunOptions{Logger: testLogger(t), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for step, want := range []int64{3, 3, 8} {
		clk.Advance([]time.Duration{3 * time.Second, 500 * time.Millisecond, 5 * time.Second}[step])
		if err := clk.WaitHandled(ctx); err != nil {
			t.Fatalf("step %d: WaitHandled: %v", step, err)
		}
		if got := ticks.Load(); got != want {
			t.Fatalf("step %d: %d tick tuples executed when WaitHandled returned, want %d", step, got, want)
		}
	}
}
