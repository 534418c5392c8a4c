package gale_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/testutil"
)

// lifecycle counts each task's lifecycle calls and notes calls out of
// order.
type lifecycle struct {
	mu     sync.Mutex
	calls  map[string]int // "component/task/call" → count
	closed map[string]bool
	errs   []string
}

func newLifecycle() *lifecycle {
	return &lifecycle{calls: map[string]int{}, closed: map[string]bool{}}
}

func (l *lifecycle) note(tc *gale.TopologyContext, call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := fmt.Sprintf("%s/%d", tc.ComponentID(), tc.TaskID())
	if l.closed[key] {
		l.errs = append(l.errs, fmt.Sprintf("%s: %s after Close/Cleanup", key, call))
	}
	if call == "close" || call == "cleanup" {
		l.closed[key] = true
	}
	l.calls[key+"/"+call]++
}

func (l *lifecycle) count(component string, task int, call string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[fmt.Sprintf("%s/%d/%s", component, task, call)]
}

type lcSpout struct {
	funcSpout
	lc *lifecycle
}

func (s *lcSpout) Activate()   { s.lc.note(s.tc, "activate") }
func (s *lcSpout) Deactivate() { s.lc.note(s.tc, "deactivate") }

// lcBasic is a BasicBolt that notes its lifecycle.
type lcBasic struct {
	lc *lifecycle
	tc *gale.TopologyContext
}

func (b *lcBasic) DeclareOutputFields(gale.OutputDeclarer) {}
func (b *lcBasic) Prepare(tc *gale.TopologyContext) error {
	b.tc = tc
	b.lc.note(tc, "prepare")
	return nil
}
func (b *lcBasic) Execute(*gale.Tuple, *gale.BasicCollector) error { return nil }
func (b *lcBasic) Cleanup()                                        { b.lc.note(b.tc, "cleanup") }

// lcTopology: spout "src" (3 tasks on 2 executors) emitting perTask
// tracked tuples per task, bolt "b" (4 tasks on 2 executors) failing every
// third tuple, basic bolt "basic" (2 tasks on 1 executor).
func lcTopology(t *testing.T, lc *lifecycle, perTask int, openErr func(index int) error) *gale.Topology {
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		s := &lcSpout{lc: lc}
		s.declare = func(d gale.OutputDeclarer) { d.Declare("id") }
		s.open = func(fs *funcSpout) error {
			lc.note(fs.tc, "open")
			if openErr != nil {
				return openErr(fs.tc.TaskIndex())
			}
			return nil
		}
		s.next = func(fs *funcSpout) {
			if fs.n < perTask {
				id := fmt.Sprintf("%d/%d", fs.tc.TaskID(), fs.n)
				fs.Collector.Emit(id, id)
				fs.n++
			}
		}
		s.ack = func(fs *funcSpout, id any) { lc.note(fs.tc, "ack "+id.(string)) }
		s.fail = func(fs *funcSpout, id any, _ error) { lc.note(fs.tc, "fail "+id.(string)) }
		s.close = func(fs *funcSpout) { lc.note(fs.tc, "close") }
		return s
	}, 2).SetNumTasks(3)
	b.SetBolt("b", func() gale.Bolt {
		return &funcBolt{
			prepare: func(b *funcBolt) error { lc.note(b.tc, "prepare"); return nil },
			execute: func(b *funcBolt, in *gale.Tuple) {
				var n int
				fmt.Sscanf(strings.Split(in.GetString(0), "/")[1], "%d", &n)
				if n%3 == 0 {
					b.Collector.Fail(in, errBoom)
				} else {
					b.Collector.Ack(in)
				}
			},
			cleanup: func(b *funcBolt) { lc.note(b.tc, "cleanup") },
		}
	}, 2).SetNumTasks(4).ShuffleGrouping("src")
	b.SetBasicBolt("basic", func() gale.BasicBolt { return &lcBasic{lc: lc} }, 1).SetNumTasks(2).ShuffleGrouping("src")
	return build(t, b)
}

// TestLifecycleOnce: at shutdown every spout task is deactivated and
// closed exactly once and every bolt task cleaned up exactly once, after
// the last Ack or Fail; spout Ack and Fail are called on the task that
// emitted the message.
func TestLifecycleOnce(t *testing.T) {
	const perTask = 12
	lc := newLifecycle()
	topo := lcTopology(t, lc, perTask, nil)
	lt, rec, _ := startLocal(t, topo, nil, nil)
	testutil.Eventually(t, 10*time.Second, "every tree done", func() bool {
		return len(rec.Acked("src"))+len(rec.Failed("src")) == 3*perTask
	})
	lt.Stop()
	lt.Stop() // idempotent

	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, e := range lc.errs {
		t.Error(e)
	}
	check := func(component string, call string, want int) {
		for _, task := range bridge.LocalOf(lt).TaskIDs(component) {
			if got := lc.calls[fmt.Sprintf("%s/%d/%s", component, task, call)]; got != want {
				t.Errorf("%s task %d: %s called %d times, want %d", component, task, call, got, want)
			}
		}
	}
	check("src", "open", 1)
	check("src", "activate", 1)
	check("src", "deactivate", 1)
	check("src", "close", 1)
	check("b", "prepare", 1)
	check("b", "cleanup", 1)
	check("basic", "prepare", 1)
	check("basic", "cleanup", 1)
	if got := len(bridge.LocalOf(lt).TaskIDs("src")) + len(bridge.LocalOf(lt).TaskIDs("b")) + len(bridge.LocalOf(lt).TaskIDs("basic")); got != 9 {
		t.Errorf("got %d tasks, want 9", got)
	}
	// Each spout task saw exactly its own ids acked (n%3 != 0) or failed.
	for _, task := range bridge.LocalOf(lt).TaskIDs("src") {
		for n := range perTask {
			id := fmt.Sprintf("%d/%d", task, n)
			want := "ack " + id
			if n%3 == 0 {
				want = "fail " + id
			}
			for _, other := range bridge.LocalOf(lt).TaskIDs("src") {
				got := lc.calls[fmt.Sprintf("src/%d/%s", other, want)]
				if other == task && got != 1 {
					t.Errorf("task %d: %q called %d times, want once", task, want, got)
				}
				if other != task && got != 0 {
					t.Errorf("%q called on task %d, want only on the emitting task %d", want, other, task)
				}
			}
		}
	}
}

// TestStartErrors: an Open or Prepare error stops StartLocal (and RunLocal)
// with an error naming the component and wrapping the cause; what was
// already set up is closed or cleaned up exactly once, and nothing else is
// called.
func TestStartErrors(t *testing.T) {
	errOpen := errors.New("cannot connect")
	tests := []struct {
		name     string
		run      func(topo *gale.Topology) error
		failTask int // task index whose Open fails
	}{
		{"StartLocal, first task fails", func(topo *gale.Topology) error {
			lt, err := gale.StartLocal("test", nil, topo, gale.RunOptions{Logger: testLogger(t)})
			if err == nil {
				lt.Stop()
			}
			return err
		}, 0},
		{"StartLocal, second task fails", func(topo *gale.Topology) error {
			lt, err := gale.StartLocal("test", nil, topo, gale.RunOptions{Logger: testLogger(t)})
			if err == nil {
				lt.Stop()
			}
			return err
		}, 1},
		{"RunLocal", func(topo *gale.Topology) error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return gale.RunLocal(ctx, "test", nil, topo, gale.RunOptions{Logger: testLogger(t)})
		}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc := newLifecycle()
			topo := lcTopology(t, lc, 1, func(i int) error {
				if i == tc.failTask {
					return errOpen
				}
				return nil
			})
			err := tc.run(topo)
			if !errors.Is(err, errOpen) || !strings.Contains(err.Error(), `"src"`) {
				t.Fatalf("got error %v, want one naming spout \"src\" and wrapping %v", err, errOpen)
			}
			lc.mu.Lock()
			defer lc.mu.Unlock()
			var opened, closed, prepared, cleaned int
			for k, n := range lc.calls {
				switch {
				case strings.HasSuffix(k, "/open"):
					opened += n
				case strings.HasSuffix(k, "/close"):
					closed += n
				case strings.HasSuffix(k, "/prepare"):
					prepared += n
				case strings.HasSuffix(k, "/cleanup"):
					cleaned += n
				case strings.Contains(k, "/ack ") || strings.Contains(k, "/fail ") || strings.HasSuffix(k, "activate"):
					t.Errorf("%s called %d times, want never", k, n)
				}
			}
			if opened != tc.failTask+1 || closed != tc.failTask {
				t.Errorf("%d spout tasks opened and %d closed, want %d and %d (the failed one is not closed)", opened, closed, tc.failTask+1, tc.failTask)
			}
			if prepared != 6 || cleaned != 6 {
				t.Errorf("%d bolt tasks prepared and %d cleaned up, want 6 and 6", prepared, cleaned)
			}
			for k, n := range lc.calls {
				if n != 1 {
					t.Errorf("%s called %d times, want at most once", k, n)
				}
			}
		})
	}
}

func TestPrepareErrorNamesTheBolt(t *testing.T) {
	errPrep := errors.New("no database")
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", wordSpout, 1)
	b.SetBolt("db", func() gale.Bolt {
		return &funcBolt{prepare: func(*funcBolt) error { return errPrep }}
	}, 1).ShuffleGrouping("src")
	lt, err := gale.StartLocal("test", nil, build(t, b), gale.RunOptions{Logger: testLogger(t)})
	if err == nil {
		lt.Stop()
		t.Fatal("StartLocal succeeded, want the Prepare error")
	}
	if !errors.Is(err, errPrep) || !strings.Contains(err.Error(), `"db"`) {
		t.Fatalf("got error %v, want one naming bolt \"db\" and wrapping %v", err, errPrep)
	}
}

// TestRunLocalBadConfig: RunLocal rejects a bad topology config before
// opening anything, with an error naming the key.
func TestRunLocalBadConfig(t *testing.T) {
	tests := []struct {
		name string
		conf gale.Config
		want error
		key  string
	}{
		{"unknown key", gale.Config{"topology.no.such.key": 1}, gale.ErrUnknownKey, "topology.no.such.key"},
		{"typo", gale.Config{"topology.message.timout.secs": 5}, gale.ErrUnknownKey, "topology.message.timout.secs"},
		{"cluster key in topology config", gale.Config{config.NimbusSeeds: []string{"a"}}, gale.ErrForbiddenOverride, config.NimbusSeeds},
		{"wrong type", gale.Config{gale.TopologyMessageTimeoutSecs: "ten"}, gale.ErrWrongType, gale.TopologyMessageTimeoutSecs},
		{"out of range", gale.Config{gale.TopologyMessageTimeoutSecs: 0}, gale.ErrOutOfRange, gale.TopologyMessageTimeoutSecs},
		{"unknown panic policy", gale.Config{gale.TopologyComponentPanicPolicy: "ignore"}, gale.ErrOutOfRange, gale.TopologyComponentPanicPolicy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opened counter[string]
			b := gale.NewTopologyBuilder()
			b.SetSpout("src", func() gale.Spout {
				return &funcSpout{
					declare: func(d gale.OutputDeclarer) { d.Declare("x") },
					open:    func(*funcSpout) error { opened.inc("src"); return nil },
				}
			}, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := gale.RunLocal(ctx, "test", tc.conf, build(t, b), gale.RunOptions{Logger: testLogger(t)})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got error %v, want one wrapping %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.key) {
				t.Errorf("error %q does not name %q", err, tc.key)
			}
			if n := opened.get("src"); n != 0 {
				t.Errorf("spout opened %d times, want 0", n)
			}
		})
	}
}

// TestKillWorkerPolicy: under the kill-worker panic policy a component's
// panic stops RunLocal, which returns a *gale.PanicError naming it.
func TestKillWorkerPolicy(t *testing.T) {
	tests := []struct {
		name      string
		component string
		bolt      func(b *funcBolt, in *gale.Tuple)
		spoutNext func(s *funcSpout)
	}{
		{"bolt panics", "bolt", func(*funcBolt, *gale.Tuple) { panic("bolt broke") }, nil},
		{"spout panics", "src", nil, func(s *funcSpout) {
			if s.n == 3 {
				panic("spout broke")
			}
			s.Collector.Emit(s.n, s.n)
			s.n++
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var closed counter[string]
			b := gale.NewTopologyBuilder()
			b.SetSpout("src", func() gale.Spout {
				s := seqSpout(10)().(*funcSpout)
				if tc.spoutNext != nil {
					s.next = tc.spoutNext
				}
				s.close = func(*funcSpout) { closed.inc("src") }
				return s
			}, 1)
			b.SetBolt("bolt", func() gale.Bolt {
				return &funcBolt{execute: tc.bolt, cleanup: func(*funcBolt) { closed.inc("bolt") }}
			}, 1).ShuffleGrouping("src")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := gale.RunLocal(ctx, "test", gale.Config{gale.TopologyComponentPanicPolicy: gale.PanicPolicyKillWorker},
				build(t, b), gale.RunOptions{Logger: testLogger(t)})
			var pe *gale.PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("RunLocal returned %v, want a *gale.PanicError", err)
			}
			if ctx.Err() != nil {
				t.Fatalf("RunLocal returned only after its context ended")
			}
			if pe.Component != tc.component || pe.Stack == "" {
				t.Errorf("PanicError names %q with stack %d bytes, want %q with a stack", pe.Component, len(pe.Stack), tc.component)
			}
			if got := closed.snapshot(); got["src"] != 1 || got["bolt"] != 1 {
				t.Errorf("Close/Cleanup calls %v, want one each", got)
			}
		})
	}
}

// TestRunLocalDrainsOnCancel: when RunLocal's context ends, trees in
// flight complete before the spouts close.
func TestRunLocalDrainsOnCancel(t *testing.T) {
	const n = 50
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var acked list[int]
	var failed list[error]
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		s := seqSpout(n)().(*funcSpout)
		next := s.next
		s.next = func(s *funcSpout) {
			next(s)
			if s.n == n {
				cancel() // stop while the last trees are in flight
			}
		}
		s.ack = func(_ *funcSpout, id any) { acked.add(id.(int)) }
		s.fail = func(_ *funcSpout, _ any, err error) { failed.add(err) }
		return s
	}, 1)
	b.SetBolt("slowish", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("seq") },
			execute: func(b *funcBolt, in *gale.Tuple) {
				b.Collector.Emit(in, in.Value(0))
				b.Collector.Ack(in)
			},
		}
	}, 2).ShuffleGrouping("src")
	b.SetBolt("sink", sinkBolt, 2).ShuffleGrouping("slowish")
	if err := gale.RunLocal(ctx, "test", nil, build(t, b), gale.RunOptions{Logger: testLogger(t)}); err != nil {
		t.Fatalf("RunLocal: %v", err)
	}
	got := acked.all()
	slices.Sort(got)
	if !slices.Equal(got, rangeInts(0, n)) {
		t.Errorf("acked %d of %d before close (failed: %v)", len(got), n, failed.all())
	}
}

// TestErrorsAreKept checks that reported errors, rejected emits and panics
// are visible to the operator, newest last, with their component and task.
func TestErrorsAreKept(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", func() gale.Spout { return &galetest.FixedSpout{Fields: []string{"x"}} }, 1)
	b.SetBolt("b", func() gale.Bolt { return &errorBolt{} }, 1).ShuffleGrouping("s")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	replaced, err := bridge.ReplaceSpout(topo, "s", func() gale.Spout {
		return &galetest.FixedSpout{Fields: []string{"x"}, Values: []gale.Values{{1}}}
	})
	if err != nil {
		t.Fatal(err)
	}
	topo = replaced.(*gale.Topology)
	lt, err := gale.StartLocal("errs", nil, topo, gale.RunOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	deadline := time.Now().Add(10 * time.Second)
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for {
		errs, n := lt.Errors()
		if n >= 3 {
			want := []string{"reported", "does not declare", "panicked"}
			for i, e := range errs[:3] {
				if e.Component != "b" || !strings.Contains(e.Err.Error(), want[i]) {
					t.Errorf("error %d: got %s task %d %q, want component b and %q", i, e.Component, e.Task, e.Err, want[i])
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d errors after 10s, want 3: %v", n, errs)
		}
		<-poll.C
	}
}

type errorBolt struct{ gale.BaseBolt }

func (*errorBolt) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *errorBolt) Execute(t *gale.Tuple) {
	b.Collector.ReportError(errors.New("reported"))
	b.Collector.EmitStream("nope", nil, 1)
	panic("boom")
}
