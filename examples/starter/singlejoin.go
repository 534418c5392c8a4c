package starter

import (
	"errors"
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
// the same side for a pending id fails (Storm's throws).
//
// A tuple whose other sides do not come is failed with ErrJoinExpired
// between TimeoutSecs and 1.5 TimeoutSecs after the first tuple of its id
// came, as Storm's TimeCacheMap of three buckets expires it: the bolt
// ticks every second (its ComponentConfiguration) and rotates the buckets
// every TimeoutSecs/2 ticks.
type SingleJoinBolt struct {
	gale.BaseBolt
	// OutFields are the fields emitted, each declared by one source.
	OutFields []string
	// TimeoutSecs is how long a tuple waits for the other sides of its
	// id, at least; 0 means the topology's topology.message.timeout.secs,
	// as in Storm.
	TimeoutSecs int

	numSources int
	idFields   []string
	locations  map[string]gale.StreamID
	// pending holds the tuples of each id waiting for the other sides,
	// in buckets by age, newest first; every rotateEvery ticks the oldest
	// bucket's expire.
	pending            []map[string]map[gale.StreamID]*gale.Tuple
	rotateEvery, ticks int
}

// ErrJoinExpired is the reason SingleJoinBolt fails a tuple whose other
// sides did not come in time.
var ErrJoinExpired = errors.New("single join: the other sides of the id did not come in time")

// joinBuckets is the number of buckets of pending ids, as Storm's
// TimeCacheMap's default.
const joinBuckets = 3

// NewSingleJoinBolt returns a join emitting outFields.
func NewSingleJoinBolt(outFields ...string) *SingleJoinBolt {
	return &SingleJoinBolt{OutFields: outFields}
}

// DeclareOutputFields declares OutFields.
func (b *SingleJoinBolt) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare(b.OutFields...) }

// ComponentConfiguration gives the bolt a tick every second, which times
// its pending tuples out.
func (*SingleJoinBolt) ComponentConfiguration() gale.Config {
	return gale.Config{gale.TopologyTickTupleFreqSecs: 1}
}

// Prepare finds the id fields and where each out field comes from.
func (b *SingleJoinBolt) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	b.Collector = c
	timeout := b.TimeoutSecs
	if timeout <= 0 {
		timeout, _ = tc.Config().Int(gale.TopologyMessageTimeoutSecs)
	}
	if timeout <= 0 {
		return fmt.Errorf("single join: TimeoutSecs is 0 and %s is not set; give either", gale.TopologyMessageTimeoutSecs)
	}
	b.rotateEvery = max(1, (timeout+joinBuckets-2)/(joinBuckets-1))
	b.pending = make([]map[string]map[gale.StreamID]*gale.Tuple, joinBuckets)
	for i := range b.pending {
		b.pending[i] = map[string]map[gale.StreamID]*gale.Tuple{}
	}
	sources := tc.Sources()
	b.numSources = len(sources)
	b.locations = map[string]gale.StreamID{}
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

// Execute keeps the tuple until the other sides of its id have come, or
// on a tick expires the oldest pending ids when their time has come.
func (b *SingleJoinBolt) Execute(t *gale.Tuple) {
	if t.IsTick() {
		if b.ticks++; b.ticks%b.rotateEvery == 0 {
			b.rotate()
		}
		return
	}
	idv := make([]any, len(b.idFields))
	for i, f := range b.idFields {
		idv[i] = t.ValueByField(f)
	}
	id := fmt.Sprintf("%#v", idv)
	src := gale.StreamID{Component: t.SourceComponent(), Stream: t.SourceStream()}
	parts, bucket := b.parts(id)
	if _, dup := parts[src]; dup {
		b.Collector.Fail(t, fmt.Errorf("single join: received the same side (%s) of id %v twice", src, idv))
		return
	}
	parts[src] = t
	if len(parts) < b.numSources {
		return
	}
	delete(b.pending[bucket], id)
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

// parts returns the pending tuples of id and the bucket holding them,
// adding an empty entry to the newest bucket if id has none: an id
// expires with the bucket of its first tuple, as in Storm.
func (b *SingleJoinBolt) parts(id string) (map[gale.StreamID]*gale.Tuple, int) {
	for i, bucket := range b.pending {
		if p, ok := bucket[id]; ok {
			return p, i
		}
	}
	p := map[gale.StreamID]*gale.Tuple{}
	b.pending[0][id] = p
	return p, 0
}

// rotate fails the tuples of the oldest bucket and starts a new one.
func (b *SingleJoinBolt) rotate() {
	expired := b.pending[len(b.pending)-1]
	copy(b.pending[1:], b.pending)
	b.pending[0] = map[string]map[gale.StreamID]*gale.Tuple{}
	for _, parts := range expired {
		for _, t := range parts {
			b.Collector.Fail(t, ErrJoinExpired)
		}
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
