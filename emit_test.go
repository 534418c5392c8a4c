package gale_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

// emitCase is one bad emit, tried from a spout, a bolt and a basic bolt.
// Each component declares default ("a", "b"), stream "s" ("x") and direct
// stream "d" ("x").
type emitCase struct {
	name   string
	stream string // the stream the error must name
	names  string // more the error must say, if set
	want   error
	spout  func(c *gale.SpoutCollector, task int) ([]int, error)
	bolt   func(c *gale.BoltCollector, in *gale.Tuple, task int) ([]int, error)
	basic  func(c *gale.BasicCollector, task int) ([]int, error)
}

var emitCases = []emitCase{
	{
		name: "undeclared stream", stream: "nope", want: gale.ErrUndeclaredStream,
		spout: func(c *gale.SpoutCollector, _ int) ([]int, error) { return c.EmitStream("nope", "bad", 1) },
		bolt: func(c *gale.BoltCollector, in *gale.Tuple, _ int) ([]int, error) {
			return c.EmitStream("nope", []*gale.Tuple{in}, 1)
		},
		basic: func(c *gale.BasicCollector, _ int) ([]int, error) { return c.EmitStream("nope", 1) },
	},
	{
		name: "too few values", stream: gale.DefaultStream, want: gale.ErrWrongArity,
		spout: func(c *gale.SpoutCollector, _ int) ([]int, error) { return c.Emit("bad", 1) },
		bolt:  func(c *gale.BoltCollector, in *gale.Tuple, _ int) ([]int, error) { return c.Emit(in, 1) },
		basic: func(c *gale.BasicCollector, _ int) ([]int, error) { return c.Emit(1) },
	},
	{
		name: "too many values", stream: "s", want: gale.ErrWrongArity,
		spout: func(c *gale.SpoutCollector, _ int) ([]int, error) { return c.EmitStream("s", "bad", 1, 2) },
		bolt: func(c *gale.BoltCollector, in *gale.Tuple, _ int) ([]int, error) {
			return c.EmitStream("s", nil, 1, 2)
		},
		basic: func(c *gale.BasicCollector, _ int) ([]int, error) { return c.EmitStream("s", 1, 2) },
	},
	{
		name: "EmitDirect on a non-direct stream", stream: "s", want: gale.ErrDirect,
		spout: func(c *gale.SpoutCollector, task int) ([]int, error) { return c.EmitDirect(task, "s", "bad", 1) },
		bolt: func(c *gale.BoltCollector, in *gale.Tuple, task int) ([]int, error) {
			return c.EmitDirect(task, "s", []*gale.Tuple{in}, 1)
		},
		basic: func(c *gale.BasicCollector, task int) ([]int, error) { return c.EmitDirect(task, "s", 1) },
	},
	{
		name: "EmitDirect to a negative task", stream: "d", names: "task -1", want: gale.ErrDirect,
		spout: func(c *gale.SpoutCollector, _ int) ([]int, error) { return c.EmitDirect(-1, "d", "bad", 1) },
		bolt: func(c *gale.BoltCollector, in *gale.Tuple, _ int) ([]int, error) {
			return c.EmitDirect(-1, "d", []*gale.Tuple{in}, 1)
		},
		basic: func(c *gale.BasicCollector, _ int) ([]int, error) { return c.EmitDirect(-1, "d", 1) },
	},
	{
		name: "Emit on a direct stream", stream: "d", want: gale.ErrDirect,
		spout: func(c *gale.SpoutCollector, _ int) ([]int, error) { return c.EmitStream("d", "bad", 1) },
		bolt: func(c *gale.BoltCollector, in *gale.Tuple, _ int) ([]int, error) {
			return c.EmitStream("d", []*gale.Tuple{in}, 1)
		},
		basic: func(c *gale.BasicCollector, _ int) ([]int, error) { return c.EmitStream("d", 1) },
	},
}

func declareEmitStreams(d gale.OutputDeclarer) {
	d.Declare("a", "b")
	d.DeclareStream("s", "x")
	d.DeclareDirectStream("d", "x")
}

type emitResult struct {
	component, caseName string
	tasks               []int
	err                 error
	pending             int // spout: Pending() after the bad emit
}

// basicEmitter is a BasicBolt that tries every bad emit on its first input.
type basicEmitter struct {
	gale.BaseBasicBolt
	results *list[emitResult]
	task    int
	done    bool
}

func (b *basicEmitter) DeclareOutputFields(d gale.OutputDeclarer) { declareEmitStreams(d) }

func (b *basicEmitter) Prepare(tc *gale.TopologyContext) error {
	b.task = tc.TaskID()
	return nil
}

func (b *basicEmitter) Execute(_ *gale.Tuple, c *gale.BasicCollector) error {
	if !b.done {
		b.done = true
		for _, ec := range emitCases {
			tasks, err := ec.basic(c, b.task)
			b.results.add(emitResult{component: "basic", caseName: ec.name, tasks: tasks, err: err})
		}
	}
	return nil
}

// TestEmitErrors checks that every kind of bad emit, from a spout, a bolt
// and a basic bolt, returns an error wrapping the right sentinel and naming
// the component and stream, without panicking and without leaving a tuple
// tree behind.
func TestEmitErrors(t *testing.T) {
	var results list[emitResult]
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		return &funcSpout{
			declare: declareEmitStreams,
			next: func(s *funcSpout) {
				if s.n > 0 {
					return
				}
				s.n++
				for _, ec := range emitCases {
					tasks, err := ec.spout(s.Collector, s.tc.TaskID())
					results.add(emitResult{component: "src", caseName: ec.name, tasks: tasks, err: err, pending: s.Collector.Pending()})
				}
				if _, err := s.Collector.Emit(0, 1, 2); err != nil {
					panic(err)
				}
			},
		}
	}, 1)
	b.SetBolt("bolt", func() gale.Bolt {
		return &funcBolt{
			declare: declareEmitStreams,
			execute: func(b *funcBolt, in *gale.Tuple) {
				for _, ec := range emitCases {
					tasks, err := ec.bolt(b.Collector, in, b.tc.TaskID())
					results.add(emitResult{component: "bolt", caseName: ec.name, tasks: tasks, err: err})
				}
				b.Collector.Ack(in)
			},
		}
	}, 1).ShuffleGrouping("src")
	b.SetBasicBolt("basic", func() gale.BasicBolt { return &basicEmitter{results: &results} }, 1).ShuffleGrouping("src")
	// Subscribers for every stream, so a wrongly accepted emit would be
	// delivered somewhere.
	for _, from := range []string{"src", "bolt", "basic"} {
		b.SetBolt("sink-"+from, sinkBolt, 1).
			ShuffleGrouping(from).
			Grouping(from, "s", gale.Shuffle()).
			DirectGrouping(from, "d")
	}
	res := complete(t, build(t, b), galetest.Options{
		Config: gale.Config{gale.TopologyComponentPanicPolicy: gale.PanicPolicyKillWorker},
	})
	if got := res.Acked("src"); len(got) != 1 || got[0] != 0 {
		t.Errorf("acked %v, want only the good tuple 0", got)
	}
	if f := res.Failed("src"); len(f) > 0 {
		t.Errorf("failed %v, want none", f)
	}

	byKey := map[string]emitResult{}
	for _, r := range results.all() {
		byKey[r.component+"/"+r.caseName] = r
	}
	for _, component := range []string{"src", "bolt", "basic"} {
		for _, ec := range emitCases {
			t.Run(component+"/"+ec.name, func(t *testing.T) {
				r, ok := byKey[component+"/"+ec.name]
				if !ok {
					t.Fatal("emit not tried")
				}
				if !errors.Is(r.err, ec.want) {
					t.Fatalf("got error %v, want one wrapping %v", r.err, ec.want)
				}
				for _, s := range []string{fmt.Sprintf("%q", component), fmt.Sprintf("%q", ec.stream), ec.names} {
					if !strings.Contains(r.err.Error(), s) {
						t.Errorf("error %q does not name %s", r.err, s)
					}
				}
				if r.tasks != nil {
					t.Errorf("got tasks %v with the error, want nil", r.tasks)
				}
				if r.pending != 0 {
					t.Errorf("Pending() = %d after a rejected emit, want 0", r.pending)
				}
			})
		}
	}
	for _, from := range []string{"src", "bolt", "basic"} {
		for _, s := range []string{"s", "d"} {
			if got := res.Emitted(from, s); len(got) > 0 {
				t.Errorf("%s emitted %v on stream %q, want nothing", from, got, s)
			}
		}
	}
}
