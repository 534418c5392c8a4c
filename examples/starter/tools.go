package starter

import (
	"fmt"
	"time"
)

// SlotBasedCounter counts objects in a fixed number of slots, as
// storm-starter's: a sliding window is a ring of them, one per emit
// interval. It is not safe for concurrent use.
type SlotBasedCounter[T comparable] struct {
	counts   map[T][]int64
	numSlots int
}

// NewSlotBasedCounter returns a counter of numSlots slots.
func NewSlotBasedCounter[T comparable](numSlots int) *SlotBasedCounter[T] {
	if numSlots <= 0 {
		panic(fmt.Sprintf("starter: number of slots must be > 0, got %d", numSlots))
	}
	return &SlotBasedCounter[T]{counts: map[T][]int64{}, numSlots: numSlots}
}

// IncrementCount adds one to obj's count in slot.
func (c *SlotBasedCounter[T]) IncrementCount(obj T, slot int) {
	s := c.counts[obj]
	if s == nil {
		s = make([]int64, c.numSlots)
		c.counts[obj] = s
	}
	s[slot]++
}

// Count returns obj's count in slot.
func (c *SlotBasedCounter[T]) Count(obj T, slot int) int64 {
	if s := c.counts[obj]; s != nil {
		return s[slot]
	}
	return 0
}

// Counts returns each object's total over all slots.
func (c *SlotBasedCounter[T]) Counts() map[T]int64 {
	out := make(map[T]int64, len(c.counts))
	for obj, s := range c.counts {
		var n int64
		for _, v := range s {
			n += v
		}
		out[obj] = n
	}
	return out
}

// WipeSlot resets every object's count in slot to zero.
func (c *SlotBasedCounter[T]) WipeSlot(slot int) {
	for _, s := range c.counts {
		s[slot] = 0
	}
}

// WipeZeros forgets the objects whose counts are all zero.
func (c *SlotBasedCounter[T]) WipeZeros() {
	for obj, s := range c.counts {
		zero := true
		for _, v := range s {
			zero = zero && v == 0
		}
		if zero {
			delete(c.counts, obj)
		}
	}
}

// SlidingWindowCounter counts objects over a window of slots that slides
// by one slot each time the counts are read, as storm-starter's: with a
// window of N slots, GetCountsThenAdvanceWindow returns the counts of the
// last N intervals between its calls. It is not safe for concurrent use.
type SlidingWindowCounter[T comparable] struct {
	counter       *SlotBasedCounter[T]
	head, tail    int
	windowInSlots int
}

// NewSlidingWindowCounter returns a counter over windowInSlots slots; it
// panics below 2, as Storm's refuses them (a window of one slot does not
// slide).
func NewSlidingWindowCounter[T comparable](windowInSlots int) *SlidingWindowCounter[T] {
	if windowInSlots < 2 {
		panic(fmt.Sprintf("starter: window length in slots must be at least two, got %d", windowInSlots))
	}
	return &SlidingWindowCounter[T]{counter: NewSlotBasedCounter[T](windowInSlots), head: 0, tail: 1 % windowInSlots, windowInSlots: windowInSlots}
}

// IncrementCount counts obj in the current slot.
func (w *SlidingWindowCounter[T]) IncrementCount(obj T) { w.counter.IncrementCount(obj, w.head) }

// GetCountsThenAdvanceWindow returns the counts over the window, then
// forgets the objects counted nowhere in it, wipes the oldest slot and
// makes it the current one.
func (w *SlidingWindowCounter[T]) GetCountsThenAdvanceWindow() map[T]int64 {
	counts := w.counter.Counts()
	w.counter.WipeZeros()
	w.counter.WipeSlot(w.tail)
	w.head = w.tail
	w.tail = (w.tail + 1) % w.windowInSlots
	return counts
}

// NthLastModifiedTimeTracker remembers the times of the last N
// modifications, as storm-starter's: RollingCountBolt measures its actual
// window with it. Its clock is a function, so that it runs on the
// topology's time (TopologyContext.Now). It is not safe for concurrent use.
type NthLastModifiedTimeTracker struct {
	now   func() time.Time
	times []time.Time // a ring, oldest at next
	next  int
}

// NewNthLastModifiedTimeTracker returns a tracker of the last n
// modifications, as if all n happened now. It panics if n < 1.
func NewNthLastModifiedTimeTracker(n int, now func() time.Time) *NthLastModifiedTimeTracker {
	if n < 1 {
		panic(fmt.Sprintf("starter: number of modifications to track must be > 0, got %d", n))
	}
	t := &NthLastModifiedTimeTracker{now: now, times: make([]time.Time, n)}
	start := now()
	for i := range t.times {
		t.times[i] = start
	}
	return t
}

// SecondsSinceOldestModification is the whole seconds since the oldest of
// the last n modifications.
func (t *NthLastModifiedTimeTracker) SecondsSinceOldestModification() int {
	return int(t.now().Sub(t.times[t.next]) / time.Second)
}

// MarkAsModified records a modification now, forgetting the oldest.
func (t *NthLastModifiedTimeTracker) MarkAsModified() {
	t.times[t.next] = t.now()
	t.next = (t.next + 1) % len(t.times)
}
