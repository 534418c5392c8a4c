package gale_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/config"
)

// TestUserKeysReachPrepare: keys of the topology's own, outside the
// reserved namespaces, are accepted in gale.yaml, the topology config and
// a component's config, and a task reads them from its context's config,
// as a Storm topology reads its keys in prepare.
func TestUserKeysReachPrepare(t *testing.T) {
	type seen struct {
		component string
		topN      any
		names     any
		site      any
		unset     bool
	}
	var got list[seen]
	bolt := func() gale.Bolt {
		return &funcBolt{prepare: func(b *funcBolt) error {
			conf := b.tc.Config()
			topN, _ := conf.Lookup("starter.top.n")
			names, _ := conf.Lookup("starter.names")
			site, _ := conf.Lookup("starter.site")
			_, set := conf.Lookup("starter.nothing")
			got.add(seen{b.tc.ComponentID(), topN, names, site, !set})
			return nil
		}}
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		return &funcSpout{declare: func(d gale.OutputDeclarer) { d.Declare("x") }}
	}, 1)
	b.SetBolt("rank", bolt, 1).ShuffleGrouping("src")
	b.SetBolt("top3", bolt, 1).ShuffleGrouping("src").AddConfiguration("starter.top.n", 3)
	conf := gale.Config{"starter.top.n": 5, "starter.names": []string{"a", "b"}}
	opts := gale.RunOptions{Logger: testLogger(t)}
	bridge.SetFileConfig(&opts, gale.Config{"starter.site": "eu"})
	lt, err := gale.StartLocal("user-keys", conf, build(t, b), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	byComp := map[string]seen{}
	for _, s := range got.all() {
		byComp[s.component] = s
	}
	want := map[string]seen{
		"rank": {"rank", 5, []any{"a", "b"}, "eu", true},
		"top3": {"top3", 3, []any{"a", "b"}, "eu", true},
	}
	if !reflect.DeepEqual(byComp, want) {
		t.Errorf("in Prepare: got %+v, want %+v", byComp, want)
	}
}

// TestUserKeyValuesAsJSON: a user key's value reads the same whatever
// gave it (Go code, a JSON decoder with or without UseNumber, YAML), as
// JSON's types with integral numbers as int, so that a task sees the same
// value in one process and in a worker process, whose config came as
// JSON; and Lookup gives a copy.
func TestUserKeyValuesAsJSON(t *testing.T) {
	type opts struct {
		Depth int    `json:"depth"`
		Mode  string `json:"mode"`
	}
	tests := []struct {
		name string
		raw  any
		want any
	}{
		{"Go int", 5, 5},
		{"Go int64", int64(5), 5},
		{"Go uint8", uint8(5), 5},
		{"float64 from encoding/json", 5.0, 5},
		{"json.Number", json.Number("5"), 5},
		{"fraction", 2.5, 2.5},
		{"string", "five", "five"},
		{"bool", true, true},
		{"Go slice", []int{1, 2}, []any{1, 2}},
		{"Go map", map[string]int{"a": 1}, map[string]any{"a": 1}},
		{"Go struct", opts{Depth: 2, Mode: "fast"}, map[string]any{"depth": 2, "mode": "fast"}},
		{"nested", map[string]any{"l": []any{json.Number("1"), 1.5, nil}}, map[string]any{"l": []any{1, 1.5, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eff, err := config.Resolve(nil, gale.Config{"starter.v": tt.raw})
			if err != nil {
				t.Fatal(err)
			}
			v, set := eff.Lookup("starter.v")
			if !set || !reflect.DeepEqual(v, tt.want) {
				t.Errorf("Lookup = %#v (set %t), want %#v", v, set, tt.want)
			}
			// Through JSON, as to a worker process.
			b, err := json.Marshal(gale.Config{"starter.v": tt.raw})
			if err != nil {
				t.Fatal(err)
			}
			var wire gale.Config
			if err := json.Unmarshal(b, &wire); err != nil {
				t.Fatal(err)
			}
			eff, err = config.Resolve(nil, wire)
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := eff.Lookup("starter.v"); !reflect.DeepEqual(v, tt.want) {
				t.Errorf("after JSON, Lookup = %#v, want %#v", v, tt.want)
			}
		})
	}

	t.Run("YAML file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "gale.yaml")
		yaml := "starter.top.n: 5\nstarter.big: 123456789012345678901234567890\nstarter.names: [a, b]\n"
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := config.LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		eff, err := config.Resolve(file, nil)
		if err != nil {
			t.Fatal(err)
		}
		for key, want := range map[string]any{"starter.top.n": 5, "starter.big": 1.2345678901234568e29, "starter.names": []any{"a", "b"}} {
			if v, _ := eff.Lookup(key); !reflect.DeepEqual(v, want) {
				t.Errorf("Lookup(%q) = %#v, want %#v", key, v, want)
			}
		}
	})

	t.Run("copies", func(t *testing.T) {
		eff, err := config.Resolve(nil, gale.Config{"starter.m": map[string]any{"l": []any{1}}})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := eff.Lookup("starter.m")
		v.(map[string]any)["l"].([]any)[0] = 99
		v.(map[string]any)["x"] = 1
		eff.Map()["starter.m"].(map[string]any)["y"] = 2
		if v, _ := eff.Lookup("starter.m"); !reflect.DeepEqual(v, map[string]any{"l": []any{1}}) {
			t.Errorf("after changing what Lookup and Map returned, Lookup = %#v, want the value as set", v)
		}
	})
}

// TestTopologyNameInConfig: a task reads the topology's name from its
// config, as a Storm component reads topology.name in prepare, both with
// the typed getter and in Map.
func TestTopologyNameInConfig(t *testing.T) {
	type seen struct {
		name   string
		lookup any
		inMap  any
	}
	var got list[seen]
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		return &funcSpout{declare: func(d gale.OutputDeclarer) { d.Declare("x") }}
	}, 1)
	b.SetBolt("sink", func() gale.Bolt {
		return &funcBolt{prepare: func(b *funcBolt) error {
			conf := b.tc.Config()
			v, _ := conf.Lookup(gale.TopologyName)
			got.add(seen{conf.String(gale.TopologyName), v, conf.Map()[gale.TopologyName]})
			return nil
		}}
	}, 1).ShuffleGrouping("src")
	lt, err := gale.StartLocal("named", nil, build(t, b), gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	want := []seen{{"named", "named", "named"}}
	if all := got.all(); !reflect.DeepEqual(all, want) {
		t.Errorf("in Prepare: got %+v, want %+v", all, want)
	}
}
