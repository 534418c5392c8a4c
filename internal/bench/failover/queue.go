package failover

import (
	"slices"
	"time"

	"github.com/gale-stream/gale/internal/bench"
)

// Msg is one sentence of the queue, as a spout takes it.
type Msg struct {
	ID   uint64
	Text string
}

// Counts are the queue's totals since it was made.
type Counts struct {
	// Produced is the sentences made (at the rate, while producing).
	Produced int64 `json:"produced"`
	// Throttled is the sentences the pacer asked for that were not made
	// because MaxUnacked messages were unacked already.
	Throttled int64 `json:"throttled"`
	// Emitted is the messages handed to spouts, replays included.
	Emitted int64 `json:"emitted"`
	// Acked is the messages acked, each counted once.
	Acked int64 `json:"acked"`
	// Duplicates is the acks of messages acked before.
	Duplicates int64 `json:"duplicates"`
	// Failed is the nacks: trees a spout saw fail (a bolt failed them or
	// they timed out).
	Failed int64 `json:"failed"`
	// Replayed is the messages put back to be taken again: ReplayedFailed
	// on a nack, ReplayedLease when their lease expired, ReplayedLeft
	// when the connection of the spout holding them closed (its worker
	// died).
	Replayed       int64 `json:"replayed"`
	ReplayedFailed int64 `json:"replayed_failed"`
	ReplayedLease  int64 `json:"replayed_lease"`
	ReplayedLeft   int64 `json:"replayed_disconnect"`
	// Unknown is the acks and nacks of ids the queue never made.
	Unknown int64 `json:"unknown"`
}

// Queue is the state of a hold-and-ack queue (Kestrel's reliable reads):
// a message taken by a spout is held for it, under a lease, until the
// spout acks it (then it is gone) or nacks it, the lease expires or the
// spout's connection closes (then it is put back, ahead of new messages,
// to be taken again). A message is lost if it is never acked.
//
// The queue keeps state only for messages not acked yet, at most
// MaxUnacked of them: an ack of an id it made and no longer keeps is a
// duplicate. Time is an input (every method takes now), so the
// accounting is tested without a clock. A Queue is not safe for
// concurrent use; Server serializes the calls.
type Queue struct {
	lease      time.Duration
	maxUnacked int
	gen        *bench.SentenceGen

	last   uint64 // the last id made; ids start at 1
	msgs   map[uint64]*entry
	ready  fifo // new messages
	replay fifo // put back, taken first
	counts Counts
	hist   *bench.Histogram // complete latencies of the acks since the last Window
}

type entry struct {
	text   string
	holder int       // 0: ready to be taken
	until  time.Time // the lease's end, while held
}

// NewQueue makes an empty queue whose holds last lease and which keeps
// at most maxUnacked messages not acked yet (≥ 1).
func NewQueue(lease time.Duration, maxUnacked int) *Queue {
	return &Queue{
		lease: lease, maxUnacked: max(maxUnacked, 1),
		gen:  bench.NewSentenceGen(bench.SpoutSeed(0)),
		msgs: make(map[uint64]*entry),
		hist: new(bench.Histogram),
	}
}

// Produce makes a new sentence, ready to be taken, unless MaxUnacked are
// unacked already (then it counts it as throttled). It says whether it
// made one.
func (q *Queue) Produce() bool {
	if len(q.msgs) >= q.maxUnacked {
		q.counts.Throttled++
		return false
	}
	q.last++
	q.msgs[q.last] = &entry{text: q.gen.Next()}
	q.ready.push(q.last)
	q.counts.Produced++
	return true
}

// Take holds up to n messages for holder (≥ 1) until now+lease, replays
// first, and returns them.
func (q *Queue) Take(holder, n int, now time.Time) []Msg {
	var out []Msg
	for len(out) < n {
		id, ok := q.replay.pop()
		if !ok {
			if id, ok = q.ready.pop(); !ok {
				break
			}
		}
		e := q.msgs[id]
		if e == nil || e.holder != 0 {
			continue // acked while it waited (a late ack)
		}
		e.holder, e.until = holder, now.Add(q.lease)
		out = append(out, Msg{ID: id, Text: e.text})
	}
	q.counts.Emitted += int64(len(out))
	return out
}

// Ack records that message id's tree completed, latency after its spout
// emitted it. Whoever holds it, it is acked and gone; an id acked before
// is counted as a duplicate.
func (q *Queue) Ack(id uint64, latency time.Duration) {
	e := q.msgs[id]
	switch {
	case e != nil:
		delete(q.msgs, id)
		q.counts.Acked++
		q.hist.Record(latency)
	case id >= 1 && id <= q.last:
		q.counts.Duplicates++
	default:
		q.counts.Unknown++
	}
}

// Nack records that message id's tree failed at holder's spout: if
// holder still holds it, it is put back at once.
func (q *Queue) Nack(holder int, id uint64) {
	if id < 1 || id > q.last {
		q.counts.Unknown++
		return
	}
	q.counts.Failed++
	if e := q.msgs[id]; e != nil && e.holder == holder {
		q.putBack(id, e)
		q.counts.ReplayedFailed++
	}
}

// Expire puts back every message whose lease has ended at now, oldest
// id first.
func (q *Queue) Expire(now time.Time) {
	q.counts.ReplayedLease += q.putBackAll(func(e *entry) bool { return e.holder != 0 && !now.Before(e.until) })
}

// Leave puts back every message holder holds, oldest id first: its
// connection closed.
func (q *Queue) Leave(holder int) {
	q.counts.ReplayedLeft += q.putBackAll(func(e *entry) bool { return e.holder == holder })
}

func (q *Queue) putBackAll(match func(*entry) bool) int64 {
	var back []uint64
	for id, e := range q.msgs {
		if match(e) {
			back = append(back, id)
		}
	}
	slices.Sort(back)
	for _, id := range back {
		q.putBack(id, q.msgs[id])
	}
	return int64(len(back))
}

func (q *Queue) putBack(id uint64, e *entry) {
	e.holder, e.until = 0, time.Time{}
	q.replay.push(id)
	q.counts.Replayed++
}

// Counts are the totals so far.
func (q *Queue) Counts() Counts { return q.counts }

// Unacked is the messages not acked yet (ready or held): after a drain,
// the lost ones.
func (q *Queue) Unacked() int { return len(q.msgs) }

// Held is the messages held by spouts.
func (q *Queue) Held() int {
	n := 0
	for _, e := range q.msgs {
		if e.holder != 0 {
			n++
		}
	}
	return n
}

// Latencies returns the complete latencies of the acks since the last
// call, and starts a new histogram.
func (q *Queue) Latencies() *bench.Histogram {
	h := q.hist
	q.hist = new(bench.Histogram)
	return h
}

// fifo is a queue of ids; its storage is reused once drained.
type fifo struct {
	ids  []uint64
	head int
}

func (f *fifo) push(id uint64) { f.ids = append(f.ids, id) }

func (f *fifo) pop() (uint64, bool) {
	if f.head == len(f.ids) {
		return 0, false
	}
	id := f.ids[f.head]
	f.head++
	if f.head == len(f.ids) {
		f.ids, f.head = f.ids[:0], 0
	} else if f.head >= 1024 && f.head*2 >= len(f.ids) {
		n := copy(f.ids, f.ids[f.head:])
		f.ids, f.head = f.ids[:n], 0
	}
	return id, true
}

func (f *fifo) len() int { return len(f.ids) - f.head }
