package kafka

import "sort"

// offsetTracker is the commit bookkeeping of one partition under
// at-least-once: the offsets emitted and not yet finished (acked, or
// given up and dead-lettered), in the order they were fetched
// (increasing). The commit point is the first offset not finished (in
// flight, or waiting for a retry or for the dead-letter sink), or, when
// every tracked offset is finished, the offset after the last one.
// Offsets need not be consecutive (compaction and transaction markers
// leave gaps): what was never fetched is never waited for.
//
// Memory is proportional to the offsets open (not finished), not to the
// span from the commit point to the newest offset: the finished ones are
// dropped from wherever they are once they are most of what is kept, so
// a record waiting for a retry does not make the spout keep every
// offset acked behind it.
//
// It is not safe for concurrent use; the spout guards it with its mutex.
type offsetTracker struct {
	offs []int64 // kept offsets from head on, increasing
	done []bool  // done[i]: offs[i] finished
	head int     // offs[:head] were dropped (finished prefix)
	open int     // tracked offsets not finished
	next int64   // offset after the last tracked one; -1 before the first
}

func newOffsetTracker() offsetTracker { return offsetTracker{next: -1} }

// track adds off, which must be above every offset tracked so far; it
// reports false (and tracks nothing) otherwise.
func (t *offsetTracker) track(off int64) bool {
	if t.next >= 0 && off < t.next {
		return false
	}
	t.offs = append(t.offs, off)
	t.done = append(t.done, false)
	t.next = off + 1
	t.open++
	return true
}

// ack marks off finished and moves the commit point past the finished
// prefix. It reports false for an offset not tracked (or already
// finished).
func (t *offsetTracker) ack(off int64) bool {
	live := t.offs[t.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i] >= off })
	if i == len(live) || live[i] != off || t.done[t.head+i] {
		return false
	}
	t.done[t.head+i] = true
	t.open--
	for t.head < len(t.offs) && t.done[t.head] {
		t.head++
	}
	t.compact()
	return true
}

// compact drops the finished offsets once they are most of what is kept:
// the prefix by moving head, the rest by copying the open ones down.
func (t *offsetTracker) compact() {
	if t.open == 0 {
		t.offs, t.done, t.head = t.offs[:0], t.done[:0], 0
		return
	}
	kept := len(t.offs) - t.head
	if kept < 256 || kept < 2*t.open {
		return
	}
	n := 0
	for i := t.head; i < len(t.offs); i++ {
		if !t.done[i] {
			t.offs[n], t.done[n] = t.offs[i], false
			n++
		}
	}
	t.offs, t.done, t.head = t.offs[:n], t.done[:n], 0
}

// commitPoint is the offset to commit: the first offset not finished,
// or the next one to read when all are. ok is false before anything was
// tracked.
func (t *offsetTracker) commitPoint() (off int64, ok bool) {
	if t.next < 0 {
		return 0, false
	}
	if t.head < len(t.offs) {
		return t.offs[t.head], true
	}
	return t.next, true
}

// openCount is the number of tracked offsets not finished: in flight, or
// waiting for a retry or for the dead-letter sink.
func (t *offsetTracker) openCount() int { return t.open }

// pass moves past off, a record not tracked because it finished before
// (resume.go), as past a gap: the commit point never waits for it. It
// reports false (and does nothing) if off is not above every offset
// tracked so far.
func (t *offsetTracker) pass(off int64) bool {
	if t.next >= 0 && off < t.next {
		return false
	}
	t.next = off + 1
	return true
}
