package nimbus

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gale-stream/gale/internal/metrics"
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
// takes as the reports arrive, at most one per step of each window's
// tier: every 10 s for the 10-minute window, every 2 min for 3 hours,
// every 10 min for the day. Each tier keeps window/step + 2 snapshots
// (62, 92 and 146: 300 per topology), each holding one value per counter
// of each component and stream, and the histograms' non-empty buckets;
// the components' recent errors and per-executor counters are not kept.
// A window therefore starts at the last snapshot at or before now less
// the window: it spans the window and up to one step and one report
// interval more. A window longer than the history the nimbus holds (the
// topology is younger, or this nimbus started later) counts everything:
// it equals all time.
//
// The gauges (tasks, pending and max pending, capacity, queue depth and
// capacity) say how things are now, and every window takes them from the
// running workers' latest reports; so it does the recent errors and the
// per-executor counters, which stay those of the running workers since
// they started.

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

// history is one topology's counts, by supervisor, and its snapshots.
type history struct {
	seen  time.Time // the latest report of it
	sups  map[string]*contribution
	rings [3]ring // one per tier
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
		if inc != nil && decreased(inc.comps, r.GetComponents()) {
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
	c.high = maxComponents(c.high, cs)
}

// end folds incarnation k's counters into the retired ones.
func (c *contribution) end(k workerKey) {
	inc := c.workers[k]
	delete(c.workers, k)
	c.retired = compact(sumComponents([]*nimbuspb.WorkerReport{{Components: c.retired}, {Components: inc.comps}}))
}

// counted is what nimbus counted itself of a supervisor's workers: the
// retired counters and every incarnation's latest.
func (c *contribution) counted() []*nimbuspb.ComponentStats {
	rs := make([]*nimbuspb.WorkerReport, 0, len(c.workers)+1)
	rs = append(rs, &nimbuspb.WorkerReport{Components: c.retired})
	for _, inc := range c.workers {
		rs = append(rs, &nimbuspb.WorkerReport{Components: inc.comps})
	}
	return compact(sumComponents(rs))
}

// total is the topology's counters: every supervisor's contribution.
func (h *history) total() []*nimbuspb.ComponentStats {
	rs := make([]*nimbuspb.WorkerReport, 0, len(h.sups))
	for _, c := range h.sups {
		rs = append(rs, &nimbuspb.WorkerReport{Components: c.high})
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
	var lat metrics.Latency
	for _, c := range cs {
		if c.GetKind() != "spout" {
			continue
		}
		ws.Emitted += c.GetEmitted()
		ws.Transferred += c.GetTransferred()
		ws.Acked += c.GetAcked()
		ws.Failed += c.GetFailed()
		if h := c.GetCompleteLatency(); h != nil {
			l, _ := metrics.LatencyFromSparse(h.GetBuckets(), h.GetCounts()) // checked when reported
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
	hl, _ := metrics.LatencyFromSparse(h.GetBuckets(), h.GetCounts()) // checked when reported
	bl, _ := metrics.LatencyFromSparse(b.GetBuckets(), b.GetCounts())
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

// maxComponents is the larger of old and cur counter by counter, per
// component (matched by id), in component id order: a component only one
// of them has is taken as it is. Neither is changed; the errors and the
// per-executor counters are dropped (compact).
func maxComponents(old, cur []*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	byID := make(map[string]*nimbuspb.ComponentStats, len(old)+len(cur))
	for _, o := range old {
		byID[o.GetComponent()] = o
	}
	out := make([]*nimbuspb.ComponentStats, 0, len(old)+len(cur))
	for _, c := range cur {
		m := proto.Clone(c).(*nimbuspb.ComponentStats)
		if o := byID[c.GetComponent()]; o != nil {
			maxCounters(m.ProtoReflect(), o.ProtoReflect())
			delete(byID, c.GetComponent())
		}
		out = append(out, m)
	}
	for _, o := range byID {
		out = append(out, proto.Clone(o).(*nimbuspb.ComponentStats))
	}
	slices.SortFunc(out, func(a, b *nimbuspb.ComponentStats) int { return cmp.Compare(a.GetComponent(), b.GetComponent()) })
	return compact(out)
}

// maxCounters raises m's counters to o's where o's are larger, in place:
// numbers, histograms bucket by bucket, and lists of messages element
// by element, matched by their text fields (an element only o has is
// added).
func maxCounters(m, o protoreflect.Message) {
	fds := m.Descriptor().Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		switch {
		case fd.IsMap():
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			if !o.Has(fd) {
				continue
			}
			ml := m.Mutable(fd).List()
			byKey := make(map[string]protoreflect.Message, ml.Len())
			for j := range ml.Len() {
				e := ml.Get(j).Message()
				byKey[textKey(e)] = e
			}
			ol := o.Get(fd).List()
			for j := range ol.Len() {
				e := ol.Get(j).Message()
				if me := byKey[textKey(e)]; me != nil {
					maxCounters(me, e)
				} else {
					ml.Append(protoreflect.ValueOfMessage(proto.Clone(e.Interface()).ProtoReflect()))
				}
			}
		case fd.IsList():
		case fd.Kind() == protoreflect.MessageKind && fd.Message().FullName() == histogramName:
			if !o.Has(fd) {
				continue
			}
			oh := o.Get(fd).Message().Interface().(*nimbuspb.LatencyHistogram)
			if !m.Has(fd) {
				m.Set(fd, protoreflect.ValueOfMessage(proto.Clone(oh).ProtoReflect()))
				continue
			}
			maxHistogram(m.Mutable(fd).Message().Interface().(*nimbuspb.LatencyHistogram), oh)
		case fd.Kind() == protoreflect.MessageKind:
			if o.Has(fd) {
				maxCounters(m.Mutable(fd).Message(), o.Get(fd).Message())
			}
		default:
			if v, ok := maxNumber(fd.Kind(), m.Get(fd), o.Get(fd)); ok {
				m.Set(fd, v)
			}
		}
	}
}

// maxNumber is the larger of a and b, for the numeric kinds.
func maxNumber(k protoreflect.Kind, a, b protoreflect.Value) (protoreflect.Value, bool) {
	switch k {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(max(a.Int(), b.Int())), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(max(a.Int(), b.Int()))), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(max(a.Uint(), b.Uint())), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(max(a.Uint(), b.Uint()))), true
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(max(a.Float(), b.Float())), true
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(max(a.Float(), b.Float()))), true
	}
	return protoreflect.Value{}, false
}

// maxHistogram raises h's counts to b's, bucket by bucket.
func maxHistogram(h, b *nimbuspb.LatencyHistogram) {
	counts := make(map[int32]int64, len(h.GetBuckets())+len(b.GetBuckets()))
	for _, x := range []*nimbuspb.LatencyHistogram{h, b} {
		cs := x.GetCounts()
		for i, k := range x.GetBuckets() {
			if i < len(cs) {
				counts[k] = max(counts[k], cs[i])
			}
		}
	}
	h.Buckets = slices.Sorted(maps.Keys(counts))
	h.Counts = make([]int64, len(h.Buckets))
	for i, k := range h.Buckets {
		h.Counts[i] = counts[k]
	}
}
