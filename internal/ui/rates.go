package ui

import (
	"strconv"
	"sync"
	"time"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/metrics/components"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// The topology page's live rates (liveRates), from the workers' own
// reports: a worker's counters move only when its supervisor reports it
// (supervisor.heartbeat.frequency.secs, 5 s by default), so a rate over
// the browser's 2 s poll reads 0 or 2.5 times the truth. Each worker's
// rate is instead the change of its counters between its last two
// reports, divided by the time between their heartbeats, and holds until
// its next report; the topology's is the sum over its workers. Between
// a worker's first report seen and its second, its rate is its average
// since it started if it has run for sinceStartLeast (its start then
// weighs little), else unknown.

// Bounds of a rateBook: the topologies it remembers, and how long it
// remembers one no page asked about.
const (
	rateBookTopologies = 256
	rateBookIdle       = 10 * time.Minute
	sinceStartLeast    = time.Minute
)

// rateBook keeps each topology's workers' last reports seen, for the
// rates. Safe for concurrent use; the topology pages' requests share it,
// and a report counts once however many pages see it.
type rateBook struct {
	mu struct {
		sync.Mutex
		topos map[string]*topoRates
	}
}

type topoRates struct {
	seen    time.Time // when a page last asked
	workers map[string]*workerRates
}

// workerRates is one worker's last report seen and its rates over the
// interval before it.
type workerRates struct {
	pid     int32
	started int64
	hb      int64 // heartbeat_unix_ms of the report
	vals    map[string]float64
	rates   map[string]float64 // per second
	// secs is the interval the rates cover; since is set while they are
	// the average since the worker started.
	secs  float64
	since bool
}

func newRateBook() *rateBook {
	b := &rateBook{}
	b.mu.topos = make(map[string]*topoRates)
	return b
}

// The keys of a worker's counters (counterValues).
const (
	rkAcked, rkEmitted, rkFailed, rkTimedOut, rkByBolt = "acked", "emitted", "failed", "timedOut", "failedByBolt"
	rkLatSum, rkLatN                                   = "latencySumMicros", "latencyCount"
	rkNode, rkIn, rkOut                                = "node\x00", "in\x00", "out\x00"
)

// counterValues flattens a worker report's counters: the topology's
// totals, each component's (a spout's emitted, a bolt's executed), each
// bolt input's executed and each output stream's emitted.
func counterValues(w *nimbuspb.WorkerReport) map[string]float64 {
	v := map[string]float64{
		rkAcked: float64(w.GetAcked()), rkEmitted: float64(w.GetEmitted()), rkFailed: float64(w.GetFailed()),
		rkTimedOut: float64(w.GetTimedOut()),
	}
	lat, _ := components.LatencyOf(w.GetCompleteLatency()) // checked by nimbus
	v[rkLatSum], v[rkLatN] = lat.SumMicros(), float64(lat.Count())
	for _, c := range w.GetComponents() {
		id := c.GetComponent()
		if c.GetKind() == "spout" {
			v[rkByBolt] += float64(c.GetFailedByBolt())
			v[rkNode+id] += float64(c.GetEmitted())
		} else {
			v[rkNode+id] += float64(c.GetExecuted())
		}
		for _, in := range c.GetInputs() {
			v[rkIn+id+"\x00"+in.GetComponent()+"\x00"+in.GetStream()] += float64(in.GetExecuted())
		}
		for _, out := range c.GetOutputs() {
			v[rkOut+id+"\x00"+out.GetStream()] += float64(out.GetEmitted())
		}
	}
	return v
}

func slotOf(w *nimbuspb.WorkerReport) string {
	return w.GetSupervisor() + "|" + w.GetHost() + ":" + strconv.Itoa(int(w.GetPort()))
}

// observe takes the topology's workers' reports (a Get's) and returns
// its rates: per second, summed over its running workers, and how many
// of those have a rate known (the others add nothing yet).
func (b *rateBook) observe(topology string, workers []*nimbuspb.WorkerReport, now time.Time) (rates map[string]float64, measured, running int) {
	vals := make(map[string]map[string]float64, len(workers))
	for _, w := range workers {
		if w.GetHeartbeatUnixMs() > 0 {
			vals[slotOf(w)] = counterValues(w) // outside the lock
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweepLocked(now)
	t := b.mu.topos[topology]
	if t == nil {
		t = &topoRates{workers: make(map[string]*workerRates)}
		b.mu.topos[topology] = t
	}
	t.seen = now
	total := make(map[string]float64)
	present := make(map[string]bool, len(workers))
	for _, w := range workers {
		key := slotOf(w)
		cur, ok := vals[key]
		if !ok {
			continue
		}
		present[key] = true
		e := t.workers[key]
		switch {
		case e == nil || e.restarted(w, cur):
			e = &workerRates{pid: w.GetPid(), started: w.GetStartedUnixMs(), hb: w.GetHeartbeatUnixMs(), vals: cur}
			if st := w.GetStartedUnixMs(); st > 0 && e.hb-st >= sinceStartLeast.Milliseconds() {
				e.secs, e.since = float64(e.hb-st)/1000, true
				e.rates = per(cur, nil, e.secs)
			}
			t.workers[key] = e
		case w.GetHeartbeatUnixMs() > e.hb:
			secs := float64(w.GetHeartbeatUnixMs()-e.hb) / 1000
			e.rates, e.secs, e.since = per(cur, e.vals, secs), secs, false
			e.hb, e.vals = w.GetHeartbeatUnixMs(), cur
		}
		if w.GetState() != "valid" {
			continue // not running: it adds nothing now
		}
		running++
		if e.rates != nil {
			measured++
		}
		for k, r := range e.rates {
			total[k] += r
		}
	}
	for key := range t.workers {
		if !present[key] {
			delete(t.workers, key)
		}
	}
	return total, measured, running
}

// restarted says whether w is another process than the one e saw.
func (e *workerRates) restarted(w *nimbuspb.WorkerReport, cur map[string]float64) bool {
	if (w.GetPid() != 0 && e.pid != 0 && w.GetPid() != e.pid) || w.GetStartedUnixMs() > e.started {
		return true
	}
	return cur[rkEmitted] < e.vals[rkEmitted] || cur[rkAcked] < e.vals[rkAcked]
}

// per is each counter's change from prev (nil: from 0) per second over
// secs; a counter that went down counts 0 (metrics.Rate).
func per(cur, prev map[string]float64, secs float64) map[string]float64 {
	out := make(map[string]float64, len(cur))
	for k, v := range cur {
		out[k] = metrics.Rate(v, prev[k], secs)
	}
	return out
}

// sweepLocked forgets the topologies no page asked about for
// rateBookIdle, and the least recently asked beyond rateBookTopologies.
func (b *rateBook) sweepLocked(now time.Time) {
	var oldest string
	var oldestSeen time.Time
	for id, t := range b.mu.topos {
		if now.Sub(t.seen) > rateBookIdle {
			delete(b.mu.topos, id)
			continue
		}
		if oldest == "" || t.seen.Before(oldestSeen) {
			oldest, oldestSeen = id, t.seen
		}
	}
	if len(b.mu.topos) >= rateBookTopologies {
		delete(b.mu.topos, oldest)
	}
}

// liveRates is topology/:id's liveRates: the topology's rates per second
// from its workers' reports (the totals, each component's, each input
// stream's), the mean complete latency of the trees acked over the
// workers' last report intervals (null when none was), the latest
// report's heartbeat, and how many of the running workers the rates
// cover (workersMeasured of workersRunning: a worker needs two reports,
// or a minute's run, for a rate).
func liveRates(info *nimbuspb.TopologyInfo, rates map[string]float64, measured, running int) map[string]any {
	var asOf int64
	for _, w := range info.GetWorkers() {
		asOf = max(asOf, w.GetHeartbeatUnixMs())
	}
	out := map[string]any{
		"asOfUnixMs":      asOf,
		"workersMeasured": measured,
		"workersRunning":  running,
		"acked":           rates[rkAcked],
		"emitted":         rates[rkEmitted],
		"failed":          rates[rkFailed],
		"timedOut":        rates[rkTimedOut],
		"failedByBolt":    rates[rkByBolt],
	}
	if n := rates[rkLatN]; n > 0 {
		out["completeLatency"] = rates[rkLatSum] / n / 1000
	} else {
		out["completeLatency"] = nil
	}
	comps := map[string]float64{}
	inputs := []map[string]any{}
	for _, c := range info.GetDefinition().GetComponents() {
		id := c.GetId()
		comps[id] = rates[rkNode+id]
		for _, in := range c.GetInputs() {
			r, counted := rates[rkIn+id+"\x00"+in.GetComponent()+"\x00"+in.GetStream()]
			if !counted || r == 0 {
				// Not counted per input: what the source emitted on the stream.
				if o, ok := rates[rkOut+in.GetComponent()+"\x00"+in.GetStream()]; ok {
					r = o
				} else if !counted {
					r = rates[rkNode+in.GetComponent()]
				}
			}
			inputs = append(inputs, map[string]any{"component": id, "source": in.GetComponent(), "stream": in.GetStream(), "rate": r})
		}
	}
	out["components"], out["inputs"] = comps, inputs
	return out
}
