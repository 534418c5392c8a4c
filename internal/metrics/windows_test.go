package metrics

import (
	"testing"
	"time"
)

// TestWindowsAreStorms: the windows are Storm UI's, in its order, each
// found by its seconds, and a caller cannot change the table.
func TestWindowsAreStorms(t *testing.T) {
	ws := Windows()
	want := []struct {
		secs  int64
		param string
	}{{600, "600"}, {10800, "10800"}, {86400, "86400"}, {0, ":all-time"}}
	if len(ws) != len(want) {
		t.Fatalf("%d windows, want %d", len(ws), len(want))
	}
	for i, w := range want {
		if ws[i].Secs != w.secs || ws[i].Param != w.param {
			t.Errorf("window %d: %d %q, want %d %q", i, ws[i].Secs, ws[i].Param, w.secs, w.param)
		}
		if got := WindowIndex(w.secs); got != i {
			t.Errorf("WindowIndex(%d) = %d, want %d", w.secs, got, i)
		}
	}
	if got := WindowIndex(60); got != -1 {
		t.Errorf("WindowIndex(60) = %d, want -1", got)
	}
	ws[0].Secs = 1
	if Windows()[0].Secs != 600 {
		t.Error("changing Windows' result changed the table")
	}
}

// TestSnapshotsBaseline: a window's baseline is the last snapshot at or
// before its start; a history younger than the window has none; each
// window keeps a bounded number of snapshots, one per step however often
// Take is called, however sparse the Takes.
func TestSnapshotsBaseline(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var s Snapshots[int]
	calls := 0
	take := func(at time.Time, v int) {
		s.Take(at, func() int { calls++; return v })
	}
	// A total of n at t0 + n seconds, taken every second for 15 minutes.
	for n := range 900 {
		take(t0.Add(time.Duration(n)*time.Second), n)
	}
	if calls > 900/10+3 {
		t.Errorf("total read %d times: want once per step that took a snapshot", calls)
	}
	now := t0.Add(899 * time.Second)
	base, ok := s.Baseline(0, now)
	if !ok || base > 299 || base < 299-10 {
		t.Errorf("10-minute baseline at 899 s: %d %v, want the snapshot at or before 299 s, within a step", base, ok)
	}
	if _, ok := s.Baseline(1, now); ok {
		t.Error("3-hour baseline of a 15-minute history: want none (the window counts everything)")
	}
	for i := range 3 {
		if n, keep := s.Len(i), s.Keep(i); n > keep {
			t.Errorf("window %d keeps %d snapshots, want at most %d", i, n, keep)
		}
	}
	// An hour with no Take, then one: the 10-minute window's snapshots
	// are all older than its start but one; its baseline is the newest
	// at or before the start.
	later := now.Add(time.Hour)
	take(later, 5000)
	if base, ok := s.Baseline(0, later); !ok || base != 890 {
		t.Errorf("10-minute baseline after an hour's gap: %d %v, want the last snapshot before the gap", base, ok)
	}
	// Snapshots every 20 minutes: the 10-minute window keeps its bound,
	// and its baseline is the snapshot 20 minutes back.
	var sparse Snapshots[int]
	for n := range 100 {
		sparse.Take(t0.Add(time.Duration(n)*20*time.Minute), func() int { return n })
	}
	if got, keep := sparse.Len(0), sparse.Keep(0); got != keep {
		t.Errorf("sparse: %d snapshots kept, want %d", got, keep)
	}
	at := t0.Add(99*20*time.Minute + time.Minute)
	if base, ok := sparse.Baseline(0, at); !ok || base != 98 {
		t.Errorf("sparse 10-minute baseline: %d %v, want 98 (the last at or before the start)", base, ok)
	}
}

// TestCapacity: the share of the window busy, measured from the start
// until a window has passed, then over the last one to two windows;
// never below 0 nor above 1.
func TestCapacity(t *testing.T) {
	const sec = int64(time.Second)
	var c Capacity
	c.Start(0)
	if got := c.At(0, 0); got != 0 {
		t.Errorf("at the start: %v, want 0", got)
	}
	if got := c.At(4*sec, 2*sec); got != 0.5 {
		t.Errorf("busy 2 s of 4: %v, want 0.5", got)
	}
	// At 10 s the window moves on: the next reading counts from there.
	if got := c.At(10*sec, 5*sec); got != 0.5 {
		t.Errorf("busy 5 s of 10: %v, want 0.5", got)
	}
	if got := c.At(15*sec, 10*sec); got != 10.0/15 {
		t.Errorf("busy 10 s of 15: %v, want %v (the window starts at 0 until 20 s)", got, 10.0/15)
	}
	if got := c.At(20*sec, 15*sec); got != 1 {
		t.Errorf("busy all of 10..20 s: %v, want 1", got)
	}
	if got := c.At(21*sec, 30*sec); got != 1 {
		t.Errorf("more busy than time: %v, want 1", got)
	}
	if got := c.At(22*sec, 0); got != 0 {
		t.Errorf("busy went down: %v, want 0", got)
	}
}

// TestRates: differences and rates never go negative (a counter that
// went down was another process's), the means between two readings
// fall back to all time when nothing was sampled between them, and a
// median is the middle value.
func TestRates(t *testing.T) {
	for _, c := range []struct {
		name      string
		cur, prev int64
		secs      float64
		delta     int64
		rate      float64
	}{
		{"grew", 150, 100, 10, 50, 5},
		{"same", 100, 100, 10, 0, 0},
		{"restarted", 20, 100, 10, 0, 0},
		{"no time", 150, 100, 0, 50, 0},
	} {
		if got := Delta(c.cur, c.prev); got != c.delta {
			t.Errorf("%s: Delta %d, want %d", c.name, got, c.delta)
		}
		if got := Rate(c.cur, c.prev, c.secs); got != c.rate {
			t.Errorf("%s: Rate %v, want %v", c.name, got, c.rate)
		}
	}
	if got := Mean(4, 10); got != 2 {
		t.Errorf("Mean(4, 10) = %v, want 2ns", got)
	}
	if got := MeanNanos(4, 10); got != 2.5 {
		t.Errorf("MeanNanos(4, 10) = %v, want 2.5", got)
	}
	if got := MeanNanos(0, 10); got != 0 {
		t.Errorf("MeanNanos of none = %v, want 0", got)
	}
	if got := MeanSince(10, 1000, 6, 200); got != 200 {
		t.Errorf("MeanSince: %v, want 200ns (800 ns over 4)", got)
	}
	if got := MeanSince(10, 1000, 10, 1000); got != 100 {
		t.Errorf("MeanSince with none between: %v, want all time's 100ns", got)
	}
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
	var prev, cur Latency
	prev.Record(time.Millisecond)
	cur = prev
	if got := LatencySince(&cur, &prev); got.Count() != 1 {
		t.Errorf("LatencySince with none between: %d trees, want all of cur's 1", got.Count())
	}
	cur.Record(10 * time.Millisecond)
	if got := LatencySince(&cur, &prev); got.Count() != 1 || got.Quantile(1) < 9*time.Millisecond {
		t.Errorf("LatencySince: %d trees up to %v, want the 10 ms one", got.Count(), got.Quantile(1))
	}
}
