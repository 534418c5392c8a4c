// Package join is a join bolt in the spirit of Storm's SingleJoinBolt, and
// an example of multi-anchoring.
//
// Two spouts emit halves of a record: "genders" emits (id, gender) and
// "ages" emits (id, age), each tuple with its id as the message id. The
// "join" bolt subscribes to both with fields grouping on "id", so both
// halves of a record reach the same join task. It holds whichever half
// arrives first, keyed by id, until the other half arrives; it then emits
// (id, gender, age) anchored on both halves and acks them. A "sink" bolt
// records the joined tuples and acks them.
//
// # What multi-anchoring buys
//
// The joined tuple is emitted with
//
//	collector.EmitStream(gale.DefaultStream, []*gale.Tuple{a, b}, ...)
//
// so it belongs to two tuple trees at once: the tree of the gender message
// and the tree of the age message. Acking the two inputs right after the
// emit does not complete either tree, because each now also waits for the
// joined tuple. Hence:
//
//   - both spout messages are acked only once the joined tuple has been
//     processed (acked by the sink), so nothing is acknowledged at the
//     source before the joined result is safely handled downstream;
//   - if the sink fails the joined tuple (or it times out), both trees
//     fail: the gender spout and the age spout each get Fail for their
//     message and can replay it, and the replays meet again in the join.
//
// Anchoring on only one input would lose that: a failure downstream would
// replay one half, and the join would wait for another half that never
// comes back.
//
// # Expiry
//
// A half whose partner does not arrive is failed, so its spout can replay
// it, rather than held forever. The join bolt gets a tick tuple every
// Options.ExpirySecs seconds (topology.tick.tuple.freq.secs, set on the
// join component only) and fails, with ErrExpired, every half that has
// waited through two ticks: between ExpirySecs and 2·ExpirySecs after it
// arrived, like Storm's two-bucket TimeCacheMap. Keep 2·ExpirySecs below
// topology.message.timeout.secs, or the spout's timeout fires first.
package join

import (
	"errors"
	"fmt"

	"github.com/gale-stream/gale"
)

// Component ids.
const (
	GendersSpout = "genders"
	AgesSpout    = "ages"
	JoinBolt     = "join"
	SinkBolt     = "sink"
)

// ErrExpired is the reason the join fails a half whose partner did not
// arrive within the expiry; the spout's Fail gets a *gale.FailedError that
// wraps it (test with errors.Is).
var ErrExpired = errors.New("join: the other side did not arrive within the expiry")

// ErrDuplicate is the reason the join fails a waiting half when another
// tuple with the same id arrives from the same source; the newer one waits
// in its place.
var ErrDuplicate = errors.New("join: replaced by a newer tuple with the same id from the same source")

// Gender is one record of the genders spout.
type Gender struct {
	ID     string
	Gender string
}

// Age is one record of the ages spout.
type Age struct {
	ID  string
	Age int
}

// Joined is one output record of the join.
type Joined struct {
	ID     string
	Gender string
	Age    int
}

// Options configure Topology.
type Options struct {
	// ExpirySecs is how long a half waits for its partner, in seconds: it
	// is failed between ExpirySecs and 2·ExpirySecs after it arrived.
	// Default 5.
	ExpirySecs int
	// Joiners is the parallelism of the join bolt; default 1.
	Joiners int
	// MaxReplays is how many times a spout re-emits a failed message;
	// 0 never replays.
	MaxReplays int
	// Sink, if set, is called with each joined record; a non-nil error
	// fails the joined tuple (and so both of its spout messages), nil acks
	// it. It is called from the sink's only task, never concurrently.
	Sink func(Joined) error
}

// Topology builds genders + ages → join → sink. Ids must be unique within
// each of genders and ages; each record's id is its message id.
func Topology(genders []Gender, ages []Age, opts Options) (*gale.Topology, error) {
	if opts.ExpirySecs == 0 {
		opts.ExpirySecs = 5
	}
	if opts.Joiners == 0 {
		opts.Joiners = 1
	}
	gv := make([]gale.Values, len(genders))
	for i, g := range genders {
		gv[i] = gale.Values{g.ID, g.Gender}
	}
	av := make([]gale.Values, len(ages))
	for i, a := range ages {
		av[i] = gale.Values{a.ID, a.Age}
	}
	var errs []error
	for name, vs := range map[string][]gale.Values{GendersSpout: gv, AgesSpout: av} {
		seen := make(map[any]bool, len(vs))
		for _, v := range vs {
			if seen[v[0]] {
				errs = append(errs, fmt.Errorf("join: %s: id %v appears twice; ids are message ids and must be unique", name, v[0]))
			}
			seen[v[0]] = true
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout(GendersSpout, func() gale.Spout {
		return &RecordSpout{Fields: []string{"id", "gender"}, Records: gv, MaxReplays: opts.MaxReplays}
	}, 1)
	b.SetSpout(AgesSpout, func() gale.Spout {
		return &RecordSpout{Fields: []string{"id", "age"}, Records: av, MaxReplays: opts.MaxReplays}
	}, 1)
	b.SetBolt(JoinBolt, func() gale.Bolt {
		return &Join{Key: "id", OutFields: []string{"id", "gender", "age"}}
	}, opts.Joiners).
		FieldsGrouping(GendersSpout, "id").
		FieldsGrouping(AgesSpout, "id").
		AddConfiguration(gale.TopologyTickTupleFreqSecs, opts.ExpirySecs)
	b.SetBolt(SinkBolt, func() gale.Bolt { return &Sink{Record: opts.Sink} }, 1).
		ShuffleGrouping(JoinBolt)
	return b.Build()
}

// RecordSpout emits Records in order on its default stream with Fields;
// the first value of each record is its id and its message id. A failed
// message is re-emitted up to MaxReplays times.
type RecordSpout struct {
	gale.BaseSpout
	Fields     []string
	Records    []gale.Values
	MaxReplays int

	next    int
	byID    map[any]gale.Values
	replays map[any]int
	queue   []any
}

// DeclareOutputFields declares the default stream with Fields.
func (s *RecordSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare(s.Fields...) }

// Open indexes the records by id.
func (s *RecordSpout) Open(tc *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.byID = make(map[any]gale.Values, len(s.Records))
	for _, r := range s.Records {
		s.byID[r[0]] = r
	}
	s.replays = make(map[any]int)
	return s.BaseSpout.Open(tc, c)
}

// NextTuple emits a replay if one is queued, else the next record.
func (s *RecordSpout) NextTuple() {
	if len(s.queue) > 0 {
		id := s.queue[0]
		s.queue = s.queue[1:]
		s.Collector.Emit(id, s.byID[id]...)
		return
	}
	if s.next < len(s.Records) {
		r := s.Records[s.next]
		s.next++
		s.Collector.Emit(r[0], r...)
	}
}

// Fail queues the message for replay if it has replays left.
func (s *RecordSpout) Fail(msgID any, _ error) {
	if s.replays[msgID] < s.MaxReplays {
		s.replays[msgID]++
		s.queue = append(s.queue, msgID)
	}
}

// Join joins the tuples of two input streams on the Key field. It holds
// the first tuple of each key until a tuple with that key arrives from the
// other source, then emits OutFields, each taken from whichever of the two
// tuples has it (the first-arrived one if both do), anchored on both, and
// acks both. A tuple that waits through two tick tuples is failed with
// ErrExpired; without ticks nothing expires.
type Join struct {
	gale.BaseBolt
	Key       string
	OutFields []string

	ticks   uint64
	waiting map[any]*half
	out     []any
}

// half is a tuple waiting for its partner.
type half struct {
	t    *gale.Tuple
	born uint64 // Join.ticks when it arrived
}

// DeclareOutputFields declares OutFields.
func (j *Join) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare(j.OutFields...) }

// Prepare makes the map.
func (j *Join) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	j.waiting = make(map[any]*half)
	return j.BaseBolt.Prepare(tc, c)
}

// Execute joins one tuple, or expires waiting ones on a tick.
func (j *Join) Execute(t *gale.Tuple) {
	if t.IsTick() {
		j.expire()
		return
	}
	key := t.ValueByField(j.Key)
	h := j.waiting[key]
	switch {
	case h == nil:
		j.waiting[key] = &half{t: t, born: j.ticks}
		return
	case h.t.SourceComponent() == t.SourceComponent() && h.t.SourceStream() == t.SourceStream():
		j.Collector.Fail(h.t, ErrDuplicate)
		h.t, h.born = t, j.ticks
		return
	}
	delete(j.waiting, key)
	a, b := h.t, t
	j.out = j.out[:0]
	for _, f := range j.OutFields {
		switch {
		case a.Contains(f):
			j.out = append(j.out, a.ValueByField(f))
		case b.Contains(f):
			j.out = append(j.out, b.ValueByField(f))
		default:
			j.out = append(j.out, nil)
		}
	}
	// Multi-anchoring: the joined tuple belongs to both trees.
	if _, err := j.Collector.EmitStream(gale.DefaultStream, []*gale.Tuple{a, b}, j.out...); err != nil {
		j.Collector.Fail(a, err)
		j.Collector.Fail(b, err)
		return
	}
	j.Collector.Ack(a)
	j.Collector.Ack(b)
}

// expire fails the tuples that have waited through two ticks.
func (j *Join) expire() {
	j.ticks++
	for key, h := range j.waiting {
		if j.ticks-h.born >= 2 {
			j.Collector.Fail(h.t, ErrExpired)
			delete(j.waiting, key)
		}
	}
}

// Cleanup forgets the waiting tuples; their spouts fail them at shutdown.
func (j *Join) Cleanup() { clear(j.waiting) }

// Sink hands each joined (id, gender, age) tuple to Record and acks it, or
// fails it if Record returns an error. A nil Record acks everything.
type Sink struct {
	gale.BaseBolt
	Record func(Joined) error
}

// DeclareOutputFields declares nothing: the sink is the end.
func (*Sink) DeclareOutputFields(gale.OutputDeclarer) {}

// Execute records and acks one joined tuple.
func (s *Sink) Execute(t *gale.Tuple) {
	if s.Record != nil {
		j := Joined{ID: t.GetStringByField("id"), Gender: t.GetStringByField("gender"), Age: t.GetIntByField("age")}
		if err := s.Record(j); err != nil {
			s.Collector.Fail(t, err)
			return
		}
	}
	s.Collector.Ack(t)
}
