package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a manual clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func lines(buf *bytes.Buffer) []string {
	s := strings.TrimSpace(buf.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// The first Burst lines of an interval get through, the rest are counted,
// and the first line of the next interval reports the count.
func TestLimiterBurstThenCount(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(3, time.Minute, c.now)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	for i := range 1000 {
		l.Log(log, slog.LevelError, "bad frame", "n", i)
		c.advance(time.Millisecond) // 1000 lines in 1 s: all in one interval
	}
	if got := lines(&buf); len(got) != 3 {
		t.Fatalf("%d lines for 1000 in one interval, want the burst of 3: %q", len(got), got)
	}
	c.advance(time.Minute)
	l.Log(log, slog.LevelError, "bad frame", "n", 1000)
	got := lines(&buf)
	if len(got) != 4 || !strings.Contains(got[3], "n=1000 suppressed=997") {
		t.Fatalf("after the interval: %q, want a 4th line with n=1000 suppressed=997", got)
	}
	// The count was reported: the next interval starts from zero.
	l.Log(log, slog.LevelError, "bad frame", "n", 1001)
	if got := lines(&buf); len(got) != 5 || strings.Contains(got[4], "suppressed") {
		t.Fatalf("next line: %q, want a 5th line without a suppressed count", got)
	}
}

// Flush reports what was held back, once, and nothing when nothing was.
func TestLimiterFlush(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(1, time.Minute, c.now)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	l.Flush(log, slog.LevelError, "held back")
	if got := lines(&buf); len(got) != 0 {
		t.Fatalf("Flush with nothing held back wrote %q", got)
	}
	for range 5 {
		l.Log(log, slog.LevelError, "bad frame")
	}
	l.Flush(log, slog.LevelError, "held back", "peer", "1")
	l.Flush(log, slog.LevelError, "held back", "peer", "1")
	got := lines(&buf)
	if len(got) != 2 || !strings.Contains(got[1], `msg="held back" peer=1 suppressed=4`) {
		t.Fatalf("got %q, want the first line and one flush with suppressed=4", got)
	}
}

// A clock that goes back starts a new interval rather than holding lines
// back until it catches up.
func TestLimiterClockBackwards(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(1, time.Minute, c.now)
	if ok, _ := l.Allow(); !ok {
		t.Fatal("first line held back")
	}
	if ok, _ := l.Allow(); ok {
		t.Fatal("second line in the interval let through")
	}
	c.advance(-time.Hour)
	if ok, n := l.Allow(); !ok || n != 1 {
		t.Fatalf("after the clock went back: Allow = %v, %d; want true, 1", ok, n)
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
