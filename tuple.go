package gale

import (
	"fmt"
	"time"
)

// SystemComponent and TickStream identify tick tuples, as in Storm.
const (
	SystemComponent = "__system"
	TickStream      = "__tick"
)

// streamInfo is shared by every tuple one task emits on one stream.
type streamInfo struct {
	component string
	stream    string
	task      int32
	fields    []string
	index     map[string]int
	direct    bool
	wireID    uint32 // the stream's number on the wire (runtime.wireStreams)

	_ [48]byte // read with every tuple: whole cache lines (TestHotStructsFillCacheLines)
}

func newStreamInfo(component, stream string, fields []string, direct bool) *streamInfo {
	si := &streamInfo{component: component, stream: stream, fields: fields, direct: direct, index: make(map[string]int, len(fields))}
	for i, f := range fields {
		si.index[f] = i
	}
	return si
}

var tickInfo = func() *streamInfo {
	si := newStreamInfo(SystemComponent, TickStream, []string{"rate_secs"}, false)
	si.task = -1
	return si
}()

// anchorPair ties a tuple to one tree: root is the spout tuple's id, edge
// the id of this tuple within that tree.
type anchorPair struct {
	root, edge uint64
}

// Tuple is one message: an ordered list of values with field names, and
// where it came from. A tuple received in Execute may be kept after Execute
// returns (to ack it later or to anchor on it); its values must not be
// modified.
//
// The layout is kept to 64 bytes because a tuple is allocated per emit per
// target: up to two values live inline, more in x; the number of values is
// the stream's field count (emit checks it); the source task comes with
// src and the destination task with the batch.
type Tuple struct {
	src *streamInfo
	inl [2]any
	x   *tupleExt // rare parts: values beyond inl, trees beyond root
	// Acking. A tuple belongs to at most one tree in the common case: root
	// is the tree's id, edge this tuple's id in it XORed with the ids of
	// every tuple emitted anchored on it (Storm's ackVal), so that its ack
	// is simply (root, edge). Multi-anchored tuples carry other trees in
	// x.more. The top bit of root marks the tuple acked or failed.
	root, edge uint64
}

type tupleExt struct {
	vals []any // all values, when there are more than len(inl)
	more []anchorPair
	// reusedBy, if set, marks a tuple poisoned under
	// bridge.Hooks.CheckTupleReuse: the bolt it names acked or failed it
	// with topology.tuple.reuse on, and any later use panics.
	reusedBy string
}

// live panics if the tuple was poisoned (see tupleExt.reusedBy).
func (x *tupleExt) live() {
	if x.reusedBy != "" {
		panic(fmt.Sprintf("gale: bolt %q used a tuple after acking or failing it; with topology.tuple.reuse on, "+
			"Gale reuses that tuple's memory for later tuples: copy what you need before the ack, or turn reuse off for this bolt", x.reusedBy))
	}
}

// reusedValue replaces the values of a poisoned tuple, so that a bolt that
// kept the slice Values returned sees them change as it would under reuse.
type reusedValue struct{ bolt string }

func (v *reusedValue) String() string {
	return fmt.Sprintf("<tuple reused: bolt %q acked it>", v.bolt)
}

// doneBit is never set in a root id (see newRoot).
const doneBit = 1 << 63

func (t *Tuple) treeRoot() uint64 { return t.root &^ doneBit }
func (t *Tuple) isDone() bool     { return t.root&doneBit != 0 }
func (t *Tuple) markDone()        { t.root |= doneBit }

// Values returns the tuple's values. Do not modify them.
func (t *Tuple) Values() []any {
	if t.x != nil {
		t.x.live()
		if t.x.vals != nil {
			return t.x.vals
		}
	}
	n := len(t.src.fields)
	return t.inl[:n:n]
}

// setValues stores vals in the tuple; len(vals) is the stream's arity.
func (t *Tuple) setValues(vals []any) {
	switch len(vals) {
	case 0:
		return
	case 1:
		t.inl[0] = vals[0]
		return
	case 2:
		t.inl[0], t.inl[1] = vals[0], vals[1]
		return
	}
	t.x = &tupleExt{vals: append([]any(nil), vals...)}
}

// shareValues makes t carry the same values as o.
func (t *Tuple) shareValues(o *Tuple) {
	t.inl = o.inl
	if o.x != nil && o.x.vals != nil {
		t.x = &tupleExt{vals: o.x.vals}
	}
}

// Len is the number of values.
func (t *Tuple) Len() int { return len(t.src.fields) }

// Value returns the i-th value.
func (t *Tuple) Value(i int) any {
	if t.x != nil {
		t.x.live()
		if t.x.vals != nil {
			return t.x.vals[i]
		}
	}
	if i >= len(t.src.fields) {
		panic(fmt.Sprintf("gale: value index %d out of range: tuple from %s:%s has %d values", i, t.src.component, t.src.stream, len(t.src.fields)))
	}
	return t.inl[i]
}

// morePairs returns the trees the tuple belongs to besides root.
func (t *Tuple) morePairs() []anchorPair {
	if t.x == nil {
		return nil
	}
	return t.x.more
}

// Fields returns the field names of the tuple's stream.
func (t *Tuple) Fields() []string { return t.src.fields }

// FieldIndex returns the position of a field, or -1.
func (t *Tuple) FieldIndex(field string) int {
	if i, ok := t.src.index[field]; ok {
		return i
	}
	return -1
}

// Contains reports whether the tuple's stream has the field.
func (t *Tuple) Contains(field string) bool {
	_, ok := t.src.index[field]
	return ok
}

// ValueByField returns the value of a field. It panics, naming the stream
// and its fields, if the stream has no such field.
func (t *Tuple) ValueByField(field string) any {
	i, ok := t.src.index[field]
	if !ok {
		panic(fmt.Sprintf("gale: stream %s:%s has no field %q (fields: %v)", t.src.component, t.src.stream, field, t.src.fields))
	}
	return t.Value(i)
}

// SourceComponent is the id of the component that emitted the tuple.
func (t *Tuple) SourceComponent() string { return t.src.component }

// SourceStream is the stream the tuple was emitted on.
func (t *Tuple) SourceStream() string { return t.src.stream }

// SourceTask is the task that emitted the tuple.
func (t *Tuple) SourceTask() int { return int(t.src.task) }

// IsTick reports whether this is a tick tuple (topology.tick.tuple.freq.secs).
func (t *Tuple) IsTick() bool { return t.src == tickInfo }

// String describes the tuple for logs.
func (t *Tuple) String() string {
	return fmt.Sprintf("source: %s:%d, stream: %s, values: %v", t.src.component, t.src.task, t.src.stream, t.Values())
}

func (t *Tuple) typeErr(i int, want string) string {
	name := fmt.Sprint(i)
	if i < len(t.src.fields) {
		name = fmt.Sprintf("%d (%q)", i, t.src.fields[i])
	}
	return fmt.Sprintf("gale: value %s of tuple from %s:%s is %T, not %s", name, t.src.component, t.src.stream, t.Value(i), want)
}

// The typed getters below panic with a message naming the stream, field and
// actual type when the value has another type, as Storm's getString throws.
// A panic in Execute is handled by the panic policy (see RunLocal).

// GetString returns value i as a string.
func (t *Tuple) GetString(i int) string {
	if s, ok := t.Value(i).(string); ok {
		return s
	}
	panic(t.typeErr(i, "string"))
}

// GetInt64 returns value i as an int64; any integer type is accepted.
func (t *Tuple) GetInt64(i int) int64 {
	switch v := t.Value(i).(type) {
	case int64:
		return v
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case int16:
		return int64(v)
	case int8:
		return int64(v)
	case uint32:
		return int64(v)
	case uint16:
		return int64(v)
	case uint8:
		return int64(v)
	case uint:
		return int64(v)
	case uint64:
		return int64(v)
	}
	panic(t.typeErr(i, "an integer"))
}

// GetInt returns value i as an int.
func (t *Tuple) GetInt(i int) int { return int(t.GetInt64(i)) }

// GetFloat64 returns value i as a float64; float32 is accepted.
func (t *Tuple) GetFloat64(i int) float64 {
	switch v := t.Value(i).(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	}
	panic(t.typeErr(i, "float64"))
}

// GetBool returns value i as a bool.
func (t *Tuple) GetBool(i int) bool {
	if b, ok := t.Value(i).(bool); ok {
		return b
	}
	panic(t.typeErr(i, "bool"))
}

// GetBytes returns value i as a []byte.
func (t *Tuple) GetBytes(i int) []byte {
	if b, ok := t.Value(i).([]byte); ok {
		return b
	}
	panic(t.typeErr(i, "[]byte"))
}

// GetTime returns value i as a time.Time.
func (t *Tuple) GetTime(i int) time.Time {
	if v, ok := t.Value(i).(time.Time); ok {
		return v
	}
	panic(t.typeErr(i, "time.Time"))
}

func (t *Tuple) fieldIndex(field string) int {
	i, ok := t.src.index[field]
	if !ok {
		panic(fmt.Sprintf("gale: stream %s:%s has no field %q (fields: %v)", t.src.component, t.src.stream, field, t.src.fields))
	}
	return i
}

// GetStringByField returns a field's value as a string.
func (t *Tuple) GetStringByField(field string) string { return t.GetString(t.fieldIndex(field)) }

// GetInt64ByField returns a field's value as an int64.
func (t *Tuple) GetInt64ByField(field string) int64 { return t.GetInt64(t.fieldIndex(field)) }

// GetIntByField returns a field's value as an int.
func (t *Tuple) GetIntByField(field string) int { return t.GetInt(t.fieldIndex(field)) }

// GetFloat64ByField returns a field's value as a float64.
func (t *Tuple) GetFloat64ByField(field string) float64 { return t.GetFloat64(t.fieldIndex(field)) }

// GetBoolByField returns a field's value as a bool.
func (t *Tuple) GetBoolByField(field string) bool { return t.GetBool(t.fieldIndex(field)) }

// GetBytesByField returns a field's value as a []byte.
func (t *Tuple) GetBytesByField(field string) []byte { return t.GetBytes(t.fieldIndex(field)) }

// GetTimeByField returns a field's value as a time.Time.
func (t *Tuple) GetTimeByField(field string) time.Time { return t.GetTime(t.fieldIndex(field)) }

// tupleSlab hands out tuples to one emitter: first recycled ones (see
// TopologyTupleReuse), else from blocks allocated slabSize at a time.
type tupleSlab struct {
	free    []*Tuple        // recycled, zeroed tuples
	pool    <-chan []*Tuple // where consumers return them; nil = no reuse anywhere
	empties chan<- []*Tuple // where used-up chunks go back to the consumers
	block   []Tuple
}

const slabSize = 512

func (s *tupleSlab) get() *Tuple {
	if n := len(s.free); n > 0 {
		t := s.free[n-1]
		s.free = s.free[:n-1]
		return t
	}
	if len(s.block) == 0 {
		if s.free != nil {
			// Hand the chunk back for refilling, without the pointers
			// it still holds past its length.
			clear(s.free[:cap(s.free)])
			select {
			case s.empties <- s.free[:0]:
			default:
			}
			s.free = nil
		}
		select {
		case s.free = <-s.pool: // a nil pool never receives
			return s.get()
		default:
		}
		s.block = make([]Tuple, slabSize)
	}
	t := &s.block[0]
	s.block = s.block[1:]
	return t
}

// tupleRecycler collects the tuples a reusing bolt is done with and hands
// them back, recycleChunk at a time, to whichever emitter runs out first.
// It belongs to the bolt's executor goroutine.
type tupleRecycler struct {
	pool    chan<- []*Tuple
	empties <-chan []*Tuple // used-up chunks from the emitters, to refill
	chunk   []*Tuple

	_ [24]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

func newTupleRecycler(rt *runtime) *tupleRecycler {
	return &tupleRecycler{pool: rt.freeTuples, empties: rt.emptyChunks}
}

// tuplePoison marks the tuples a bolt with topology.tuple.reuse is done
// with, under bridge.Hooks.CheckTupleReuse, so that any later use shows.
type tuplePoison struct {
	ext  *tupleExt
	vals [2]any
}

func newTuplePoison(bolt string) *tuplePoison {
	v := &reusedValue{bolt: bolt}
	return &tuplePoison{ext: &tupleExt{reusedBy: bolt}, vals: [2]any{v, v}}
}

func (p *tuplePoison) apply(t *Tuple) { t.x, t.inl = p.ext, p.vals }

const recycleChunk = 256

// put recycles t if the bolt is done with it: acked or failed, and with no
// extension (multi-anchored or wide tuples may share theirs).
func (r *tupleRecycler) put(t *Tuple) {
	if !t.isDone() || t.x != nil {
		return
	}
	*t = Tuple{}
	if r.chunk == nil {
		select {
		case r.chunk = <-r.empties:
		default:
			r.chunk = make([]*Tuple, 0, recycleChunk)
		}
	}
	r.chunk = append(r.chunk, t)
	if len(r.chunk) == recycleChunk {
		select {
		case r.pool <- r.chunk:
		default: // every emitter is stocked: leave these to the GC
		}
		r.chunk = nil
	}
}
