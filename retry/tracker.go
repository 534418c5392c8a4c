package retry

import (
	"container/heap"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/gale-stream/gale"
)

// Stats counts what a Tracker did. Its fields may be read from any
// goroutine.
type Stats struct {
	Retries      atomic.Int64 // retries handed out by Next
	Transient    atomic.Int64 // failures of class transient, timeouts included
	Delayable    atomic.Int64 // failures of class delayable
	Permanent    atomic.Int64 // failures of class permanent
	TimedOut     atomic.Int64 // of the transient ones, trees that timed out
	DeadLettered atomic.Int64 // messages given up (counted by Failed's GiveUp)
}

// Outcome is what to do with a failed message.
type Outcome struct {
	// Retry: the message is queued; Next hands it back from At on.
	Retry bool
	At    time.Time
	Class gale.FailureClass
	// GiveUp: the failure is permanent or the message is out of
	// attempts. Send Letter (after filling in Source, Key, Value and
	// whatever else the spout knows) to the dead-letter sink, and only
	// then ack or commit the message at its source.
	GiveUp bool
	Letter DeadLetter
}

// Tracker keeps a spout's failed messages until they are retried. It is
// not safe for concurrent use: a spout calls it from its own goroutine.
// Given the times it is passed and its seed, it is deterministic.
type Tracker[M any] struct {
	p     Policy
	rnd   *rand.Rand
	q     retryHeap[M]
	seq   uint64
	inRow int // retries handed out since the last new message
	stats Stats
}

// NewTracker returns a tracker for p (zero fields take their defaults);
// seed seeds the jitter.
func NewTracker[M any](p Policy, seed uint64) *Tracker[M] {
	return &Tracker[M]{p: p.WithDefaults(), rnd: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

// Policy returns the tracker's policy, defaults filled in.
func (t *Tracker[M]) Policy() Policy { return t.p }

// Failed records that msg, delivered attempts times (1 after its first
// delivery), failed with reason at now, and says what to do with it.
//
// A tree failed because the topology shut down (gale.ErrShutdown) is not
// the message's failure: it is queued again, due at once, without costing
// an attempt or counting in Stats, and never given up.
func (t *Tracker[M]) Failed(msg M, attempts int, reason error, now time.Time) Outcome {
	if errors.Is(reason, gale.ErrShutdown) {
		t.seq++
		heap.Push(&t.q, retryEntry[M]{msg: msg, attempts: max(attempts-1, 0), due: now, seq: t.seq})
		return Outcome{Retry: true, At: now, Class: gale.ClassTransient}
	}
	class, after := gale.ClassOf(reason)
	switch class {
	case gale.ClassPermanent:
		t.stats.Permanent.Add(1)
	case gale.ClassDelayable:
		t.stats.Delayable.Add(1)
	default:
		t.stats.Transient.Add(1)
		if errors.Is(reason, gale.ErrTimeout) {
			t.stats.TimedOut.Add(1)
		}
	}
	if class == gale.ClassPermanent || t.p.MaxAttempts > 0 && attempts >= t.p.MaxAttempts {
		t.stats.DeadLettered.Add(1)
		l := DeadLetter{Attempts: attempts, Class: class.String(), GaveUp: now}
		if reason != nil {
			l.LastError = reason.Error()
		}
		return Outcome{Class: class, GiveUp: true, Letter: l}
	}
	d := t.p.Backoff(attempts, t.rnd.Float64())
	if class == gale.ClassDelayable {
		d = max(d, after)
	}
	at := now.Add(d)
	t.seq++
	heap.Push(&t.q, retryEntry[M]{msg: msg, attempts: attempts, due: at, seq: t.seq})
	return Outcome{Retry: true, At: at, Class: class}
}

// Next returns a queued message whose retry is due at now, with the
// deliveries it has had, unless the fair share says a new message goes
// first: newWaiting tells that a new message is ready to emit. The
// message leaves the tracker; if it fails again, pass it to Failed again
// with attempts+1.
func (t *Tracker[M]) Next(now time.Time, newWaiting bool) (msg M, attempts int, ok bool) {
	if len(t.q) == 0 || t.q[0].due.After(now) {
		return msg, 0, false
	}
	if newWaiting && t.inRow >= t.p.RetriesPerNew {
		return msg, 0, false
	}
	e := heap.Pop(&t.q).(retryEntry[M])
	t.inRow++
	t.stats.Retries.Add(1)
	return e.msg, e.attempts, true
}

// EmittedNew tells the tracker that the spout emitted a new message,
// which restarts the fair share's count of retries in a row.
func (t *Tracker[M]) EmittedNew() { t.inRow = 0 }

// Len is the number of messages waiting for a retry.
func (t *Tracker[M]) Len() int { return len(t.q) }

// NextDue is when the earliest queued retry is due.
func (t *Tracker[M]) NextDue() (time.Time, bool) {
	if len(t.q) == 0 {
		return time.Time{}, false
	}
	return t.q[0].due, true
}

// Drop forgets the queued messages keep returns false for, such as those
// of a partition the spout no longer owns.
func (t *Tracker[M]) Drop(keep func(M) bool) {
	kept := t.q[:0]
	for _, e := range t.q {
		if keep(e.msg) {
			kept = append(kept, e)
		}
	}
	clear(t.q[len(kept):])
	t.q = kept
	heap.Init(&t.q)
}

// Stats returns the tracker's counters.
func (t *Tracker[M]) Stats() *Stats { return &t.stats }

type retryEntry[M any] struct {
	msg      M
	attempts int
	due      time.Time
	seq      uint64 // ties on due go in failure order
}

type retryHeap[M any] []retryEntry[M]

func (h retryHeap[M]) Len() int { return len(h) }
func (h retryHeap[M]) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h retryHeap[M]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *retryHeap[M]) Push(x any)   { *h = append(*h, x.(retryEntry[M])) }
func (h *retryHeap[M]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = retryEntry[M]{}
	*h = old[:len(old)-1]
	return e
}
