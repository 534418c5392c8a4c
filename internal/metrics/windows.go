package metrics

import "time"

// Window is one of the rolling windows Storm's UI shows a topology's
// counters over: the last 10 minutes, 3 hours or day, or all time.
type Window struct {
	// Secs is the window's length in seconds, as nimbus's
	// GetRequest.window_secs names it; 0 is all time.
	Secs int64
	// Param and Pretty are Storm UI's names of it: the REST API's window
	// parameter and windowPretty.
	Param, Pretty string
	// Step is how often the window's snapshots are taken (Snapshots); 0
	// for all time, which needs none.
	Step time.Duration
}

// AllTime is Storm's window parameter of all time, the default.
const AllTime = ":all-time"

// windows are the windows in the order of nimbus's TopologyInfo.windows
// and Storm's UI: the timed ones, shortest first, then all time.
var windows = []Window{
	{Secs: 600, Param: "600", Pretty: "10m 0s", Step: 10 * time.Second},
	{Secs: 10800, Param: "10800", Pretty: "3h 0m 0s", Step: 2 * time.Minute},
	{Secs: 86400, Param: "86400", Pretty: "1d 0h 0m 0s", Step: 10 * time.Minute},
	{Secs: 0, Param: AllTime, Pretty: "All time"},
}

// Windows returns the windows, the timed ones first (shortest first),
// all time last.
func Windows() []Window { return append([]Window(nil), windows...) }

// WindowIndex is the index in Windows of the window of secs seconds, or
// -1 if there is none.
func WindowIndex(secs int64) int {
	for i, w := range windows {
		if w.Secs == secs {
			return i
		}
	}
	return -1
}

// Duration is the window's length; 0 for all time.
func (w Window) Duration() time.Duration { return time.Duration(w.Secs) * time.Second }

// timed is the number of windows other than all time.
const timed = 3

// Snapshots keeps a total's history for the timed windows: a window's
// count is the total now less the total at the window's start, so that
// no restart makes it negative nor counts anything twice. Each window
// keeps at most one snapshot per Step, and its length over Step plus two
// of them (62, 92 and 146), so a window starts at the last snapshot at
// or before now less its length: it spans the window and up to one step
// more (and the time between two Takes). A window longer than the
// history counts everything: its baseline is none.
//
// The zero value is empty. Not safe for concurrent use.
type Snapshots[T any] struct {
	rings [timed]ring[T]
}

type snapshot[T any] struct {
	at    time.Time
	total T
}

// ring is one window's snapshots, oldest first.
type ring[T any] struct {
	snaps   []snapshot[T]
	slot    int64 // the step of the newest
	dropped bool  // a snapshot was dropped for room
}

// Take snapshots the total into each window whose step has passed since
// its newest snapshot. total is called at most once, only if one is
// taken; what it returns must not be changed afterwards.
func (s *Snapshots[T]) Take(now time.Time, total func() T) {
	var t T
	taken := false
	for i := range s.rings {
		w, r := windows[i], &s.rings[i]
		slot := now.UnixNano() / int64(w.Step)
		if len(r.snaps) > 0 && slot <= r.slot {
			continue
		}
		if !taken {
			t, taken = total(), true
		}
		r.slot = slot
		r.snaps = append(r.snaps, snapshot[T]{at: now, total: t})
		if keep := s.Keep(i); len(r.snaps) > keep {
			r.snaps = append(r.snaps[:0:0], r.snaps[len(r.snaps)-keep:]...)
			r.dropped = true
		}
	}
}

// Keep is how many snapshots timed window i keeps at most.
func (s *Snapshots[T]) Keep(i int) int { return int(windows[i].Duration()/windows[i].Step) + 2 }

// Len is how many snapshots timed window i holds.
func (s *Snapshots[T]) Len(i int) int { return len(s.rings[i].snaps) }

// Baseline is the total at the start of timed window i ending now, and
// false when the history is younger than the window (the window then
// counts everything).
func (s *Snapshots[T]) Baseline(i int, now time.Time) (T, bool) {
	r := &s.rings[i]
	start := now.Add(-windows[i].Duration())
	var base T
	found := false
	for _, sn := range r.snaps {
		if sn.at.After(start) {
			break
		}
		base, found = sn.total, true
	}
	if !found && r.dropped && len(r.snaps) > 0 {
		return r.snaps[0].total, true // Takes too sparse to have one
	}
	return base, found
}
