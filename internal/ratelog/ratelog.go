// Package ratelog bounds the log lines that a remote peer can cause.
//
// A worker logs what is wrong with what its peers send (a bad frame, a
// refused hello), and a peer that sends a thousand bad frames must not
// write a thousand lines. A Limiter lets through the first Burst lines of
// every Interval and counts the rest; the next line it lets through
// carries the count of those it held back ("suppressed"), and Flush
// writes the count out when no such line is coming.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults of a Limiter's Burst and Interval.
const (
	DefaultBurst    = 10
	DefaultInterval = time.Minute
)

// Limiter rate-limits log lines: at most Burst per Interval, measured
// on Now. The zero value is not usable; call New. Safe for concurrent use.
type Limiter struct {
	burst    int
	interval time.Duration
	now      func() time.Time

	mu struct {
		sync.Mutex
		start      time.Time // of the current interval
		logged     int       // lines let through in it
		suppressed int64     // lines held back since the last one let through
	}
}

// New returns a Limiter letting through burst lines per interval on the
// clock now; burst ≤ 0 means DefaultBurst, interval ≤ 0 DefaultInterval,
// now nil time.Now.
func New(burst int, interval time.Duration, now func() time.Time) *Limiter {
	if burst <= 0 {
		burst = DefaultBurst
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{burst: burst, interval: interval, now: now}
}

// Allow reports whether a line may be logged now and, if so, how many
// lines were held back before it.
func (l *Limiter) Allow() (ok bool, suppressed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.now(); l.mu.start.IsZero() || t.Sub(l.mu.start) >= l.interval || t.Before(l.mu.start) {
		l.mu.start, l.mu.logged = t, 0
	}
	if l.mu.logged >= l.burst {
		l.mu.suppressed++
		return false, 0
	}
	l.mu.logged++
	suppressed, l.mu.suppressed = l.mu.suppressed, 0
	return true, suppressed
}

// Log writes a line to log at level unless the limiter holds it back; a
// line that follows held-back ones says how many with a "suppressed"
// attribute.
func (l *Limiter) Log(log *slog.Logger, level slog.Level, msg string, args ...any) {
	ok, n := l.Allow()
	if !ok {
		return
	}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	log.Log(context.Background(), level, msg, args...)
}

// Flush writes one line saying how many lines were held back since the
// last one let through, if any were: for when the source of them is gone
// (a connection closed) and no further line will carry the count.
func (l *Limiter) Flush(log *slog.Logger, level slog.Level, msg string, args ...any) {
	l.mu.Lock()
	n := l.mu.suppressed
	l.mu.suppressed = 0
	l.mu.Unlock()
	if n > 0 {
		log.Log(context.Background(), level, msg, append(args, "suppressed", n)...)
	}
}
