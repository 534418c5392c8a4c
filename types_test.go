package gale_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

type point struct{ X, Y int32 }

type pointCodec struct{}

func (pointCodec) Append(dst []byte, v any) ([]byte, error) {
	p := v.(point)
	dst = binary.AppendVarint(dst, int64(p.X))
	return binary.AppendVarint(dst, int64(p.Y)), nil
}

func (pointCodec) Decode(b []byte) (any, error) {
	x, n := binary.Varint(b)
	if n <= 0 {
		return nil, errors.New("bad x")
	}
	y, m := binary.Varint(b[n:])
	if m <= 0 || n+m != len(b) {
		return nil, errors.New("bad y")
	}
	return point{int32(x), int32(y)}, nil
}

func TestRegisterType(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", seqSpout(1), 1)
	b.RegisterType(reflect.TypeFor[point](), "geo.Point", pointCodec{})
	b.RegisterType(reflect.TypeFor[*point](), "geo.PointRef", pointCodec{})
	topo := build(t, b)
	want := []gale.TypeDef{{Name: "geo.Point", GoType: "gale_test.point"}, {Name: "geo.PointRef", GoType: "*gale_test.point"}}
	if !reflect.DeepEqual(topo.Def.Types, want) {
		t.Errorf("Def.Types = %+v, want %+v", topo.Def.Types, want)
	}
	// What nimbus stores keeps the list.
	data, err := json.Marshal(topo.Def)
	if err != nil {
		t.Fatal(err)
	}
	def, err := parseDef(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(def.Types, want) {
		t.Errorf("after a JSON round trip: %+v, want %+v", def.Types, want)
	}

	for _, tt := range []struct {
		name     string
		register func(b *gale.TopologyBuilder)
		want     string
	}{
		{"twice", func(b *gale.TopologyBuilder) {
			b.RegisterType(reflect.TypeFor[point](), "geo.Point", pointCodec{})
			b.RegisterType(reflect.TypeFor[point](), "geo.Point2", pointCodec{})
		}, "already registered"},
		{"built in", func(b *gale.TopologyBuilder) { b.RegisterType(reflect.TypeFor[string](), "s", pointCodec{}) }, "built in"},
		{"no codec", func(b *gale.TopologyBuilder) { b.RegisterType(reflect.TypeFor[point](), "geo.Point", nil) }, "nil TypeCodec"},
		{"no name", func(b *gale.TopologyBuilder) { b.RegisterType(reflect.TypeFor[point](), "", pointCodec{}) }, "empty name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := gale.NewTopologyBuilder()
			b.SetSpout("src", seqSpout(1), 1)
			tt.register(b)
			_, err := b.Build()
			if !errors.Is(err, gale.ErrInvalidTopology) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build: %v, want ErrInvalidTopology saying %q", err, tt.want)
			}
		})
	}

	bad := `{"spouts":[{"id":"s","language":"go","parallelism":1,"tasks":1,"streams":[{"id":"default","fields":["n"]}]}],"bolts":[],
		"types":[{"name":"a","go_type":"x.A"},{"name":"a","go_type":"x.B"},{"name":"","go_type":"x.C"}]}`
	_, err = parseDef([]byte(bad))
	for _, want := range []string{`type name "a" is registered twice`, "registered type 2 (x.C) has an empty name"} {
		if !errors.Is(err, gale.ErrInvalidTopology) || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("parseDef: %v, want it to say %q", err, want)
		}
	}
}

// Under galetest (topology.testing.always.try.serialize on) an emit of a
// value that could not cross between workers is an error naming the
// component, stream and type; registered types and built-in values pass;
// with the key off, nothing is checked.
func TestTrySerialize(t *testing.T) {
	type unregistered struct{ A int }
	for _, tt := range []struct {
		name     string
		value    any
		register bool
		conf     gale.Config
		wantErr  string // "" = the emit succeeds
	}{
		{"built-in values", map[string]any{"k": []any{1, "x", 2.5}}, false, nil, ""},
		{"registered type", point{1, 2}, true, nil, ""},
		{"unregistered type", unregistered{7}, false, nil, "gale_test.unregistered"},
		{"registered type, unregistered pointer", &point{1, 2}, true, nil, "*gale_test.point"},
		{"check off", unregistered{7}, false, gale.Config{gale.TopologyTestingAlwaysTrySerialize: false}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var emitErr error
			b := gale.NewTopologyBuilder()
			if tt.register {
				b.RegisterType(reflect.TypeFor[point](), "geo.Point", pointCodec{})
			}
			b.SetSpout("src", seqSpout(1), 1)
			b.SetBolt("shape", func() gale.Bolt {
				return &funcBolt{
					declare: func(d gale.OutputDeclarer) { d.DeclareStream("shapes", "shape") },
					execute: func(b *funcBolt, in *gale.Tuple) {
						_, emitErr = b.Collector.EmitStream("shapes", []*gale.Tuple{in}, tt.value)
						b.Collector.Ack(in)
					},
				}
			}, 1).ShuffleGrouping("src")
			res := complete(t, build(t, b), galetest.Options{Config: tt.conf, Logger: slog.New(slog.DiscardHandler)})
			if tt.wantErr == "" {
				if emitErr != nil {
					t.Fatalf("emit: %v", emitErr)
				}
				if got := res.Emitted("shape", "shapes"); len(got) != 1 || !reflect.DeepEqual(got[0][0], tt.value) {
					t.Errorf("emitted %v, want [%v]", got, tt.value)
				}
				return
			}
			if !errors.Is(emitErr, gale.ErrNotSerializable) {
				t.Fatalf("emit: %v, want ErrNotSerializable", emitErr)
			}
			for _, want := range []string{`component "shape"`, `stream "shapes"`, tt.wantErr, "RegisterType"} {
				if !strings.Contains(emitErr.Error(), want) {
					t.Errorf("error %q does not say %q", emitErr, want)
				}
			}
			if got := res.Emitted("shape", "shapes"); len(got) != 0 {
				t.Errorf("the rejected value was emitted: %v", got)
			}
		})
	}
}
