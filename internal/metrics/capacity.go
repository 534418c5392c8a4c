package metrics

import (
	"sync"
	"time"
)

// CapacityWindow is the least window a bolt executor's capacity is
// measured over, once it has run that long; the window is at most twice
// as long.
const CapacityWindow = 10 * time.Second

// Capacity measures the share of wall time an executor spends busy: from
// readings of its time busy so far at clock times, the share of the
// window to the latest reading it was busy. The window starts at the
// executor's start (Start) or at a reading at least CapacityWindow
// before the latest, so it is between one and two CapacityWindows long
// once the executor has run that long. It is measured, not extrapolated
// from timed calls as Storm does, so it is never above 1.
//
// The zero value must be Started before use. Safe for concurrent use.
type Capacity struct {
	mu        sync.Mutex
	prev, cur capacityMark
}

// capacityMark is the time busy at a clock time.
type capacityMark struct {
	at, busy int64 // clock nanos
}

// Start marks the executor's start, at clock nanos at, busy for none.
func (c *Capacity) Start(at int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur = capacityMark{at: at}
	c.prev = c.cur
}

// At is the share of the window to at (clock nanos) spent busy, given
// busy, the executor's time busy so far: between 0 and 1.
func (c *Capacity) At(at, busy int64) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := capacityMark{at: at, busy: busy}
	if m.at-c.cur.at >= int64(CapacityWindow) {
		c.prev, c.cur = c.cur, m
	}
	base := c.prev
	window := m.at - base.at
	if window <= 0 {
		return 0
	}
	return min(max(float64(m.busy-base.busy)/float64(window), 0), 1)
}
