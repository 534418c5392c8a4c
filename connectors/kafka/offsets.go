package kafka

import "sort"

// offsetTracker is the commit bookkeeping of one partition under
// at-least-once: the offsets emitted and not yet behind the commit point,
// in the order they were fetched (increasing), each marked once acked.
// The commit point is the offset after the contiguous acked prefix: the
// first offset still in flight or waiting for a retry, or, when every
// tracked offset is acked, the offset after the last one. Offsets need
// not be consecutive (compaction and transaction markers leave gaps):
// what was never fetched is never waited for.
//
// It is not safe for concurrent use; the spout guards it with its mutex.
type offsetTracker struct {
	offs []int64 // tracked offsets from head on, increasing
	done []bool  // done[i]: offs[i] acked
	head int     // offs[:head] were dropped (acked prefix)
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
	return true
}

// ack marks off acked and moves the commit point past the acked prefix.
// It reports false for an offset not tracked (or already acked).
func (t *offsetTracker) ack(off int64) bool {
	live := t.offs[t.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i] >= off })
	if i == len(live) || live[i] != off || t.done[t.head+i] {
		return false
	}
	t.done[t.head+i] = true
	for t.head < len(t.offs) && t.done[t.head] {
		t.head++
	}
	t.compact()
	return true
}

// compact drops the acked prefix from the slices once it is most of them,
// so that memory stays proportional to what is tracked.
func (t *offsetTracker) compact() {
	if t.head == len(t.offs) {
		t.offs, t.done, t.head = t.offs[:0], t.done[:0], 0
		return
	}
	if t.head < 256 || t.head < len(t.offs)/2 {
		return
	}
	n := copy(t.offs, t.offs[t.head:])
	copy(t.done, t.done[t.head:])
	t.offs, t.done, t.head = t.offs[:n], t.done[:n], 0
}

// commitPoint is the offset to commit: the next offset to read after the
// contiguous acked prefix. ok is false before anything was tracked.
func (t *offsetTracker) commitPoint() (off int64, ok bool) {
	if t.next < 0 {
		return 0, false
	}
	if t.head < len(t.offs) {
		return t.offs[t.head], true
	}
	return t.next, true
}

// uncommitted is the number of tracked offsets at or past the commit
// point: in flight, waiting for a retry, or acked behind one that is not.
func (t *offsetTracker) uncommitted() int { return len(t.offs) - t.head }
