package bench

import (
	"context"
	"time"
)

// Pacer schedules emits at a fixed rate: emit n (from 0) is due at start + n/rate. It
// hands out the scheduled time so latency can be measured from when a sentence should
// have been sent, not from when a slow pipeline finally let the spout send it.
//
// When the caller falls behind, due emits are returned immediately, so a backlog is
// caught up in a burst and throughput stays at the rate. Waiting sleeps on a timer
// rather than spinning, so pacing costs almost no CPU; the price is that an emit can be
// late by the timer's granularity (typically 50 µs–1 ms), which shows in the measured
// latency. A Pacer is not safe for concurrent use; give each spout its own.
type Pacer struct {
	start    time.Time
	interval float64 // nanoseconds between emits; 0 = unlimited
	n        int64   // emits handed out so far
	timer    *time.Timer
}

// spinBelow is the wait under which the pacer yields instead of arming a timer: shorter
// than any timer can sleep, so a timer would only add lateness.
const spinBelow = 2 * time.Microsecond

// NewPacer returns a pacer emitting rate times per second from start. A rate ≤ 0 means
// unlimited: every emit is due at once and scheduled at the time it is asked for.
func NewPacer(rate float64, start time.Time) *Pacer {
	p := &Pacer{start: start}
	if rate > 0 {
		p.interval = 1e9 / rate
	}
	return p
}

func (p *Pacer) scheduled() time.Time {
	return p.start.Add(time.Duration(float64(p.n) * p.interval))
}

// Due is the non-blocking form of Next, for a spout's NextTuple. If the next emit is
// due at now, it consumes it and returns its scheduled time and true. Otherwise it
// returns the time the next emit will be due and false; the caller should emit nothing
// and ask again later.
func (p *Pacer) Due(now time.Time) (scheduled time.Time, ok bool) {
	if p.interval == 0 {
		return now, true
	}
	s := p.scheduled()
	if s.After(now) {
		return s, false
	}
	p.n++
	return s, true
}

// Next waits until the next emit is due, consumes it and returns its scheduled time.
// With an unlimited rate it returns time.Now() at once. If ctx is done while waiting it
// returns ctx.Err() and does not consume the emit.
func (p *Pacer) Next(ctx context.Context) (scheduled time.Time, err error) {
	if p.interval == 0 {
		return time.Now(), nil
	}
	s := p.scheduled()
	for {
		d := time.Until(s)
		if d <= 0 {
			break
		}
		if d < spinBelow {
			continue // not worth a timer: the next check is already later
		}
		if err := p.sleep(ctx, d); err != nil {
			return time.Time{}, err
		}
	}
	p.n++
	return s, nil
}

func (p *Pacer) sleep(ctx context.Context, d time.Duration) error {
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-p.timer.C:
		return nil
	case <-ctx.Done():
		p.timer.Stop()
		return ctx.Err()
	}
}
