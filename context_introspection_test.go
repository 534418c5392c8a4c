package gale_test

import (
	"reflect"
	"testing"

	"github.com/gale-stream/gale"
)

// introspectionTopology: spout "words" (2 tasks) declares the default
// stream [word] and "lengths" [len, word]; bolt "count" (3 tasks) takes
// the words by field; bolt "join" (1 task) takes count's totals and the
// spout's lengths, as storm-starter's SingleJoin takes two streams.
// prepared receives each bolt task's context.
func introspectionTopology(t *testing.T, prepared func(*gale.TopologyContext)) *gale.Topology {
	b := gale.NewTopologyBuilder()
	b.SetSpout("words", func() gale.Spout {
		return &funcSpout{declare: func(d gale.OutputDeclarer) {
			d.Declare("word")
			d.DeclareStream("lengths", "len", "word")
		}}
	}, 2)
	b.SetBolt("count", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("word", "total") },
			prepare: func(b *funcBolt) error { prepared(b.tc); return nil },
		}
	}, 3).FieldsGrouping("words", "word")
	b.SetBolt("join", func() gale.Bolt {
		return &funcBolt{prepare: func(b *funcBolt) error { prepared(b.tc); return nil }}
	}, 1).GlobalGrouping("count").Grouping("words", "lengths", gale.Shuffle())
	return build(t, b)
}

// TestContextIntrospection: a task learns the topology's shape from its
// context as from Storm's TopologyContext (SingleJoin reads its sources
// and their fields), and what it is given are copies.
func TestContextIntrospection(t *testing.T) {
	var got list[*gale.TopologyContext]
	lt, err := gale.StartLocal("introspect", nil, introspectionTopology(t, got.add), gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	ctxs := map[string]*gale.TopologyContext{}
	for _, tc := range got.all() {
		ctxs[tc.ComponentID()] = tc
	}
	join, count := ctxs["join"], ctxs["count"]
	if join == nil || count == nil {
		t.Fatalf("prepared components %v, want count and join", ctxs)
	}

	if ids, want := join.ComponentIDs(), []string{"count", "join", "words"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ComponentIDs() = %v, want %v", ids, want)
	}
	wantSources := map[gale.StreamID]gale.GroupingDef{
		{Component: "count", Stream: gale.DefaultStream}: {Type: gale.GroupingGlobal},
		{Component: "words", Stream: "lengths"}:          {Type: gale.GroupingShuffle},
	}
	if s := join.Sources(); !reflect.DeepEqual(s, wantSources) {
		t.Errorf("join's Sources() = %v, want %v", s, wantSources)
	}
	wantTargets := map[string]map[string]gale.GroupingDef{
		gale.DefaultStream: {"join": {Type: gale.GroupingGlobal}},
	}
	if tg := count.Targets(); !reflect.DeepEqual(tg, wantTargets) {
		t.Errorf("count's Targets() = %v, want %v", tg, wantTargets)
	}
	if tg := join.Targets(); len(tg) != 0 {
		t.Errorf("join's Targets() = %v, want none: nothing subscribes to it", tg)
	}
	for _, c := range []struct {
		component, stream string
		want              []string
	}{
		{"words", gale.DefaultStream, []string{"word"}},
		{"words", "lengths", []string{"len", "word"}},
		{"count", gale.DefaultStream, []string{"word", "total"}},
		{"words", "nope", nil},
		{"nope", gale.DefaultStream, nil},
	} {
		if f := join.OutputFields(c.component, c.stream); !reflect.DeepEqual(f, c.want) {
			t.Errorf("OutputFields(%q, %q) = %#v, want %#v", c.component, c.stream, f, c.want)
		}
	}
	// Tasks are numbered component by component in id order: count 1–3,
	// join 4, words 5–6.
	if tasks := join.ComponentTasks("count"); !reflect.DeepEqual(tasks, []int{1, 2, 3}) {
		t.Errorf("ComponentTasks(count) = %v, want [1 2 3]", tasks)
	}
	if tasks := join.ComponentTasks("nope"); tasks != nil {
		t.Errorf("ComponentTasks(nope) = %v, want nil", tasks)
	}
	want := map[int]string{1: "count", 2: "count", 3: "count", 4: "join", 5: "words", 6: "words"}
	if m := join.TaskToComponent(); !reflect.DeepEqual(m, want) {
		t.Errorf("TaskToComponent() = %v, want %v", m, want)
	}

	// Mutating what was returned changes nothing.
	s := join.Sources()
	g := s[gale.StreamID{Component: "words", Stream: "lengths"}]
	g.Type = gale.GroupingAll
	s[gale.StreamID{Component: "x", Stream: "y"}] = g
	countSources := count.Sources()
	countSources[gale.StreamID{Component: "words", Stream: gale.DefaultStream}].Fields[0] = "changed"
	count.Targets()[gale.DefaultStream]["join"] = gale.GroupingDef{Type: gale.GroupingAll}
	join.OutputFields("words", "lengths")[0] = "changed"
	join.ComponentIDs()[0] = "changed"
	join.ComponentTasks("count")[0] = 99
	join.TaskToComponent()[1] = "changed"
	if s := join.Sources(); !reflect.DeepEqual(s, wantSources) {
		t.Errorf("after mutating a result, Sources() = %v, want %v", s, wantSources)
	}
	if s := count.Sources(); !reflect.DeepEqual(s[gale.StreamID{Component: "words", Stream: gale.DefaultStream}].Fields, []string{"word"}) {
		t.Errorf("after mutating a result, count's Sources() = %v, want fields [word]", s)
	}
	if tg := count.Targets(); !reflect.DeepEqual(tg, wantTargets) {
		t.Errorf("after mutating a result, Targets() = %v, want %v", tg, wantTargets)
	}
	if f := join.OutputFields("words", "lengths"); !reflect.DeepEqual(f, []string{"len", "word"}) {
		t.Errorf("after mutating a result, OutputFields = %v", f)
	}
	if ids := join.ComponentIDs(); ids[0] != "count" {
		t.Errorf("after mutating a result, ComponentIDs() = %v", ids)
	}
	if tasks := join.ComponentTasks("count"); tasks[0] != 1 {
		t.Errorf("after mutating a result, ComponentTasks(count) = %v", tasks)
	}
	if m := join.TaskToComponent(); m[1] != "count" {
		t.Errorf("after mutating a result, TaskToComponent() = %v", m)
	}
}
