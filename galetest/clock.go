package galetest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gale-stream/gale"
)

// Clock is a manual gale.Clock: time moves only when Advance is called, so
// tests of message timeouts and tick tuples run instantly. It is safe for
// concurrent use.
//
// Its tickers lose no tick. Unlike a time.Ticker, which drops the ticks a
// slow reader misses, a ticker of this clock owes one tick for every
// period that Advance passes and delivers them one at a time, in order,
// each as soon as the reader has taken the one before (its channel holds
// at most one). A tick carries the time it was due. A ticker runs a
// goroutine while it owes ticks; Stop drops the ticks still owed and
// waits for it (the runtime stops every ticker it makes).
//
// WaitHandled waits until the topology has handled every tick owed.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*ticker
	// changed has a token when a tick was taken or handled, for
	// WaitHandled.
	changed chan struct{}
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, changed: make(chan struct{}, 1)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTicker returns a ticker that owes a tick each time Advance passes a
// multiple of d after now. It panics if d is not positive.
func (c *Clock) NewTicker(d time.Duration) gale.Ticker {
	if d <= 0 {
		panic("galetest: non-positive ticker interval")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &ticker{c: c, ch: make(chan time.Time, 1), period: d, next: c.now.Add(d), quit: make(chan struct{})}
	c.tickers = append(c.tickers, t)
	return t
}

// Advance moves the clock forward by d and makes every ticker owe the
// ticks that fell due. It does not wait for them to be taken; see
// WaitHandled.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.tickers {
		for !t.next.After(c.now) {
			t.owed++
			t.next = t.next.Add(t.period)
		}
		if t.owed > 0 && !t.running && !t.stopped {
			t.running = true
			t.wg.Go(t.deliver)
		}
	}
}

// WaitHandled waits until every tick that Advance made the tickers owe
// has been handled, and returns nil, or until ctx ends, and returns its
// error. A tick counts as handled when a Gale runtime reading the ticker
// has handled it and sent on what it caused (expired trees failed, a tick
// tuple executed and its emits flushed), or, for a ticker that no runtime
// reads, once it has been taken from the channel.
func (c *Clock) WaitHandled(ctx context.Context) error {
	poll := time.NewTimer(time.Hour)
	poll.Stop()
	defer poll.Stop()
	backoff := 10 * time.Microsecond
	for {
		ok, untaken := c.handled()
		if ok {
			return nil
		}
		var polled <-chan time.Time
		if untaken {
			// Nothing tells the clock when a reader that is not a
			// runtime takes a tick: look again shortly.
			poll.Reset(backoff)
			backoff = min(2*backoff, time.Millisecond)
			polled = poll.C
		}
		select {
		case <-c.changed:
		case <-polled:
		case <-ctx.Done():
			return ctx.Err()
		}
		poll.Stop()
	}
}

// handled reports whether every ticker has delivered what it owes and,
// for those a runtime reads, heard that each tick was handled; untaken,
// whether a ticker no runtime reads holds a tick not taken yet.
func (c *Clock) handled() (ok, untaken bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok = true
	for _, t := range c.tickers {
		tracked := t.tracked.Load()
		if t.owed > 0 || len(t.ch) > 0 || tracked && t.done.Load() < t.sent {
			ok = false
		}
		if !tracked && len(t.ch) > 0 {
			untaken = true
		}
	}
	return ok, untaken
}

func (c *Clock) notify() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

type ticker struct {
	c      *Clock
	ch     chan time.Time
	period time.Duration
	quit   chan struct{} // closed by Stop

	// Under c.mu.
	next    time.Time // when the first tick not yet owed falls due
	owed    int64     // ticks due and not yet sent
	sent    int64     // ticks sent on ch
	running bool      // deliver runs
	stopped bool      // Stop was called

	wg sync.WaitGroup // deliver

	tracked atomic.Bool  // a runtime reads the ticker and reports each tick handled
	done    atomic.Int64 // ticks the runtime reported handled
}

// deliver sends the owed ticks one at a time, then returns.
func (t *ticker) deliver() {
	c := t.c
	for {
		c.mu.Lock()
		if t.owed == 0 || t.stopped {
			t.running = false
			c.mu.Unlock()
			return
		}
		at := t.next.Add(-time.Duration(t.owed) * t.period)
		c.mu.Unlock()
		select {
		case t.ch <- at:
		case <-t.quit:
			c.mu.Lock()
			t.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		t.owed--
		t.sent++
		c.mu.Unlock()
		// The reader has taken the tick before, since the channel holds
		// one: tell WaitHandled.
		c.notify()
	}
}

func (t *ticker) C() <-chan time.Time { return t.ch }

// TrackDone is called by a runtime that reads this ticker and will call
// TickDone after each tick it handles.
func (t *ticker) TrackDone() { t.tracked.Store(true) }

// TickDone is called by the runtime when it has handled a tick and flushed
// what the tick caused.
func (t *ticker) TickDone() {
	t.done.Add(1)
	t.c.notify()
}

// Stop stops the ticker: it drops the ticks it still owes and waits for
// its goroutine. Stop is idempotent.
func (t *ticker) Stop() {
	c := t.c
	c.mu.Lock()
	if t.stopped {
		c.mu.Unlock()
		return
	}
	t.stopped = true
	close(t.quit)
	for i, x := range c.tickers {
		if x == t {
			c.tickers = append(c.tickers[:i], c.tickers[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	t.wg.Wait()
	c.notify()
}
