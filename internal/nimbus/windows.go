package nimbus

import (
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/metrics/components"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// The rolling windows, as Storm's UI shows them: a topology's counters
// over the last 10 minutes, 3 hours and 1 day, and over all time.
//
// A topology's total, its all-time counters, is the sum over the
// supervisors of what each counted of it: a supervisor keeps, per
// topology, the counters of every worker it ran, those that ended
// included (a worker killed, restarted or moved away by a rebalance keeps
// what it did in its supervisor's total), in DIR/counters.json so that a
// restart of the supervisor keeps them too, and reports them to every
// nimbus (ReportRequest.totals). Every nimbus, the standbys as well as
// the leader, keeps per (supervisor, topology) the largest of those
// totals it was told, counter by counter: a supervisor whose machine is
// lost keeps its contribution, and no report received late or out of
// order takes one back. So the total only grows, whichever nimbus is
// asked, across worker restarts, rebalances and nimbus failovers; and
// nothing of it is written to etcd. A nimbus that starts learns every
// live supervisor's total from its next report (supervisors report at
// once to a nimbus that joins); only the contribution of a supervisor
// gone before that nimbus started is missing from it. A report without
// totals (a supervisor older than them) is counted as before: nimbus
// follows that supervisor's workers (their incarnations: port, pid and
// start time) with their latest counters and adds up those that ended.
//
// A window is the total now less the total at the window's start, so
// that a restart never makes a window negative nor counts a tuple twice.
// The totals at the windows' starts come from snapshots each nimbus
// takes as the reports arrive (metrics.Snapshots), at most one per step
// of each window: every 10 s for the 10-minute window, every 2 min for
// 3 hours, every 10 min for the day. Each window keeps window/step + 2
// snapshots (62, 92 and 146: 300 per topology), each holding one value
// per counter of each component and stream, and the histograms'
// non-empty buckets (components.Totals: the gauges, recent errors and
// per-executor counters are not kept). A window therefore starts at the
// last snapshot at or before now less the window: it spans the window
// and up to one step and one report interval more. A window longer than
// the history the nimbus holds (the topology is younger, or this nimbus
// started later) counts everything: it equals all time. The arithmetic
// (the sums, the highest of two totals, a total less a snapshot) is
// internal/metrics/components'.
//
// The gauges (tasks, pending and max pending, capacity, queue depth and
// capacity) say how things are now, and every window takes them from the
// running workers' latest reports; so it does the recent errors and the
// per-executor counters, which stay those of the running workers since
// they started.

// forgetAfter is how long a worker not heard of stays an incarnation of
// its own (its supervisor silent, or gone), and a topology's history
// with no report at all is kept: the longest window.
const forgetAfter = 24 * time.Hour

// errWindow is the error of a window_secs nimbus does not keep.
func errWindow(secs int64) error {
	return status.Errorf(codes.InvalidArgument,
		"nimbus: window_secs %d is not a window nimbus keeps: give 600 (10 min), 10800 (3 h), 86400 (1 day) or 0 (all time)", secs)
}

// windows holds the topologies' histories. Safe for concurrent use.
type windows struct {
	born time.Time // when the nimbus was made: it heard no report before
	mu   struct {
		sync.Mutex
		topologies map[string]*history // by the reports' topology (its id)
		synced     bool                // the other nimbuses' totals are in (totals.go)
	}
}

func newWindows(born time.Time) *windows {
	w := &windows{born: born}
	w.mu.topologies = make(map[string]*history)
	return w
}

// workerKey names one worker process: a restarted worker has another pid
// and start time, a moved one another port (or supervisor: each has its
// own contribution).
type workerKey struct {
	port    int32
	pid     int32
	started int64
}

type incarnation struct {
	comps []*nimbuspb.ComponentStats // its latest counters
	seen  time.Time
}

// history is one topology's counts, by supervisor, and the snapshots of
// its total.
type history struct {
	seen  time.Time // the latest report of it
	sups  map[string]*contribution
	snaps metrics.Snapshots[[]*nimbuspb.ComponentStats]
}

// contribution is what one supervisor counted of a topology: the
// largest total it reported, counter by counter. For a supervisor that
// reports no totals, nimbus adds them up itself from its workers'
// reports (workers, retired).
type contribution struct {
	high    []*nimbuspb.ComponentStats // never lower than before
	workers map[workerKey]*incarnation
	retired []*nimbuspb.ComponentStats // the ended incarnations' counters, added up
}

// contributionLocked returns supervisor's contribution to topology,
// making both if new.
func (w *windows) contributionLocked(now time.Time, topology, supervisor string) (*history, *contribution) {
	h := w.mu.topologies[topology]
	if h == nil {
		h = &history{sups: make(map[string]*contribution)}
		w.mu.topologies[topology] = h
	}
	h.seen = now
	c := h.sups[supervisor]
	if c == nil {
		c = &contribution{}
		h.sups[supervisor] = c
	}
	return h, c
}

// record files a supervisor's report received at now: its totals, and
// for a topology the totals do not name, its workers' reports.
func (w *windows) record(now time.Time, supervisor string, ws []*nimbuspb.WorkerReport, totals []*nimbuspb.TopologyTotals) {
	w.mu.Lock()
	defer w.mu.Unlock()
	touched := make(map[*history]bool)
	fromTotals := make(map[string]bool, len(totals))
	for _, t := range totals {
		fromTotals[t.GetTopology()] = true
		if len(t.GetComponents()) == 0 {
			continue
		}
		h, c := w.contributionLocked(now, t.GetTopology(), supervisor)
		c.raise(t.GetComponents())
		touched[h] = true
	}
	// The workers of the topologies the totals do not name.
	listed := make(map[*contribution]map[workerKey]bool)
	for _, r := range ws {
		if fromTotals[r.GetTopology()] || len(r.GetComponents()) == 0 {
			continue
		}
		h, c := w.contributionLocked(now, r.GetTopology(), supervisor)
		touched[h] = true
		if c.workers == nil {
			c.workers = make(map[workerKey]*incarnation)
		}
		k := workerKey{port: r.GetPort(), pid: r.GetPid(), started: r.GetStartedUnixMs()}
		if listed[c] == nil {
			listed[c] = make(map[workerKey]bool)
		}
		listed[c][k] = true
		inc := c.workers[k]
		if inc != nil && components.Decreased(inc.comps, r.GetComponents()) {
			// Counters that went down are another process's, whatever
			// its key says.
			c.end(k)
			inc = nil
		}
		if inc == nil {
			inc = &incarnation{}
			c.workers[k] = inc
		}
		inc.comps, inc.seen = r.GetComponents(), now
	}
	for id, h := range w.mu.topologies {
		if c := h.sups[supervisor]; c != nil && len(c.workers) > 0 {
			for k := range c.workers {
				// A worker its supervisor no longer lists has ended.
				if !listed[c][k] {
					c.end(k)
				}
			}
			c.raise(c.counted())
			touched[h] = true
		}
		if now.Sub(h.seen) > forgetAfter {
			// No report of it for a day: killed, and this nimbus did
			// not hear of the kill (it was a standby).
			delete(w.mu.topologies, id)
			delete(touched, h)
		}
	}
	for h := range touched {
		h.snapshot(now)
	}
}

// forget drops the histories of a topology removed.
func (w *windows) forget(keys ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		delete(w.mu.topologies, k)
	}
}

// prune drops the histories of the topologies not in live, a list read
// from etcd after every report before since was filed: those were
// killed (a standby hears of no kill but through etcd).
func (w *windows) prune(live map[string]bool, since time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, h := range w.mu.topologies {
		if !live[id] && h.seen.Before(since) {
			delete(w.mu.topologies, id)
		}
	}
}

// raise makes c's high counts at least cs's, counter by counter.
func (c *contribution) raise(cs []*nimbuspb.ComponentStats) {
	c.high = components.Max(c.high, cs)
}

// end folds incarnation k's counters into the retired ones.
func (c *contribution) end(k workerKey) {
	inc := c.workers[k]
	delete(c.workers, k)
	c.retired = components.Totals(components.Sum(c.retired, inc.comps))
}

// counted is what nimbus counted itself of a supervisor's workers: the
// retired counters and every incarnation's latest.
func (c *contribution) counted() []*nimbuspb.ComponentStats {
	lists := make([][]*nimbuspb.ComponentStats, 0, len(c.workers)+1)
	lists = append(lists, c.retired)
	for _, inc := range c.workers {
		lists = append(lists, inc.comps)
	}
	return components.Totals(components.Sum(lists...))
}

// total is the topology's counters: every supervisor's contribution.
func (h *history) total() []*nimbuspb.ComponentStats {
	lists := make([][]*nimbuspb.ComponentStats, 0, len(h.sups))
	for _, c := range h.sups {
		lists = append(lists, c.high)
	}
	return components.Totals(components.Sum(lists...))
}

// snapshot takes the total into every window whose step has passed
// since its newest snapshot.
func (h *history) snapshot(now time.Time) {
	h.snaps.Take(now, h.total)
}

// allTime is topology id's (or name's) total, nil if no report has
// given its counters.
func (w *windows) allTime(id, name string) []*nimbuspb.ComponentStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.mu.topologies[id]
	if h == nil {
		h = w.mu.topologies[name]
	}
	if h == nil {
		return nil
	}
	return h.total()
}

// view is what a Get shows of topology id (or name) at now: the
// components' counters over window secs, with the gauges of live (the
// workers' latest reports, summed), and the spouts' totals over every
// window. A topology nimbus holds no history of shows live in every
// window.
func (w *windows) view(now time.Time, id, name string, secs int64, live []*nimbuspb.ComponentStats) ([]*nimbuspb.ComponentStats, []*nimbuspb.WindowStats, error) {
	sel := metrics.WindowIndex(secs)
	if sel < 0 {
		return nil, nil, errWindow(secs)
	}
	w.mu.Lock()
	h := w.mu.topologies[id]
	if h == nil {
		h = w.mu.topologies[name]
	}
	wins := metrics.Windows()
	per := make([][]*nimbuspb.ComponentStats, len(wins))
	if h == nil {
		for i := range per {
			per[i] = live
		}
	} else {
		total := h.total()
		for i, win := range wins {
			per[i] = total
			if win.Secs != 0 {
				if base, ok := h.snaps.Baseline(i, now); ok {
					per[i] = components.Since(total, base)
				}
			}
		}
	}
	w.mu.Unlock()

	stats := make([]*nimbuspb.WindowStats, len(wins))
	for i, win := range wins {
		stats[i] = components.SpoutTotals(win.Secs, per[i])
	}
	return components.WithGauges(per[sel], live), stats, nil
}
