package galetest

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gale-stream/gale"
)

// Clock is a manual gale.Clock: time moves only when Advance is called, so
// tests of message timeouts and tick tuples run instantly. It is safe for
// concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*ticker
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTicker returns a ticker that fires each time Advance passes a
// multiple of d. Like time.Ticker it drops ticks a slow reader misses.
func (c *Clock) NewTicker(d time.Duration) gale.Ticker {
	if d <= 0 {
		panic("galetest: non-positive ticker interval")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &ticker{c: c, ch: make(chan time.Time, 1), period: d, next: c.now.Add(d)}
	c.tickers = append(c.tickers, t)
	return t
}

// Advance moves the clock forward by d and fires the tickers that are due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.tickers {
		for !t.next.After(c.now) {
			select {
			case t.ch <- t.next:
				t.fired++
			default:
			}
			t.next = t.next.Add(t.period)
		}
	}
}

type ticker struct {
	fired  int64 // ticks sent, under c.mu
	done   atomic.Int64
	c      *Clock
	ch     chan time.Time
	period time.Duration
	next   time.Time
}

func (t *ticker) C() <-chan time.Time { return t.ch }

// TickDone is called by the runtime when it has handled a tick and flushed
// what the tick caused.
func (t *ticker) TickDone() { t.done.Add(1) }

// settled reports whether the runtime has handled every tick sent.
func (c *Clock) settled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tickers {
		if t.fired != t.done.Load() {
			return false
		}
	}
	return true
}

func (t *ticker) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.tickers {
		if x == t {
			t.c.tickers = append(t.c.tickers[:i], t.c.tickers[i+1:]...)
			return
		}
	}
}
