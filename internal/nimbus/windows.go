package nimbus

import (
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/runstats"
)

// The rolling windows, as Storm's UI shows them: a topology's counters
// over the last 10 minutes, 3 hours and 1 day, and over all time.
//
// The workers report cumulative counters, since each worker started; a
// worker that restarts or moves starts again from 0. The leader keeps,
// per topology, every worker it has heard of (its incarnation: its
// supervisor, port, pid and start time) with its latest counters, and
// the counters of the incarnations that ended, added up. Their sum, the
// topology's total, only grows: a restart ends one incarnation, whose
// counts stay in the total, and begins another from 0. A window is the
// total now less the total at the window's start, so that a restart
// never makes a window negative nor counts a tuple twice.
//
// The totals at the windows' starts come from snapshots the leader takes
// as the reports arrive, at most one per step of each window's tier:
// every 10 s for the 10-minute window, every 2 min for 3 hours, every
// 10 min for the day. Each tier keeps window/step + 2 snapshots (62, 92
// and 146: 300 per topology), each holding one value per counter of
// each component and stream, and the histograms' non-empty buckets; the
// components' recent errors and per-executor counters are not kept. A
// window therefore starts at the last snapshot at or before now less the
// window: it spans the window and up to one step and one report interval
// more. A window longer than the history nimbus holds (the topology is
// younger, or this nimbus began leading later) counts everything the
// workers reported: it equals all time.
//
// All time is the total itself: the workers' latest counters and those
// of the workers that ended, as far as this nimbus heard them. The gauges
// (tasks, pending and max pending, capacity, queue depth and capacity)
// say how things are now, and every window takes them from the workers'
// latest reports; so it does the recent errors and the per-executor
// counters, which stay those of the running workers since they started.

// windowSecs are the windows a Get answers, in the order of
// TopologyInfo.windows: 0 is all time.
var windowSecs = []int64{600, 10800, 86400, 0}

// tiers are the windows other than all time, each with its snapshots'
// step.
var tiers = []struct{ window, step time.Duration }{
	{10 * time.Minute, 10 * time.Second},
	{3 * time.Hour, 2 * time.Minute},
	{24 * time.Hour, 10 * time.Minute},
}

// forgetAfter is how long a worker not heard of stays an incarnation of
// its own (its supervisor silent, or gone), and a topology's history
// with no report at all is kept: the longest window.
const forgetAfter = 24 * time.Hour

// errWindow is the error of a window_secs nimbus does not keep.
func errWindow(secs int64) error {
	return status.Errorf(codes.InvalidArgument,
		"nimbus: window_secs %d is not a window nimbus keeps: give 600 (10 min), 10800 (3 h), 86400 (1 day) or 0 (all time)", secs)
}

// windowIndex is the index of secs in windowSecs, or -1.
func windowIndex(secs int64) int {
	for i, s := range windowSecs {
		if s == secs {
			return i
		}
	}
	return -1
}

// windows holds the topologies' histories. Safe for concurrent use.
type windows struct {
	mu struct {
		sync.Mutex
		topologies map[string]*history // by the reports' topology (its id)
	}
}

func newWindows() *windows {
	w := &windows{}
	w.mu.topologies = make(map[string]*history)
	return w
}

// workerKey names one worker process: a restarted worker has another pid
// and start time, a moved one another supervisor or port.
type workerKey struct {
	supervisor string
	port       int32
	pid        int32
	started    int64
}

type incarnation struct {
	comps []*nimbuspb.ComponentStats // its latest counters
	seen  time.Time
}

type snapshot struct {
	at    time.Time
	comps []*nimbuspb.ComponentStats // the topology's total at
}

// ring is one tier's snapshots, oldest first.
type ring struct {
	snaps   []snapshot
	slot    int64 // the step of the newest
	dropped bool  // a snapshot was dropped for room
}

// history is one topology's workers and snapshots.
type history struct {
	seen    time.Time // the latest report of it
	workers map[workerKey]*incarnation
	retired []*nimbuspb.ComponentStats // the ended incarnations' counters, added up
	rings   [3]ring                    // one per tier
}

// record files a supervisor's report received at now.
func (w *windows) record(now time.Time, supervisor string, ws []*nimbuspb.WorkerReport) {
	w.mu.Lock()
	defer w.mu.Unlock()
	listed := make(map[workerKey]bool, len(ws))
	touched := make(map[*history]bool)
	for _, r := range ws {
		k := workerKey{supervisor: supervisor, port: r.GetPort(), pid: r.GetPid(), started: r.GetStartedUnixMs()}
		listed[k] = true
		if len(r.GetComponents()) == 0 {
			continue
		}
		h := w.mu.topologies[r.GetTopology()]
		if h == nil {
			h = &history{workers: make(map[workerKey]*incarnation)}
			w.mu.topologies[r.GetTopology()] = h
		}
		h.seen = now
		touched[h] = true
		inc := h.workers[k]
		if inc != nil && decreased(inc.comps, r.GetComponents()) {
			// Counters that went down are another process's, whatever
			// its key says.
			h.end(k)
			inc = nil
		}
		if inc == nil {
			inc = &incarnation{}
			h.workers[k] = inc
		}
		inc.comps, inc.seen = r.GetComponents(), now
	}
	for id, h := range w.mu.topologies {
		for k, inc := range h.workers {
			// A worker its supervisor no longer lists has ended.
			if k.supervisor == supervisor && !listed[k] || now.Sub(inc.seen) > forgetAfter {
				h.end(k)
			}
		}
		if len(h.workers) == 0 && now.Sub(h.seen) > forgetAfter {
			delete(w.mu.topologies, id)
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

// end folds incarnation k's counters into the retired ones.
func (h *history) end(k workerKey) {
	inc := h.workers[k]
	delete(h.workers, k)
	h.retired = compact(sumComponents([]*nimbuspb.WorkerReport{{Components: h.retired}, {Components: inc.comps}}))
}

// total is the topology's counters: the retired ones and every
// incarnation's latest.
func (h *history) total() []*nimbuspb.ComponentStats {
	rs := make([]*nimbuspb.WorkerReport, 0, len(h.workers)+1)
	rs = append(rs, &nimbuspb.WorkerReport{Components: h.retired})
	for _, inc := range h.workers {
		rs = append(rs, &nimbuspb.WorkerReport{Components: inc.comps})
	}
	return sumComponents(rs)
}

// compact drops what a kept total does not need: the errors and the
// per-executor counters, which no window subtracts.
func compact(cs []*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	for _, c := range cs {
		c.Errors, c.Executors = nil, nil
	}
	return cs
}

// snapshot takes the total into every tier whose step has passed since
// its newest snapshot.
func (h *history) snapshot(now time.Time) {
	var total []*nimbuspb.ComponentStats
	for i, t := range tiers {
		r := &h.rings[i]
		slot := now.UnixNano() / int64(t.step)
		if len(r.snaps) > 0 && slot <= r.slot {
			continue
		}
		if total == nil {
			total = compact(h.total())
		}
		r.slot = slot
		r.snaps = append(r.snaps, snapshot{at: now, comps: total})
		if keep := int(t.window/t.step) + 2; len(r.snaps) > keep {
			r.snaps = append(r.snaps[:0:0], r.snaps[len(r.snaps)-keep:]...)
			r.dropped = true
		}
	}
}

// baseline is the total at the start of tier i's window ending now, or
// nil when the history is younger than the window.
func (h *history) baseline(i int, now time.Time) []*nimbuspb.ComponentStats {
	r := &h.rings[i]
	start := now.Add(-tiers[i].window)
	var base []*nimbuspb.ComponentStats
	for _, s := range r.snaps {
		if s.at.After(start) {
			break
		}
		base = s.comps
	}
	if base == nil && r.dropped && len(r.snaps) > 0 {
		base = r.snaps[0].comps // reports too sparse to have one
	}
	return base
}

// view is what a Get shows of topology id (or name) at now: the
// components' counters over window secs, with the gauges of live (the
// workers' latest reports, summed), and the spouts' totals over every
// window. A topology nimbus holds no history of shows live in every
// window.
func (w *windows) view(now time.Time, id, name string, secs int64, live []*nimbuspb.ComponentStats) ([]*nimbuspb.ComponentStats, []*nimbuspb.WindowStats, error) {
	sel := windowIndex(secs)
	if sel < 0 {
		return nil, nil, errWindow(secs)
	}
	w.mu.Lock()
	h := w.mu.topologies[id]
	if h == nil {
		h = w.mu.topologies[name]
	}
	per := make([][]*nimbuspb.ComponentStats, len(windowSecs))
	if h == nil {
		for i := range per {
			per[i] = live
		}
	} else {
		total := h.total()
		for i, s := range windowSecs {
			per[i] = total
			if s != 0 {
				per[i] = since(total, h.baseline(i, now))
			}
		}
	}
	w.mu.Unlock()

	stats := make([]*nimbuspb.WindowStats, len(windowSecs))
	for i, s := range windowSecs {
		stats[i] = spoutTotals(s, per[i])
	}
	return withGauges(per[sel], live), stats, nil
}

// since is total less base, component by component (a component base
// lacks counts from 0). total is not changed.
func since(total, base []*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	byID := make(map[string]*nimbuspb.ComponentStats, len(base))
	for _, b := range base {
		byID[b.GetComponent()] = b
	}
	out := make([]*nimbuspb.ComponentStats, len(total))
	for i, t := range total {
		c := proto.Clone(t).(*nimbuspb.ComponentStats)
		if b := byID[t.GetComponent()]; b != nil {
			subCounters(c.ProtoReflect(), b.ProtoReflect())
		}
		out[i] = c
	}
	return out
}

// withGauges is window's counters with live's gauges, in component id
// order (both are): a component no worker reports now has no gauges.
func withGauges(window, live []*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	byID := make(map[string]*nimbuspb.ComponentStats, len(live))
	for _, l := range live {
		byID[l.GetComponent()] = l
	}
	out := make([]*nimbuspb.ComponentStats, 0, len(window))
	for _, c := range window {
		c = proto.Clone(c).(*nimbuspb.ComponentStats)
		m := c.ProtoReflect()
		var l protoreflect.Message
		if lc := byID[c.GetComponent()]; lc != nil {
			l = lc.ProtoReflect()
		}
		fds := m.Descriptor().Fields()
		for i := range fds.Len() {
			fd := fds.Get(i)
			if !gauges[fd.Name()] || fd.Name() == "component" || fd.Name() == "kind" {
				continue
			}
			if l != nil && l.Has(fd) {
				m.Set(fd, l.Get(fd))
			} else {
				m.Clear(fd)
			}
		}
		out = append(out, c)
	}
	return out
}

// spoutTotals is a window's totals: its spouts' counters added up.
func spoutTotals(secs int64, cs []*nimbuspb.ComponentStats) *nimbuspb.WindowStats {
	ws := &nimbuspb.WindowStats{WindowSecs: secs}
	var lat runstats.Latency
	for _, c := range cs {
		if c.GetKind() != "spout" {
			continue
		}
		ws.Emitted += c.GetEmitted()
		ws.Transferred += c.GetTransferred()
		ws.Acked += c.GetAcked()
		ws.Failed += c.GetFailed()
		if h := c.GetCompleteLatency(); h != nil {
			l, _ := runstats.LatencyFromSparse(h.GetBuckets(), h.GetCounts()) // checked when reported
			lat.Add(&l)
		}
	}
	if lat.Count() > 0 {
		ws.CompleteLatency = &nimbuspb.LatencyHistogram{}
		ws.CompleteLatency.Buckets, ws.CompleteLatency.Counts = lat.Sparse()
	}
	return ws
}

// gauges are the ComponentStats fields that say how a component is now
// rather than count what it did, and its identity: no window subtracts
// them. Every other number is a counter, and so is every number of the
// per-stream counters (inputs, outputs) and the histograms' buckets.
var gauges = map[protoreflect.Name]bool{
	"component": true, "kind": true, "tasks": true,
	"pending": true, "max_pending": true, "capacity": true,
	"queue_depth": true, "queue_capacity": true,
	"errors": true, "executors": true,
}

var histogramName = (&nimbuspb.LatencyHistogram{}).ProtoReflect().Descriptor().FullName()

// subCounters subtracts base's counters from m's, in place: numbers
// (never below 0), histograms bucket by bucket, and lists of messages
// element by element, matched by their text fields (a stream's id and
// component).
func subCounters(m, base protoreflect.Message) {
	fds := m.Descriptor().Fields()
	top := m.Descriptor().FullName() == (&nimbuspb.ComponentStats{}).ProtoReflect().Descriptor().FullName()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if top && gauges[fd.Name()] {
			continue
		}
		switch {
		case fd.IsMap():
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			if !m.Has(fd) || !base.Has(fd) {
				continue
			}
			bl := base.Get(fd).List()
			byKey := make(map[string]protoreflect.Message, bl.Len())
			for j := range bl.Len() {
				e := bl.Get(j).Message()
				byKey[textKey(e)] = e
			}
			ml := m.Mutable(fd).List()
			for j := range ml.Len() {
				e := ml.Get(j).Message()
				if b := byKey[textKey(e)]; b != nil {
					subCounters(e, b)
				}
			}
		case fd.IsList():
		case fd.Kind() == protoreflect.MessageKind && fd.Message().FullName() == histogramName:
			if m.Has(fd) && base.Has(fd) {
				h := m.Mutable(fd).Message().Interface().(*nimbuspb.LatencyHistogram)
				subHistogram(h, base.Get(fd).Message().Interface().(*nimbuspb.LatencyHistogram))
				if len(h.GetBuckets()) == 0 {
					m.Clear(fd)
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			if m.Has(fd) && base.Has(fd) {
				subCounters(m.Mutable(fd).Message(), base.Get(fd).Message())
			}
		default:
			if v, ok := subNumber(fd.Kind(), m.Get(fd), base.Get(fd)); ok {
				m.Set(fd, v)
			}
		}
	}
}

// subNumber is a - b, at least 0, for the numeric kinds.
func subNumber(k protoreflect.Kind, a, b protoreflect.Value) (protoreflect.Value, bool) {
	switch k {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(max(a.Int()-b.Int(), 0)), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(max(a.Int()-b.Int(), 0))), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(a.Uint() - min(a.Uint(), b.Uint())), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(a.Uint() - min(a.Uint(), b.Uint()))), true
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(max(a.Float()-b.Float(), 0)), true
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(max(a.Float()-b.Float(), 0))), true
	}
	return protoreflect.Value{}, false
}

// textKey is a message's text fields joined: what names a stream.
func textKey(m protoreflect.Message) string {
	var b strings.Builder
	fds := m.Descriptor().Fields()
	for i := range fds.Len() {
		if fd := fds.Get(i); fd.Kind() == protoreflect.StringKind && !fd.IsList() {
			b.WriteString(m.Get(fd).String())
			b.WriteByte(0)
		}
	}
	return b.String()
}

// subHistogram subtracts b's counts from h's, bucket by bucket.
func subHistogram(h, b *nimbuspb.LatencyHistogram) {
	hl, _ := runstats.LatencyFromSparse(h.GetBuckets(), h.GetCounts()) // checked when reported
	bl, _ := runstats.LatencyFromSparse(b.GetBuckets(), b.GetCounts())
	d := hl.Since(&bl)
	h.Buckets, h.Counts = d.Sparse()
}

// decreased reports whether a counter of a component in old is lower in
// cur, or the component is gone: cur is another process's.
func decreased(old, cur []*nimbuspb.ComponentStats) bool {
	byID := make(map[string]*nimbuspb.ComponentStats, len(cur))
	for _, c := range cur {
		byID[c.GetComponent()] = c
	}
	for _, o := range old {
		c := byID[o.GetComponent()]
		if c == nil {
			return true
		}
		om, cm := o.ProtoReflect(), c.ProtoReflect()
		fds := om.Descriptor().Fields()
		for i := range fds.Len() {
			fd := fds.Get(i)
			if gauges[fd.Name()] || fd.IsList() || fd.IsMap() {
				continue
			}
			switch fd.Kind() {
			case protoreflect.Int64Kind, protoreflect.Int32Kind:
				if cm.Get(fd).Int() < om.Get(fd).Int() {
					return true
				}
			}
		}
	}
	return false
}
