package doctor

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// The findings read from the workers' and the executors' own figures:
// skew across a bolt's executors, GC pressure in a worker, a bolt that
// executes its input but never acks it.

// Thresholds of these findings.
const (
	// skewRatio: a saturated executor is skewed from its siblings when
	// their median is at most this share of its capacity (or of its
	// executed count, where capacities are not reported).
	skewRatio = 0.5
	// A worker is under GC pressure when it collects gcThrashPerSec
	// times a second, or gcPerSec times while paused gcPauseLeast of its
	// time, or is paused gcPauseShare of its time however often: a
	// healthy worker, with its 64 MiB GC floor and GOGC 400, collects a
	// few times a second at most, pausing well under 1% of its time.
	gcThrashPerSec = 50.0
	gcPerSec       = 10.0
	gcPauseLeast   = 0.01
	gcPauseShare   = 0.05
	// unackedShare: a bolt that acked or failed less than this share of
	// the inputs it executed does not ack them.
	unackedShare = 0.1
	// unackedLeast: how many inputs it must have executed in the span for
	// that to be judged.
	unackedLeast = 10
)

// executorFigures is one executor of a bolt, between the window's first
// sample and the last.
type executorFigures struct {
	host                string
	port                int32
	firstTask, lastTask int32
	capacity            float64
	executed            int64 // in the span (since the worker started where the first sample lacks it)
}

func (e executorFigures) where() string {
	tasks := "task " + strconv.Itoa(int(e.firstTask))
	if e.lastTask > e.firstTask {
		tasks = fmt.Sprintf("tasks %d-%d", e.firstTask, e.lastTask)
	}
	return fmt.Sprintf("%s on %s:%d", tasks, e.host, e.port)
}

// executorsOf is the bolt's executors as the workers report them in the
// last sample, with what each executed since the window's first.
func (d *diagnosis) executorsOf(component string) []executorFigures {
	key := func(host string, port, first int32) string {
		return host + ":" + strconv.Itoa(int(port)) + "/" + strconv.Itoa(int(first))
	}
	before := make(map[string]int64)
	for _, w := range d.window[0].Info.GetWorkers() {
		for _, c := range w.GetComponents() {
			if c.GetComponent() != component {
				continue
			}
			for _, x := range c.GetExecutors() {
				before[key(w.GetHost(), w.GetPort(), x.GetFirstTask())] = x.GetExecuted()
			}
		}
	}
	var out []executorFigures
	for _, w := range d.last().Info.GetWorkers() {
		if w.GetState() != "valid" {
			continue
		}
		for _, c := range w.GetComponents() {
			if c.GetComponent() != component {
				continue
			}
			for _, x := range c.GetExecutors() {
				host, port := x.GetHost(), x.GetPort()
				if host == "" {
					host, port = w.GetHost(), w.GetPort()
				}
				ex := x.GetExecuted()
				if p, ok := before[key(w.GetHost(), w.GetPort(), x.GetFirstTask())]; ok && len(d.window) > 1 {
					ex = metrics.Delta(ex, p)
				}
				out = append(out, executorFigures{host: host, port: port, firstTask: x.GetFirstTask(), lastTask: x.GetLastTask(),
					capacity: x.GetCapacity(), executed: ex})
			}
		}
	}
	slices.SortFunc(out, func(a, b executorFigures) int { return int(a.firstTask - b.firstTask) })
	return out
}

// skew is a saturated bolt's load spread unevenly over its executors:
// the busiest at its limit while the others' median is at most
// skewRatio of it. ok is false when the load is even, or the executors
// are not reported.
type skew struct {
	hot      executorFigures
	others   []executorFigures
	share    float64 // of the bolt's executed in the span, the hot executor's
	otherCap [2]float64
}

func (d *diagnosis) skewOf(b Component) (skew, bool) {
	xs := d.executorsOf(b.Component)
	if len(xs) < 2 {
		return skew{}, false
	}
	hi := 0
	var total int64
	for i, x := range xs {
		total += x.executed
		if x.capacity > xs[hi].capacity || (x.capacity == xs[hi].capacity && x.executed > xs[hi].executed) {
			hi = i
		}
	}
	s := skew{hot: xs[hi]}
	var caps, execs []float64
	for i, x := range xs {
		if i == hi {
			continue
		}
		s.others = append(s.others, x)
		caps, execs = append(caps, x.capacity), append(execs, float64(x.executed))
	}
	s.otherCap = [2]float64{slices.Min(caps), slices.Max(caps)}
	if total > 0 {
		s.share = float64(s.hot.executed) / float64(total)
	}
	switch {
	case s.hot.capacity >= saturated:
		return s, metrics.Median(caps) <= skewRatio*s.hot.capacity
	case s.hot.capacity == 0 && b.Load() >= saturated && s.hot.executed > 0:
		// No capacities per executor: judge by what each executed.
		return s, metrics.Median(execs) <= skewRatio*float64(s.hot.executed)
	}
	return s, false
}

// grouping is how the bolt's inputs are grouped, by Storm's names; the
// fields of its fields and partial key groupings; and the component the
// first of those reads from.
func (d *diagnosis) grouping(component string) (grouping string, fields []string, keySource string) {
	for _, c := range d.last().Info.GetDefinition().GetComponents() {
		if c.GetId() != component {
			continue
		}
		var gs []string
		for _, in := range c.GetInputs() {
			if !slices.Contains(gs, in.GetGrouping()) {
				gs = append(gs, in.GetGrouping())
			}
			if g := in.GetGrouping(); g == gale.GroupingFields || g == partialKey {
				fields = append(fields, in.GetFields()...)
				if keySource == "" {
					keySource = in.GetComponent()
				}
			}
		}
		return strings.Join(gs, ", "), fields, keySource
	}
	return "", nil, ""
}

// The Storm names of the groupings the skew finding tells apart, as
// nimbus reports them.
const (
	partialKey     = "partial-key"
	localOrShuffle = "local-or-shuffle"
)

// skewed reports a saturated bolt whose load sits on one executor: more
// executors do not spread it, since a key's tuples all go to one task.
func (d *diagnosis) skewed(b Component, s skew) {
	grouping, fields, keySource := d.grouping(b.Component)
	ev := []Metric{
		{"busiest executor", fmt.Sprintf("%s at capacity %.2f", s.hot.where(), s.hot.capacity)},
		{"the other executors' capacity", fmt.Sprintf("%.3f to %.3f (%d of them)", s.otherCap[0], s.otherCap[1], len(s.others))},
	}
	if s.share > 0 {
		ev = append(ev, Metric{"busiest executor's share of the input executed", fmt.Sprintf("%.0f%% (an even share: %.0f%%)", 100*s.share, 100/float64(len(s.others)+1))})
	}
	ev = append(ev, Metric{"executors / tasks", fmt.Sprintf("%d / %d", b.Executors, b.Tasks)})
	if grouping != "" {
		g := grouping
		if len(fields) > 0 {
			g += " on " + strings.Join(fields, ", ")
		}
		ev = append(ev, Metric{"input grouping", g})
	}
	var cause, fix string
	switch {
	case strings.Contains(grouping, partialKey):
		cause = fmt.Sprintf("bolt %s is skewed: one executor is saturated while its siblings idle, though partial key grouping (%s) splits each key over two tasks: a key carries more than two tasks can take",
			b.Component, strings.Join(fields, ", "))
		fix = fmt.Sprintf("spread the hot key further: add a salt to it (the key and a number from 0 to n-1) so that it becomes n keys, each split over two tasks, and merge them downstream; or group %s by a key with many evenly used values; not more executors", b.Component)
	case len(fields) > 0:
		cause = fmt.Sprintf("bolt %s is skewed: one executor is saturated while its siblings idle, so a few keys of its fields grouping (%s) carry most of the tuples; a key's tuples all go to one task, so more executors do not help",
			b.Component, strings.Join(fields, ", "))
		fix = fmt.Sprintf("use partial key grouping, as Storm's partialKeyGrouping: subscribe %s with PartialKeyGrouping(%s), which sends each key to the less loaded of two tasks, and merge each key's two partial results downstream (a bolt grouped by fields on the key); or group %s by a key with many evenly used values; not more executors",
			b.Component, quoteArgs(keySource, fields), b.Component)
	case strings.Contains(grouping, localOrShuffle):
		cause = fmt.Sprintf("bolt %s is skewed: one executor is saturated while its siblings idle; local-or-shuffle grouping sends a worker's tuples to the executors in that worker, so those next to the busy sources get them all", b.Component)
		fix = fmt.Sprintf("use shuffle grouping for %s, or spread its sources over the workers (more spout executors); not more executors of %s alone", b.Component, b.Component)
	default:
		cause = fmt.Sprintf("bolt %s is skewed: one executor is saturated while its siblings, given as many tuples, idle (grouping %s): its tuples cost more, or its machine is slower or loaded", b.Component, grouping)
		fix = fmt.Sprintf("look at what the busy executor's tuples carry, and at its machine (%s:%d); more executors do not even out a grouping's choice", s.hot.host, s.hot.port)
	}
	d.add(Finding{Kind: KindBoltSkewed, Severity: Warning, Component: b.Component, Cause: cause, Evidence: ev, Fix: fix})
}

// quoteArgs is Go call arguments for a component and its fields:
// "parse", "key".
func quoteArgs(component string, fields []string) string {
	args := []string{strconv.Quote(component)}
	for _, f := range fields {
		args = append(args, strconv.Quote(f))
	}
	return strings.Join(args, ", ")
}

// gcFigures is one worker's collector over the span.
type gcFigures struct {
	host       string
	port       int32
	secs       float64
	perSec     float64
	pauseShare float64
	cpuCores   float64
	heapMiB    float64
	gcs        int64
}

// gcOf is each worker's GC figures between the window's first sample and
// the last, over that worker's own heartbeats (or since it started,
// with one sample).
func (d *diagnosis) gcOf() []gcFigures {
	before := make(map[string]*nimbuspb.WorkerReport)
	if len(d.window) > 1 {
		for _, w := range d.window[0].Info.GetWorkers() {
			before[slotKey(w)] = w
		}
	}
	var out []gcFigures
	for _, w := range d.last().Info.GetWorkers() {
		if w.GetState() != "valid" || w.GetHeartbeatUnixMs() == 0 {
			continue
		}
		p := before[slotKey(w)]
		if p != nil && (restarted(p, w) || p.GetHeartbeatUnixMs() >= w.GetHeartbeatUnixMs()) {
			p = nil
		}
		var secs, cpu float64
		var gcs, pause int64
		switch {
		case p != nil:
			secs = float64(w.GetHeartbeatUnixMs()-p.GetHeartbeatUnixMs()) / 1000
			gcs, pause = metrics.Delta(w.GetGcCount(), p.GetGcCount()), metrics.Delta(w.GetGcPauseNanos(), p.GetGcPauseNanos())
			cpu = max(w.GetCpuSeconds()-p.GetCpuSeconds(), 0)
		case len(d.window) == 1 && w.GetStartedUnixMs() > 0 && w.GetHeartbeatUnixMs() > w.GetStartedUnixMs():
			secs = float64(w.GetHeartbeatUnixMs()-w.GetStartedUnixMs()) / 1000
			gcs, pause, cpu = w.GetGcCount(), w.GetGcPauseNanos(), w.GetCpuSeconds()
		default:
			continue
		}
		if secs <= 0 {
			continue
		}
		out = append(out, gcFigures{host: w.GetHost(), port: w.GetPort(), secs: secs, gcs: gcs,
			perSec: float64(gcs) / secs, pauseShare: float64(pause) / 1e9 / secs, cpuCores: cpu / secs,
			heapMiB: float64(w.GetHeapBytes()) / (1 << 20)})
	}
	return out
}

// gcPressure reports the workers whose collector runs so often, or
// pauses them so long, that it sets their pace: their heap is close to
// its limit (worker.heap.memory.mb, the Go memory limit), so the
// collector runs again and again to keep under it. It says whether it
// found one; the bolts' capacities then say nothing (every pause
// stretches every Execute).
func (d *diagnosis) gcPressure() bool {
	var ev []Metric
	var heap float64
	for _, g := range d.gcOf() {
		if g.perSec < gcThrashPerSec && (g.perSec < gcPerSec || g.pauseShare < gcPauseLeast) && g.pauseShare < gcPauseShare {
			continue
		}
		heap = max(heap, g.heapMiB)
		ev = append(ev, Metric{fmt.Sprintf("worker %s:%d", g.host, g.port),
			fmt.Sprintf("%d GCs in %.0f s (%.0f/s), paused %.1f%% of the time, %.2f cores of CPU, heap in use %.0f MiB",
				g.gcs, g.secs, g.perSec, 100*g.pauseShare, g.cpuCores, g.heapMiB)})
	}
	if len(ev) == 0 {
		return false
	}
	// Room for the live heap twice over, in 64 MiB steps.
	want := int(math.Ceil(2*heap/64)) * 64
	want = max(want, 256)
	d.add(Finding{Kind: KindGCPressure, Severity: Warning,
		Cause: fmt.Sprintf("%d worker(s) under GC pressure: the collector runs again and again (more than %.0f times a second, or pausing them more than %.0f%% of the time), so their heap is at its limit (%s, the Go memory limit) and the collector keeps running to stay under it; every bolt in them slows down",
			len(ev), gcPerSec, 100*gcPauseLeast, workerHeapKey),
		Evidence: ev,
		Fix: fmt.Sprintf("raise %s in the cluster's gale.yaml (a cluster key: the supervisors start workers with it, a topology cannot set it) to about %d, above twice the heap in use, and restart the supervisors; or keep less live state in the bolts (bound their caches and windows)",
			workerHeapKey, want)})
	return true
}

// workerHeapKey is the cluster key of a worker's heap budget
// (workermem.KeyHeapMemoryMB).
const workerHeapKey = "worker.heap.memory.mb"

// notAcking reports the bolts that execute their input but ack or fail
// almost none of it: their trees never complete, so the spouts' trees in
// flight fill up and time out. It says whether it found one; the spouts'
// caps are then pinned by the trees these bolts hold, not by the cap.
func (d *diagnosis) notAcking() bool {
	var pending int64
	var timedOut int64
	for _, s := range d.spouts() {
		pending += s.Pending
		timedOut += s.DeltaTimedOut
	}
	if pending == 0 && timedOut == 0 {
		return false
	}
	found := false
	for _, b := range d.bolts() {
		executed := b.Executed * d.span.Seconds
		done := (b.Acked + b.Failed) * d.span.Seconds
		if executed < unackedLeast || done >= unackedShare*executed {
			continue
		}
		ev := []Metric{
			{"executed", fmt.Sprintf("%.1f/s (%.0f in %.0f s)", b.Executed, executed, d.span.Seconds)},
			{"acked / failed", fmt.Sprintf("%.1f/s / %.1f/s", b.Acked, b.Failed)},
			{"trees in flight", strconv.FormatInt(pending, 10)},
		}
		cause := fmt.Sprintf("bolt %s executes its input but does not ack it (%.0f%% acked or failed): its trees never complete, so they fill the spouts' trees in flight and time out after topology.message.timeout.secs (%d s), and each is replayed",
			b.Component, 100*done/max(executed, 1), d.timeout)
		if timedOut > 0 {
			ev = append(ev, Metric{"trees timed out", fmt.Sprintf("%d in %.0f s", timedOut, d.span.Seconds)})
		}
		d.add(Finding{Kind: KindNotAcking, Severity: Critical, Component: b.Component, Cause: cause, Evidence: ev,
			Fix: fmt.Sprintf("make %s ack each input once done with it (Collector.Ack, or Fail if it cannot be processed), on every path of Execute, or use a BasicBolt, which acks for you", b.Component)})
		found = true
	}
	return found
}
