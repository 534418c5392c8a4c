// Package components is the arithmetic of the counters as the nimbus API
// carries them, one nimbuspb.ComponentStats per component: summed over
// workers (Sum), a window's share of a total (Since), the larger of two
// readings (Max), a total's counters apart from the gauges (Totals), and
// the gauges put back from the running workers (WithGauges). Nimbus's
// rolling windows and the supervisors' totals are built from these.
//
// A field of ComponentStats is a counter unless it is one of the gauges
// (tasks, pending, max_pending, capacity, queue_depth, queue_capacity),
// the details (errors, executors) or the identity (component, kind).
// Counters are every number, the complete-latency histogram bucket by
// bucket, and the per-stream counters (inputs, outputs) matched by their
// component and stream; the functions walk the message's descriptor, so
// a counter added to the API is counted without a change here.
//
// The functions never change their arguments, and are safe for
// concurrent use on arguments no one changes.
package components

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// MaxErrors bounds the errors a component's sum keeps: the most recent
// ones over all its workers.
const MaxErrors = 20

// notCounters are the fields of ComponentStats that are not counters:
// the identity, the gauges (how a component is now) and the details
// (its recent errors and its executors), which no total keeps.
var notCounters = map[protoreflect.Name]bool{
	"component": true, "kind": true,
	"tasks": true, "pending": true, "max_pending": true, "capacity": true,
	"queue_depth": true, "queue_capacity": true,
	"errors": true, "executors": true,
}

var (
	componentStatsName = (&nimbuspb.ComponentStats{}).ProtoReflect().Descriptor().FullName()
	histogramName      = (&nimbuspb.LatencyHistogram{}).ProtoReflect().Descriptor().FullName()
)

// Sum sums the lists (each a worker's components, say) by component, in
// component id order: every counter adds up, and so do the tasks, trees
// pending and their bound, and the queues' depths and capacities; the
// capacity is the largest (the busiest executor's); the executors are
// listed in task order, the errors oldest first, the latest MaxErrors
// of them.
func Sum(lists ...[]*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	byID := make(map[string]*nimbuspb.ComponentStats)
	for _, list := range lists {
		for _, c := range list {
			s := byID[c.GetComponent()]
			if s == nil {
				s = &nimbuspb.ComponentStats{Component: c.GetComponent(), Kind: c.GetKind()}
				byID[c.GetComponent()] = s
			}
			combine(s.ProtoReflect(), c.ProtoReflect(), opAdd)
			s.Tasks += c.GetTasks()
			s.Pending += c.GetPending()
			s.MaxPending += c.GetMaxPending()
			s.Capacity = max(s.Capacity, c.GetCapacity())
			s.QueueDepth += c.GetQueueDepth()
			s.QueueCapacity += c.GetQueueCapacity()
			for _, e := range c.GetErrors() {
				s.Errors = append(s.Errors, proto.Clone(e).(*nimbuspb.ComponentError))
			}
			for _, x := range c.GetExecutors() {
				s.Executors = append(s.Executors, proto.Clone(x).(*nimbuspb.ExecutorStats))
			}
		}
	}
	out := slices.Collect(maps.Values(byID))
	for _, s := range out {
		if len(s.GetCompleteLatency().GetBuckets()) == 0 {
			s.CompleteLatency = nil
		}
		sortDetail(s)
	}
	return sorted(out)
}

// sortDetail orders a component sum's detail: streams by component and
// stream, executors by their first task, errors oldest first, keeping
// the latest MaxErrors.
func sortDetail(s *nimbuspb.ComponentStats) {
	byStream := func(a, b *nimbuspb.StreamStats) int {
		return cmp.Or(cmp.Compare(a.GetComponent(), b.GetComponent()), cmp.Compare(a.GetStream(), b.GetStream()))
	}
	slices.SortFunc(s.Inputs, byStream)
	slices.SortFunc(s.Outputs, byStream)
	slices.SortFunc(s.Executors, func(a, b *nimbuspb.ExecutorStats) int { return cmp.Compare(a.GetFirstTask(), b.GetFirstTask()) })
	slices.SortStableFunc(s.Errors, func(a, b *nimbuspb.ComponentError) int {
		return cmp.Or(cmp.Compare(a.GetTimeUnixMs(), b.GetTimeUnixMs()), cmp.Compare(a.GetTask(), b.GetTask()))
	})
	if n := len(s.Errors); n > MaxErrors {
		s.Errors = slices.Clone(s.Errors[n-MaxErrors:])
	}
}

// Totals is cs with its counters only: the gauges and details, which
// say how the components are now, cleared. It changes cs in place and
// returns it.
func Totals(cs []*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	for _, c := range cs {
		m := c.ProtoReflect()
		fds := m.Descriptor().Fields()
		for i := range fds.Len() {
			if fd := fds.Get(i); notCounters[fd.Name()] && fd.Name() != "component" && fd.Name() != "kind" {
				m.Clear(fd)
			}
		}
	}
	return cs
}

// Since is total less base, counter by counter and component by
// component (a component base lacks counts from 0; a counter lower in
// total counts 0): what was counted between the two, base the earlier.
// The gauges and details are total's.
func Since(total, base []*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	byID := index(base)
	out := make([]*nimbuspb.ComponentStats, len(total))
	for i, t := range total {
		c := proto.Clone(t).(*nimbuspb.ComponentStats)
		if b := byID[t.GetComponent()]; b != nil {
			combine(c.ProtoReflect(), b.ProtoReflect(), opSub)
		}
		out[i] = c
	}
	return out
}

// Max is the larger of old and cur counter by counter, per component, in
// component id order: a component only one of them has is taken as it
// is. Two readings of the same counters, one behind the other, give the
// later. The result holds counters only (Totals).
func Max(old, cur []*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	byID := index(old)
	out := make([]*nimbuspb.ComponentStats, 0, len(old)+len(cur))
	for _, c := range cur {
		m := proto.Clone(c).(*nimbuspb.ComponentStats)
		if o := byID[c.GetComponent()]; o != nil {
			combine(m.ProtoReflect(), o.ProtoReflect(), opMax)
			delete(byID, c.GetComponent())
		}
		out = append(out, m)
	}
	for _, o := range byID {
		out = append(out, proto.Clone(o).(*nimbuspb.ComponentStats))
	}
	return Totals(sorted(out))
}

// WithGauges is window's counters with live's gauges and details, in
// component id order (both are): a component no running worker reports
// has none.
func WithGauges(window, live []*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	byID := index(live)
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
			if !notCounters[fd.Name()] || fd.Name() == "component" || fd.Name() == "kind" {
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

// Decreased reports whether a counter of a component in old is lower in
// cur, or the component is gone: cur was counted by another process than
// old (a worker started again).
func Decreased(old, cur []*nimbuspb.ComponentStats) bool {
	byID := index(cur)
	for _, o := range old {
		c := byID[o.GetComponent()]
		if c == nil {
			return true
		}
		om, cm := o.ProtoReflect(), c.ProtoReflect()
		fds := om.Descriptor().Fields()
		for i := range fds.Len() {
			fd := fds.Get(i)
			if notCounters[fd.Name()] || fd.IsList() || fd.IsMap() {
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

// SpoutTotals is the topology's totals over a window of secs seconds
// from its components' counters over it: its spouts' added up.
func SpoutTotals(secs int64, cs []*nimbuspb.ComponentStats) *nimbuspb.WindowStats {
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
		l, _ := LatencyOf(c.GetCompleteLatency()) // checked when reported
		lat.Add(&l)
	}
	ws.CompleteLatency = Histogram(&lat)
	return ws
}

// LatencyOf is the histogram h carries (nil: empty); it fails, naming
// what is wrong, on a malformed one.
func LatencyOf(h *nimbuspb.LatencyHistogram) (metrics.Latency, error) {
	return metrics.LatencyFromSparse(h.GetBuckets(), h.GetCounts())
}

// Histogram is l in the nimbus API's form, nil when l is empty.
func Histogram(l *metrics.Latency) *nimbuspb.LatencyHistogram {
	if l.Count() == 0 {
		return nil
	}
	h := &nimbuspb.LatencyHistogram{}
	h.Buckets, h.Counts = l.Sparse()
	return h
}

func index(cs []*nimbuspb.ComponentStats) map[string]*nimbuspb.ComponentStats {
	byID := make(map[string]*nimbuspb.ComponentStats, len(cs))
	for _, c := range cs {
		byID[c.GetComponent()] = c
	}
	return byID
}

func sorted(cs []*nimbuspb.ComponentStats) []*nimbuspb.ComponentStats {
	slices.SortFunc(cs, func(a, b *nimbuspb.ComponentStats) int { return cmp.Compare(a.GetComponent(), b.GetComponent()) })
	return cs
}

// op is what combine does to each counter of m with o's.
type op int

const (
	opAdd op = iota // m + o
	opSub           // m - o, at least 0
	opMax           // the larger
)

// combine applies op to m's counters with o's, in place: numbers,
// histograms bucket by bucket, nested messages field by field, and lists
// of messages element by element, matched by their text fields (a
// stream's component and id). An element only o has is added (by opAdd
// and opMax: a copy of it), and ignored by opSub. Of a ComponentStats,
// only the counters are touched.
func combine(m, o protoreflect.Message, op op) {
	top := m.Descriptor().FullName() == componentStatsName
	fds := m.Descriptor().Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if top && notCounters[fd.Name()] {
			continue
		}
		switch {
		case fd.IsMap():
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			if !o.Has(fd) || (op == opSub && !m.Has(fd)) {
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
				switch me := byKey[textKey(e)]; {
				case me != nil:
					combine(me, e, op)
				case op != opSub:
					c := proto.Clone(e.Interface()).ProtoReflect()
					ml.Append(protoreflect.ValueOfMessage(c))
					byKey[textKey(e)] = c
				}
			}
		case fd.IsList():
		case fd.Kind() == protoreflect.MessageKind && fd.Message().FullName() == histogramName:
			if !o.Has(fd) {
				continue
			}
			oh := o.Get(fd).Message().Interface().(*nimbuspb.LatencyHistogram)
			if !m.Has(fd) {
				if op != opSub {
					m.Set(fd, protoreflect.ValueOfMessage(proto.Clone(oh).ProtoReflect()))
				}
				continue
			}
			h := m.Mutable(fd).Message().Interface().(*nimbuspb.LatencyHistogram)
			combineHistogram(h, oh, op)
			if len(h.GetBuckets()) == 0 {
				m.Clear(fd)
			}
		case fd.Kind() == protoreflect.MessageKind:
			if o.Has(fd) && (m.Has(fd) || op != opSub) {
				combine(m.Mutable(fd).Message(), o.Get(fd).Message(), op)
			}
		default:
			if v, ok := number(fd.Kind(), m.Get(fd), o.Get(fd), op); ok {
				m.Set(fd, v)
			}
		}
	}
}

// combineHistogram applies op to h's buckets with o's, in place. Both
// were checked when reported.
func combineHistogram(h, o *nimbuspb.LatencyHistogram, op op) {
	hl, _ := LatencyOf(h)
	ol, _ := LatencyOf(o)
	switch op {
	case opAdd:
		hl.Add(&ol)
	case opSub:
		hl = hl.Since(&ol)
	case opMax:
		hl.Raise(&ol)
	}
	h.Buckets, h.Counts = hl.Sparse()
}

// number is op on a and b, of the numeric kinds.
func number(k protoreflect.Kind, a, b protoreflect.Value, op op) (protoreflect.Value, bool) {
	switch k {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(apply(a.Int(), b.Int(), op)), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(apply(a.Int(), b.Int(), op))), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(apply(a.Uint(), b.Uint(), op)), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(apply(a.Uint(), b.Uint(), op))), true
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(apply(a.Float(), b.Float(), op)), true
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(apply(a.Float(), b.Float(), op))), true
	}
	return protoreflect.Value{}, false
}

// apply is op on a and b; a difference is at least 0.
func apply[N int64 | uint64 | float64](a, b N, op op) N {
	switch op {
	case opAdd:
		return a + b
	case opSub:
		return a - min(a, b)
	}
	return max(a, b)
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
