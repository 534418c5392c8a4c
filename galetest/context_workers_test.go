package galetest_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

// The topology whose tasks describe their context: spout "words" (2
// tasks; default stream [word], "lengths" [len, word]), bolt "count" (3
// tasks, words by field), bolt "join" (count's totals and the spout's
// lengths).
const introspect = "galetest-introspect"

func init() {
	galetest.RegisterTopology(introspect, func(json.RawMessage) (*gale.Topology, gale.Config, func() any, error) {
		seen := &prepared{by: map[string]string{}}
		topo, err := introspectTopology(seen)
		return topo, gale.Config{"starter.names": []string{"a", "b"}}, seen.snapshot, err
	})
}

// prepared collects, by component, what its tasks' contexts say.
type prepared struct {
	mu sync.Mutex
	by map[string]string
}

func (p *prepared) add(tc *gale.TopologyContext) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.by[tc.ComponentID()] = describeContext(tc)
}

func (p *prepared) snapshot() any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.by)
}

// describeContext prints what a task learns from its context: the
// topology's shape, its own component's inputs and outputs, and the user
// keys with their Go types. fmt prints maps in key order.
func describeContext(tc *gale.TopologyContext) string {
	fields := map[string][]string{}
	tasks := map[string][]int{}
	for _, c := range tc.ComponentIDs() {
		for _, s := range []string{gale.DefaultStream, "lengths"} {
			fields[c+":"+s] = tc.OutputFields(c, s)
		}
		tasks[c] = tc.ComponentTasks(c)
	}
	topN, _ := tc.Config().Lookup("starter.top.n")
	names, _ := tc.Config().Lookup("starter.names")
	return fmt.Sprintf("ids %v sources %v targets %v fields %v tasks %v task→component %v top.n %T(%v) names %T(%v)",
		tc.ComponentIDs(), tc.Sources(), tc.Targets(), fields, tasks, tc.TaskToComponent(), topN, topN, names, names)
}

func introspectTopology(seen *prepared) (*gale.Topology, error) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("words", func() gale.Spout { return &introspectSpout{seen: seen} }, 2)
	b.SetBolt("count", func() gale.Bolt { return &introspectBolt{seen: seen, fields: []string{"word", "total"}} }, 3).
		FieldsGrouping("words", "word")
	b.SetBolt("join", func() gale.Bolt { return &introspectBolt{seen: seen} }, 1).
		GlobalGrouping("count").Grouping("words", "lengths", gale.Shuffle())
	return b.Build()
}

type introspectSpout struct {
	gale.BaseSpout
	seen *prepared
}

func (*introspectSpout) DeclareOutputFields(d gale.OutputDeclarer) {
	d.Declare("word")
	d.DeclareStream("lengths", "len", "word")
}

func (s *introspectSpout) Open(tc *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.seen.add(tc)
	return s.BaseSpout.Open(tc, c)
}

func (*introspectSpout) NextTuple() {}

type introspectBolt struct {
	bolt
	seen   *prepared
	fields []string
}

func (b *introspectBolt) DeclareOutputFields(d gale.OutputDeclarer) {
	if b.fields != nil {
		d.Declare(b.fields...)
	}
}

func (b *introspectBolt) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	b.seen.add(tc)
	return b.bolt.Prepare(tc, c)
}

// TestWorkersContextAndUserKeys: a task in a worker process learns the
// same from its context as in one process, the topology's shape and the
// user keys of its config (starter.top.n given with StartWorkers,
// starter.names by the topology's build), numbers as int in both.
func TestWorkersContextAndUserKeys(t *testing.T) {
	conf := gale.Config{"starter.top.n": 5}

	local := &prepared{by: map[string]string{}}
	topo, err := introspectTopology(local)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal(introspect, gale.Config{"starter.top.n": 5, "starter.names": []string{"a", "b"}}, topo, gale.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lt.Stop()
	want := local.snapshot().(map[string]string)
	if len(want) != 3 {
		t.Fatalf("in one process, prepared %v, want words, count and join", want)
	}
	if w := want["join"]; !containsAll(w, "top.n int(5)", "names []interface {}([a b])",
		"sources map[count:default:global words:lengths:shuffle]") {
		t.Fatalf("in one process, join saw %s", w)
	}

	w := galetest.StartWorkers(t, introspect, 2, galetest.WorkersOptions{Config: conf})
	got := map[string]string{}
	w.WaitFor("every component's context described", 15*time.Second, func() bool {
		for i := range 2 {
			var by map[string]string
			if w.Stats(i, &by) == nil {
				maps.Copy(got, by)
			}
		}
		return len(got) == len(want)
	})
	if err := w.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		for c := range want {
			if got[c] != want[c] {
				t.Errorf("%s in worker processes:\n%s\nin one process:\n%s", c, got[c], want[c])
			}
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
