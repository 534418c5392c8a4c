package starter

import (
	"fmt"
	"slices"

	"github.com/gale-stream/gale"
)

// SingleJoinBolt joins one tuple of each of its sources on the fields they
// all have, as storm-starter's SingleJoinBolt: Prepare reads its sources
// and their output fields from the TopologyContext, the id fields being
// those common to every source; once a tuple of each source with the same
// id has come, it emits OutFields (each taken from the source that
// declares it), anchored on all of them, and acks them. A second tuple of
// the same side for a pending id fails.
type SingleJoinBolt struct {
	gale.BaseBolt
	// OutFields are the fields emitted, each declared by one source.
	OutFields []string

	numSources int
	idFields   []string
	locations  map[string]gale.StreamID
	pending    map[string]map[gale.StreamID]*gale.Tuple
}

// NewSingleJoinBolt returns a join emitting outFields.
func NewSingleJoinBolt(outFields ...string) *SingleJoinBolt {
	return &SingleJoinBolt{OutFields: outFields}
}

// DeclareOutputFields declares OutFields.
func (b *SingleJoinBolt) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare(b.OutFields...) }

// Prepare finds the id fields and where each out field comes from.
func (b *SingleJoinBolt) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	b.Collector = c
	sources := tc.Sources()
	b.numSources = len(sources)
	b.locations = map[string]gale.StreamID{}
	b.pending = map[string]map[gale.StreamID]*gale.Tuple{}
	var ids []string
	first := true
	for src := range sources {
		fields := tc.OutputFields(src.Component, src.Stream)
		if first {
			ids, first = slices.Clone(fields), false
		} else {
			ids = slices.DeleteFunc(ids, func(f string) bool { return !slices.Contains(fields, f) })
		}
		for _, out := range b.OutFields {
			if slices.Contains(fields, out) {
				b.locations[out] = src
			}
		}
	}
	slices.Sort(ids)
	b.idFields = ids
	if len(ids) == 0 {
		return fmt.Errorf("single join: the sources %v have no field in common to join on", keys(sources))
	}
	if len(b.locations) != len(b.OutFields) {
		return fmt.Errorf("single join: cannot find all of %v among the sources' fields (found %v)", b.OutFields, b.locations)
	}
	return nil
}

// Execute keeps the tuple until the other sides of its id have come.
func (b *SingleJoinBolt) Execute(t *gale.Tuple) {
	idv := make([]any, len(b.idFields))
	for i, f := range b.idFields {
		idv[i] = t.ValueByField(f)
	}
	id := fmt.Sprintf("%#v", idv)
	src := gale.StreamID{Component: t.SourceComponent(), Stream: t.SourceStream()}
	parts := b.pending[id]
	if parts == nil {
		parts = map[gale.StreamID]*gale.Tuple{}
		b.pending[id] = parts
	}
	if _, dup := parts[src]; dup {
		b.Collector.Fail(t, fmt.Errorf("single join: received the same side (%s) of id %v twice", src, idv))
		return
	}
	parts[src] = t
	if len(parts) < b.numSources {
		return
	}
	delete(b.pending, id)
	out := make([]any, len(b.OutFields))
	for i, f := range b.OutFields {
		out[i] = parts[b.locations[f]].ValueByField(f)
	}
	anchors := make([]*gale.Tuple, 0, len(parts))
	for _, p := range parts {
		anchors = append(anchors, p)
	}
	b.Collector.EmitStream(gale.DefaultStream, anchors, out...)
	for _, p := range anchors {
		b.Collector.Ack(p)
	}
}

func keys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// SingleJoinExample wires storm-starter's SingleJoinExample: the spouts
// "gender" (id, gender) and "age" (id, age) to "join", a SingleJoinBolt of
// gender and age, fields-grouped on id from both.
func SingleJoinExample(gender, age func() gale.Spout) *gale.TopologyBuilder {
	b := gale.NewTopologyBuilder()
	b.SetSpout("gender", gender, 1)
	b.SetSpout("age", age, 1)
	b.SetBolt("join", func() gale.Bolt { return NewSingleJoinBolt("gender", "age") }, 1).
		FieldsGrouping("gender", "id").FieldsGrouping("age", "id")
	return b
}
