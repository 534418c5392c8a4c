package kafka

import (
	"context"
	"time"
)

// pacer spaces calls to wait to about rate per second, in steps of
// 10 ms; a rate ≤ 0 never waits. Not safe for concurrent use.
type pacer struct {
	rate  float64
	start time.Time
	n     int64
	timer *time.Timer
}

func newPacer(rate float64) *pacer { return &pacer{rate: rate, start: time.Now()} }

// wait returns once the next call is due, or ctx's error.
func (p *pacer) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.rate <= 0 {
		return nil
	}
	p.n++
	due := p.start.Add(time.Duration(float64(p.n) / p.rate * float64(time.Second)))
	if d := time.Until(due); d > 10*time.Millisecond {
		if p.timer == nil {
			p.timer = time.NewTimer(d)
		} else {
			p.timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.timer.C:
		}
	}
	return nil
}

func (p *pacer) stop() {
	if p.timer != nil {
		p.timer.Stop()
	}
}
