package gale_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
)

// declSpout makes a spout factory declaring the given streams.
func declSpout(declare func(d gale.OutputDeclarer)) func() gale.Spout {
	return func() gale.Spout { return &funcSpout{declare: declare} }
}

func declBolt(declare func(d gale.OutputDeclarer)) func() gale.Bolt {
	return func() gale.Bolt { return &funcBolt{declare: declare} }
}

var (
	wordSpout = declSpout(func(d gale.OutputDeclarer) { d.Declare("word") })
	sinkBolt  = declBolt(nil)
)

func TestBuildRejectsInvalidTopologies(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *gale.TopologyBuilder)
		want  []string // substrings of the error message
		is    error    // another sentinel the error must wrap, if any
	}{
		{
			name: "unknown source component",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("b", sinkBolt, 1).ShuffleGrouping("nosuch")
			},
			want: []string{`"b"`, `"nosuch"`},
		},
		{
			name: "undeclared stream",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("b", sinkBolt, 1).Grouping("s", "missing", gale.Shuffle())
			},
			want: []string{`"b"`, `"missing"`, `"s"`},
		},
		{
			name: "undeclared field in fields grouping",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("b", sinkBolt, 1).FieldsGrouping("s", "nofield")
			},
			want: []string{`"b"`, `"nofield"`, "s:default"},
		},
		{
			name: "fields grouping with no fields",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("b", sinkBolt, 1).FieldsGrouping("s")
			},
			want: []string{`"b"`, "s:default"},
		},
		{
			name: "zero parallelism",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("b", sinkBolt, 0).SetNumTasks(1).ShuffleGrouping("s")
			},
			want: []string{`"b"`, "parallelism", "got 0"},
		},
		{
			name: "negative spout parallelism",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, -1).SetNumTasks(1)
			},
			want: []string{`"s"`, "parallelism", "got -1"},
		},
		{
			name: "zero tasks",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("b", sinkBolt, 1).SetNumTasks(0).ShuffleGrouping("s")
			},
			want: []string{`"b"`, "tasks", "got 0"},
		},
		{
			name: "duplicate spout ids",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetSpout("s", wordSpout, 1)
			},
			want: []string{`"s"`, "twice"},
		},
		{
			name: "spout and bolt with one id",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("x", wordSpout, 1)
				b.SetBolt("x", sinkBolt, 1).ShuffleGrouping("x")
			},
			want: []string{`"x"`, "twice"},
		},
		{
			name: "direct grouping on a non-direct stream",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("b", sinkBolt, 1).DirectGrouping("s", gale.DefaultStream)
			},
			want: []string{`"b"`, "s:default", "direct"},
		},
		{
			name: "shuffle grouping on a direct stream",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", declSpout(func(d gale.OutputDeclarer) { d.DeclareDirectStream("d", "x") }), 1)
				b.SetBolt("b", sinkBolt, 1).Grouping("s", "d", gale.Shuffle())
			},
			want: []string{`"b"`, "s:d", "direct"},
		},
		{
			name: "fields grouping on a direct stream",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", declSpout(func(d gale.OutputDeclarer) { d.DeclareDirectStream("d", "x") }), 1)
				b.SetBolt("b", sinkBolt, 1).Grouping("s", "d", gale.ByFields("x"))
			},
			want: []string{`"b"`, "s:d", "direct"},
		},
		{
			name: "bolt with no inputs",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("lonely", sinkBolt, 1)
			},
			want: []string{`"lonely"`, "no inputs"},
		},
		{
			name:  "no spouts",
			build: func(b *gale.TopologyBuilder) {},
			want:  []string{"spout"},
		},
		{
			name: "reserved spout id",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("__s", wordSpout, 1)
			},
			want: []string{`"__s"`, "reserved"},
		},
		{
			name: "reserved bolt id",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("__acker", sinkBolt, 1).ShuffleGrouping("s")
			},
			want: []string{`"__acker"`, "reserved"},
		},
		{
			name: "reserved stream id",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", declSpout(func(d gale.OutputDeclarer) { d.DeclareStream("__tick", "x") }), 1)
			},
			want: []string{`"s"`, `"__tick"`, "reserved"},
		},
		{
			name: "duplicate stream",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", declSpout(func(d gale.OutputDeclarer) {
					d.DeclareStream("x", "a")
					d.DeclareDirectStream("x", "b")
				}), 1)
			},
			want: []string{`"s"`, `"x"`, "twice"},
		},
		{
			name: "duplicate field",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", declSpout(func(d gale.OutputDeclarer) { d.DeclareStream("x", "a", "b", "a") }), 1)
			},
			want: []string{`"s"`, `"x"`, `"a"`, "twice"},
		},
		{
			name: "subscribing twice to one stream",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("b", sinkBolt, 1).ShuffleGrouping("s").AllGrouping("s")
			},
			want: []string{`"b"`, "s:default", "twice"},
		},
		{
			name: "nil factory",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("b", nil, 1)
			},
			want: []string{`"b"`, "nil"},
		},
		{
			name: "unknown config key in component config",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1)
				b.SetBolt("b", sinkBolt, 1).ShuffleGrouping("s").AddConfiguration("topology.no.such.key", 1)
			},
			want: []string{`"b"`, "topology.no.such.key"},
			is:   gale.ErrUnknownKey,
		},
		{
			name: "forbidden component override",
			build: func(b *gale.TopologyBuilder) {
				b.SetSpout("s", wordSpout, 1).AddConfiguration(gale.TopologyWorkers, 2)
			},
			want: []string{`"s"`, gale.TopologyWorkers},
			is:   gale.ErrForbiddenOverride,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := gale.NewTopologyBuilder()
			tc.build(b)
			topo, err := b.Build()
			if err == nil {
				t.Fatalf("Build succeeded with definition %+v, want an error", topo.Def)
			}
			if topo != nil {
				t.Errorf("Build returned a topology with its error")
			}
			if !errors.Is(err, gale.ErrInvalidTopology) {
				t.Errorf("error %q does not wrap ErrInvalidTopology", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %v", err, tc.is)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
		})
	}
}

// TestBuildReportsEveryError checks that one Build reports all problems,
// not just the first.
func TestBuildReportsEveryError(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", declSpout(func(d gale.OutputDeclarer) { d.Declare("w", "w") }), 1)
	b.SetBolt("b1", sinkBolt, 1).ShuffleGrouping("ghost")
	b.SetBolt("b2", sinkBolt, 0).ShuffleGrouping("s")
	b.SetBolt("b3", sinkBolt, 1).FieldsGrouping("s", "nofield")
	b.SetBolt("__b4", sinkBolt, 1).ShuffleGrouping("s")
	_, err := b.Build()
	if !errors.Is(err, gale.ErrInvalidTopology) {
		t.Fatalf("got error %v, want one wrapping ErrInvalidTopology", err)
	}
	for _, s := range []string{`field "w" twice`, `"ghost"`, `"b2": parallelism`, `"nofield"`, `"__b4"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not report %s:\n%v", s, err)
		}
	}
}

// TestBuildIsolatesTheTopology checks that changing the builder after
// Build does not change the built topology.
func TestBuildIsolatesTheTopology(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", wordSpout, 1)
	d := b.SetBolt("b", sinkBolt, 2)
	d.ShuffleGrouping("s")
	topo := build(t, b)
	d.SetNumTasks(9).AddConfiguration(gale.TopologyMaxTaskParallelism, 3).AllGrouping("s")
	c, _ := topo.Def.Component("b")
	if c.Tasks != 2 || len(c.Inputs) != 1 || c.Config != nil {
		t.Fatalf("built bolt changed after Build: tasks %d, inputs %v, config %v; want 2, one input, none", c.Tasks, c.Inputs, c.Config)
	}
}

// parseDef decodes a JSON topology definition and validates it, as a
// definition from another language would be.
func parseDef(data []byte) (*gale.TopologyDef, error) {
	var d gale.TopologyDef
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("topology definition: %w", err)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// TestTopologyDefJSONRoundTrip: a definition using every feature survives
// MarshalIndent, decoding and Validate.
func TestTopologyDefJSONRoundTrip(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("words", declSpout(func(d gale.OutputDeclarer) {
		d.Declare("word", "n")
		d.DeclareDirectStream("direct", "word")
		d.DeclareStream("empty")
	}), 2).SetNumTasks(4).SetMaxSpoutPending(100)
	b.SetBolt("count", declBolt(func(d gale.OutputDeclarer) { d.Declare("word", "count") }), 3).
		FieldsGrouping("words", "word", "n").
		DirectGrouping("words", "direct").
		AddConfiguration(gale.TopologyTickTupleFreqSecs, 5).
		AddConfiguration(gale.TopologyComponentPanicPolicy, gale.PanicPolicyKillWorker)
	b.SetBolt("sink", declBolt(func(d gale.OutputDeclarer) { d.Declare("x") }), 1).
		GlobalGrouping("count").
		Grouping("words", "empty", gale.None())
	b.SetBolt("mine", sinkBolt, 2).
		CustomGrouping("count", gale.DefaultStream, "mine", func() gale.CustomGrouping { return &pickGrouping{} }).
		LocalOrShuffleGrouping("sink")
	b.SetBolt("all", sinkBolt, 2).AllGrouping("count").Grouping("sink", gale.DefaultStream, gale.Shuffle())
	topo := build(t, b)

	data, err := topo.Def.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseDef(data)
	if err != nil {
		t.Fatalf("decoding MarshalIndent's output: %v\n%s", err, data)
	}
	// JSON numbers come back as float64: compare configs by their JSON.
	want := topo.Def
	for _, id := range []string{"words", "count", "sink", "mine", "all"} {
		ca, _ := want.Component(id)
		cb, ok := got.Component(id)
		if !ok {
			t.Fatalf("component %q lost in the round trip", id)
		}
		ja, _ := json.Marshal(ca.Config)
		jb, _ := json.Marshal(cb.Config)
		if string(ja) != string(jb) {
			t.Errorf("component %q config: got %s, want %s", id, jb, ja)
		}
	}
	strip := func(d gale.TopologyDef) gale.TopologyDef {
		d.Spouts = append([]gale.ComponentDef(nil), d.Spouts...)
		d.Bolts = append([]gale.ComponentDef(nil), d.Bolts...)
		for i := range d.Spouts {
			d.Spouts[i].Config = nil
		}
		for i := range d.Bolts {
			d.Bolts[i].Config = nil
		}
		return d
	}
	if a, b := strip(want), strip(*got); !reflect.DeepEqual(a, b) {
		t.Errorf("round trip changed the definition:\n got %+v\nwant %+v", b, a)
	}
	again, err := got.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(data) {
		t.Errorf("second marshal differs from the first:\n%s\nvs\n%s", again, data)
	}
}

func TestTopologyDefFromJSONRejects(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		invalid bool     // wraps ErrInvalidTopology
		want    []string // substrings of the error
	}{
		{"not JSON", `{"spouts": [`, false, []string{"topology definition"}},
		{"wrong type", `{"spouts": 3}`, false, []string{"topology definition"}},
		{"no spouts", `{"spouts": [], "bolts": []}`, true, []string{"spout"}},
		{"unknown source", `{"spouts": [{"id": "s", "parallelism": 1, "tasks": 1, "streams": [{"id": "default", "fields": ["w"]}]}],
			"bolts": [{"id": "b", "parallelism": 1, "tasks": 1, "inputs": [{"component": "ghost", "stream": "default", "grouping": {"type": "shuffle"}}]}]}`,
			true, []string{`"b"`, `"ghost"`}},
		{"unknown grouping type", `{"spouts": [{"id": "s", "parallelism": 1, "tasks": 1, "streams": [{"id": "default", "fields": ["w"]}]}],
			"bolts": [{"id": "b", "parallelism": 1, "tasks": 1, "inputs": [{"component": "s", "stream": "default", "grouping": {"type": "random"}}]}]}`,
			true, []string{`"b"`, `"random"`}},
		{"unsupported language", `{"spouts": [{"id": "s", "language": "cobol", "parallelism": 1, "tasks": 1}]}`,
			true, []string{`"s"`, `"cobol"`}},
		{"spout with inputs", `{"spouts": [{"id": "s", "parallelism": 1, "tasks": 1, "streams": [{"id": "default", "fields": ["w"]}],
			"inputs": [{"component": "s", "stream": "default", "grouping": {"type": "shuffle"}}]}]}`,
			true, []string{`"s"`, "inputs"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := parseDef([]byte(tc.doc))
			if err == nil {
				t.Fatalf("parseDef accepted %s as %+v", tc.doc, d)
			}
			if got := errors.Is(err, gale.ErrInvalidTopology); got != tc.invalid {
				t.Errorf("errors.Is(%q, ErrInvalidTopology) = %t, want %t", err, got, tc.invalid)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
		})
	}
}
