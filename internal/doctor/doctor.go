// Package doctor diagnoses a running topology from a few samples of
// nimbus's view of it (Get, and ClusterInfo for the slots), taken some
// seconds apart: `gale doctor` samples, Diagnose reads. It is pure: no
// clock, no I/O, the same samples give the same report.
//
// It walks the troubleshooting order of the Storm@Twitter material, from
// symptom to cause, and does not go on where an earlier step makes the
// later numbers unreadable:
//
//  1. the shape: workers asked for against workers running and the slots
//     free to it (a topology short of workers is queueing, not slow);
//     then workers under GC pressure (their heap at worker.heap.memory.mb:
//     every Execute in them is slowed, so capacities are not judged), and
//     bolts that execute their input but never ack it (their trees fill
//     the spouts' caps and time out);
//  2. a spout throttled by topology.max.spout.pending (its trees in
//     flight pinned at the cap while the bolts idle), told apart from a
//     bolt at its limit (capacity near 1: the cap then only passes on
//     the bolt's backpressure), and a bolt at its limit on one executor
//     only (skew: a hot key, which more executors do not spread);
//  3. replays: trees timing out, and why (processing longer than
//     topology.message.timeout.secs, or trees lost); while trees time
//     out, saturation and throttling are not judged, since replays load
//     the bolts and free the spouts' slots;
//  4. workers starting again, and trees failed by bolts.
//
// Each Finding has a severity, its cause in one sentence, the metric
// values behind it and what to change (a config key or a command).
package doctor

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// Severity ranks a finding.
type Severity string

const (
	// Critical: the topology does not do its work (not all of it runs,
	// trees time out).
	Critical Severity = "critical"
	// Warning: it works below what it could (throttled, saturated,
	// failing some trees, workers restarting).
	Warning Severity = "warning"
	// Info: worth knowing, nothing to fix.
	Info Severity = "info"
)

// The kinds of finding, in the order Diagnose reports them.
const (
	KindShape             = "shape"
	KindGCPressure        = "gc-pressure"
	KindSpoutThrottled    = "spout-throttled"
	KindBoltSaturated     = "bolt-saturated"
	KindBoltSkewed        = "bolt-skewed"
	KindTimeoutTooShort   = "timeout-too-short"
	KindNotAcking         = "bolt-not-acking"
	KindReplayStorm       = "replay-storm"
	KindWorkersRestarting = "workers-restarting"
	KindFailedByBolt      = "failed-by-bolt"
	KindNoTraffic         = "no-traffic"
)

var kindOrder = []string{KindShape, KindGCPressure, KindSpoutThrottled, KindBoltSaturated, KindBoltSkewed,
	KindTimeoutTooShort, KindNotAcking, KindReplayStorm, KindWorkersRestarting, KindFailedByBolt, KindNoTraffic}

// Metric is one value behind a finding, as printed.
type Metric struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Finding is one problem (or note) and what to do about it.
type Finding struct {
	Kind     string   `json:"kind"`
	Severity Severity `json:"severity"`
	// Component is the spout or bolt at fault, if one is.
	Component string `json:"component,omitempty"`
	// Cause is the diagnosis in one sentence.
	Cause    string   `json:"cause"`
	Evidence []Metric `json:"evidence"`
	// Fix is what to change: the config key and value, or the command.
	Fix string `json:"fix"`
}

// Problem says whether the finding is one (warning or critical), not a
// note.
func (f Finding) Problem() bool { return f.Severity != Info }

// Numbers are the topology's key numbers over the samples.
type Numbers struct {
	Seconds        float64 `json:"seconds"`
	Workers        int32   `json:"workers"`
	WorkersRunning int32   `json:"workers_running"`
	EmittedPerSec  float64 `json:"emitted_per_sec"`
	AckedPerSec    float64 `json:"acked_per_sec"`
	FailedPerSec   float64 `json:"failed_per_sec"`
	TimedOutPerSec float64 `json:"timed_out_per_sec"`
	// Complete latency of the trees acked in the span, milliseconds.
	CompleteP50Ms float64 `json:"complete_latency_p50_ms"`
	CompleteP99Ms float64 `json:"complete_latency_p99_ms"`
	// The busiest bolt and its load (Component.Load).
	BusiestBolt        string  `json:"busiest_bolt,omitempty"`
	BusiestCapacity    float64 `json:"busiest_capacity"`
	Pending            int64   `json:"pending"`
	MaxPending         int64   `json:"max_pending"`
	MessageTimeoutSecs int     `json:"message_timeout_secs"`
}

// Report is Diagnose's answer.
type Report struct {
	Topology string    `json:"topology"`
	ID       string    `json:"id"`
	Status   string    `json:"status"`
	Samples  int       `json:"samples"`
	Findings []Finding `json:"findings"`
	Numbers  Numbers   `json:"numbers"`
	// Components are the components' numbers over the samples' span.
	Components []Component `json:"components"`
}

// Problems counts the findings that are problems.
func (r *Report) Problems() int {
	n := 0
	for _, f := range r.Findings {
		if f.Problem() {
			n++
		}
	}
	return n
}

// Thresholds.
const (
	// saturated: a bolt's capacity from which it is at its limit.
	saturated = 0.8
	// idle: below it no bolt limits the spouts, so a spout pinned at its
	// cap is held back by the cap alone.
	idle = 0.5
	// pinnedShare: the share of samples a spout's trees in flight must
	// be at the cap (90% of it) in to count as pinned there.
	pinnedShare = 0.75
	// timeoutShare: the share of the trees finished in the span that
	// timed out from which the timeouts are a replay storm.
	timeoutShare = 0.01
)

// Diagnose reads samples of one topology, oldest first (at least one;
// rates need two whose reports differ), and reports what it finds in the
// troubleshooting order.
func Diagnose(samples []Sample) Report {
	if len(samples) == 0 {
		return Report{}
	}
	last := samples[len(samples)-1]
	sum := last.Info.GetSummary()
	r := Report{Topology: sum.GetName(), ID: sum.GetId(), Status: sum.GetStatus(), Samples: len(samples), Findings: []Finding{}}
	// Rates from the first sample after the last restart: a worker that
	// started again counts from zero.
	base := 0
	for i := 1; i < len(samples); i++ {
		if restartedBetween(samples[i-1], samples[i]) {
			base = i
		}
	}
	var span Span
	switch {
	case len(samples) == 1:
		span = Rates(nil, last)
	default:
		span = Rates(&samples[base], last) // 0 s if the restart came last
	}
	r.Components = span.Components
	d := &diagnosis{samples: samples, window: samples[base:], restarted: base > 0, span: span, timeout: messageTimeout(last.Info), report: &r}
	d.numbers()
	blocked := d.shape()
	if !blocked && span.Seconds > 0 {
		gc := d.gcPressure()
		d.unacked = d.notAcking()
		storm := d.timeouts()
		if !storm && !gc && !d.unacked {
			d.throttledOrSaturated()
		}
		d.failedByBolt(storm)
		d.noTraffic()
	}
	d.restarts()
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return slices.Index(kindOrder, a.Kind) - slices.Index(kindOrder, b.Kind)
	})
	return r
}

type diagnosis struct {
	samples []Sample
	// window is the samples the rates are read over: since the last
	// restart (restarted) or all of them.
	window    []Sample
	restarted bool
	span      Span
	timeout   int // topology.message.timeout.secs
	// unacked: a bolt that does not ack its input was found (notAcking),
	// which explains trees that time out.
	unacked bool
	report  *Report
}

func (d *diagnosis) add(f Finding) { d.report.Findings = append(d.report.Findings, f) }

func (d *diagnosis) last() Sample { return d.samples[len(d.samples)-1] }

// messageTimeout is the topology's topology.message.timeout.secs: the
// effective one nimbus's Get reports, else its config's, else Gale's
// default (a nimbus that does not report it may have another in its
// gale.yaml).
func messageTimeout(info *nimbuspb.TopologyInfo) int {
	if n := info.GetMessageTimeoutSecs(); n > 0 {
		return int(n)
	}
	var conf gale.Config
	if len(info.GetConfigJson()) > 0 && json.Unmarshal(info.GetConfigJson(), &conf) == nil {
		if f, ok := conf[gale.TopologyMessageTimeoutSecs].(float64); ok && f >= 1 {
			return int(f)
		}
	}
	eff, err := config.Resolve(nil, nil)
	if err != nil {
		return 30
	}
	n, _ := eff.Int(gale.TopologyMessageTimeoutSecs)
	return n
}

func (d *diagnosis) spouts() []Component {
	var out []Component
	for _, c := range d.span.Components {
		if c.Kind == "spout" {
			out = append(out, c)
		}
	}
	return out
}

func (d *diagnosis) bolts() []Component {
	var out []Component
	for _, c := range d.span.Components {
		if c.Kind == "bolt" {
			out = append(out, c)
		}
	}
	return out
}

// busiest is the bolt with the largest capacity, if any bolt reports one.
func (d *diagnosis) busiest() (Component, bool) {
	var best Component
	found := false
	for _, b := range d.bolts() {
		if !found || b.Load() > best.Load() {
			best, found = b, true
		}
	}
	return best, found
}

// stalled is the bolts whose input kept coming (their sources emitted in
// the span) but which reported no input executed in it: each batch of
// their input takes longer than the span (a bolt publishes its counters
// once it has executed a batch), so their execute latency and capacity
// are not seen yet. The value is what their sources emitted per second.
func (d *diagnosis) stalled() map[string]float64 {
	rates := make(map[string]Component)
	for _, c := range d.span.Components {
		rates[c.Component] = c
	}
	out := make(map[string]float64)
	for _, def := range d.last().Info.GetDefinition().GetComponents() {
		b, ok := rates[def.GetId()]
		if !ok || b.Kind != "bolt" || b.Executed > 0 {
			continue
		}
		var in float64
		for _, i := range def.GetInputs() {
			in += rates[i.GetComponent()].Emitted
		}
		if in > 0 {
			out[b.Component] = in
		}
	}
	return out
}

func (d *diagnosis) numbers() {
	n := &d.report.Numbers
	sum := d.last().Info.GetSummary()
	n.Seconds = round(d.span.Seconds, 1)
	n.Workers, n.WorkersRunning = sum.GetWorkers(), sum.GetWorkersRunning()
	n.MessageTimeoutSecs = d.timeout
	var p50, p99 time.Duration
	for _, s := range d.spouts() {
		n.EmittedPerSec += s.Emitted
		n.AckedPerSec += s.Acked
		n.FailedPerSec += s.Failed
		n.TimedOutPerSec += s.TimedOut
		n.Pending += s.Pending
		n.MaxPending += s.MaxPending
		p50, p99 = max(p50, s.CompleteP50), max(p99, s.CompleteP99)
	}
	n.EmittedPerSec, n.AckedPerSec = round(n.EmittedPerSec, 1), round(n.AckedPerSec, 1)
	n.FailedPerSec, n.TimedOutPerSec = round(n.FailedPerSec, 1), round(n.TimedOutPerSec, 1)
	n.CompleteP50Ms, n.CompleteP99Ms = ms(p50), ms(p99)
	if b, ok := d.busiest(); ok {
		n.BusiestBolt, n.BusiestCapacity = b.Component, round(b.Load(), 2)
	}
}

// shape checks step 1, and says whether the topology is too far from its
// shape for the later steps' numbers to mean anything.
func (d *diagnosis) shape() (blocked bool) {
	last := d.last()
	sum := last.Info.GetSummary()
	name := sum.GetName()
	asked, running := sum.GetWorkers(), sum.GetWorkersRunning()
	total, free := slots(last.Cluster)
	ev := []Metric{{"workers asked (topology.workers)", itoa(asked)}, {"workers running", itoa(running)}}
	if last.Cluster != nil {
		ev = append(ev, Metric{"slots free / total", fmt.Sprintf("%d / %d", free, total)})
	}
	switch st := sum.GetStatus(); {
	case sum.GetPendingReason() != "":
		// The slots it may have: those free and those it holds (other
		// topologies hold the rest).
		avail := int32(free) + held(last.Info)
		fix := fmt.Sprintf("add supervisors or slots (supervisor.slots.ports), or ask for fewer workers: gale rebalance %s -n %d", name, max(min(asked, avail), 1))
		switch {
		case last.Cluster != nil && avail == 0:
			fix = fmt.Sprintf("no slot is free (other topologies hold all %d): add supervisors or slots (supervisor.slots.ports), or kill or shrink another topology", total)
		case last.Cluster != nil && int(asked) > total:
			fix = fmt.Sprintf("the cluster has %d slots in all, %d of them free to it: add supervisors (supervisor.slots.ports), or gale rebalance %s -n %d", total, avail, name, avail)
		}
		d.add(Finding{Kind: KindShape, Severity: Critical,
			Cause:    fmt.Sprintf("the topology waits for slots: %s; a topology short of workers is queueing, not slow, and its numbers say nothing until it runs whole", sum.GetPendingReason()),
			Evidence: append(ev, Metric{"pending reason", sum.GetPendingReason()}), Fix: fix})
		return true
	case st == "INACTIVE":
		d.add(Finding{Kind: KindShape, Severity: Warning,
			Cause: "the topology is deactivated: its spouts emit nothing", Evidence: append(ev, Metric{"status", st}),
			Fix: "gale activate " + name})
		return true
	case st == "REBALANCING" || st == "KILLED":
		d.add(Finding{Kind: KindShape, Severity: Info,
			Cause:    fmt.Sprintf("the topology is %s: its numbers are in flux; ask again once it is ACTIVE", strings.ToLower(st)),
			Evidence: append(ev, Metric{"status", st}), Fix: "wait, then gale doctor " + name + " again"})
		return true
	case running < asked:
		ev = append(ev, notRunning(last.Info)...)
		fix := "see why in the evidence (gale supervisor status --dir DIR on its machine, and the worker's log)"
		if last.Cluster != nil && free == 0 {
			fix = fmt.Sprintf("free or add slots (supervisor.slots.ports), or gale rebalance %s -n %d", name, max(running, 1))
		}
		d.add(Finding{Kind: KindShape, Severity: Critical,
			Cause:    fmt.Sprintf("%d of the %d workers asked for run: the topology runs short, and its numbers say nothing until it runs whole", running, asked),
			Evidence: ev, Fix: fix})
		return true
	}
	if len(d.samples) > 1 && d.span.Seconds <= 0 && running > 0 && !d.restarted {
		d.add(Finding{Kind: KindShape, Severity: Warning,
			Cause:    fmt.Sprintf("no worker report reached nimbus during the %.0f s sampled: the counters did not move, so no rate can be read", d.last().At.Sub(d.samples[0].At).Seconds()),
			Evidence: append(ev, Metric{"latest heartbeat", d.last().AsOf().UTC().Format(time.RFC3339)}),
			Fix:      "sample for longer than supervisor.heartbeat.frequency.secs (gale doctor --duration), and check that the supervisors reach nimbus"})
		return true
	}
	return false
}

// held is how many slots the topology holds: its assignment's workers,
// else the workers reporting.
func held(info *nimbuspb.TopologyInfo) int32 {
	if n := len(info.GetAssignment().GetWorkers()); n > 0 {
		return int32(n)
	}
	return int32(len(info.GetWorkers()))
}

// slots is the cluster's slots in all and those free.
func slots(c *nimbuspb.ClusterInfoResponse) (total, free int) {
	for _, s := range c.GetSupervisors() {
		total += len(s.GetPorts())
		free += max(len(s.GetPorts())-int(s.GetSlotsUsed()), 0)
	}
	return total, free
}

// notRunning is the workers a sample reports in a state other than
// valid, with their reasons.
func notRunning(info *nimbuspb.TopologyInfo) []Metric {
	var out []Metric
	for _, w := range info.GetWorkers() {
		if w.GetState() == "valid" {
			continue
		}
		v := w.GetState()
		if w.GetReason() != "" {
			v += ": " + w.GetReason()
		}
		out = append(out, Metric{fmt.Sprintf("worker %s:%d", w.GetHost(), w.GetPort()), v})
	}
	return out
}

// timeouts checks step 3: trees timing out, and why. It says whether
// they are a storm, in which saturation and throttling are not judged.
func (d *diagnosis) timeouts() (storm bool) {
	var timedOut, finished int64
	var p99 time.Duration
	var spout string
	var rate float64
	for _, s := range d.spouts() {
		timedOut += s.DeltaTimedOut
		finished += s.DeltaAcked + s.DeltaFailed
		rate += s.TimedOut
		if s.DeltaTimedOut > 0 && spout == "" {
			spout = s.Component
		}
		p99 = max(p99, s.CompleteP99)
	}
	timeout := time.Duration(d.timeout) * time.Second
	// The slowest bolt, and the bolts' execute latencies together (a
	// chain's tuple passes each once).
	// A bolt's time per tuple is its execute latency, or its process
	// latency (arrival to ack) where the workers report a longer one.
	var slow Component
	var took, chain time.Duration
	for _, b := range d.bolts() {
		bt := max(b.ExecuteLatency, b.ProcessLatency)
		chain += bt
		if bt > took {
			slow, took = b, bt
		}
	}
	// A bolt slower than the timeout fails every tree through it, seen
	// timing out in the span or not (a pipeline stuck behind it reports
	// nothing moving).
	structural := took >= timeout || chain >= timeout
	timingOut := timedOut > 0 && float64(timedOut) >= timeoutShare*float64(finished)
	if !timingOut && !structural {
		return false
	}
	share := float64(timedOut) / float64(max(finished, 1))
	var allTime int64
	for _, c := range d.last().Info.GetComponents() {
		allTime += c.GetTimedOut()
	}
	ev := []Metric{
		{"trees timed out", fmt.Sprintf("%d in %.0f s (%.1f/s, %.0f%% of the trees finished); %d since the workers started", timedOut, d.span.Seconds, rate, 100*share, allTime)},
		{"topology.message.timeout.secs", strconv.Itoa(d.timeout)},
	}
	if p99 > 0 {
		ev = append(ev, Metric{"complete latency p99 (trees acked)", dur(p99)})
	}
	if slow.Component != "" {
		ev = append(ev, Metric{fmt.Sprintf("execute latency of %s (slowest bolt)", slow.Component), dur(slow.ExecuteLatency)})
		if slow.ProcessLatency > 0 {
			ev = append(ev, Metric{fmt.Sprintf("process latency of %s", slow.Component), dur(slow.ProcessLatency)})
		}
	}
	if b, ok := d.busiest(); ok && b.Load() >= saturated {
		ev = append(ev, Metric{fmt.Sprintf("capacity of %s", b.Component), fmt.Sprintf("%.2f (judge it again once trees stop timing out: replays load the bolts)", b.Load())})
	}
	resubmit := d.resubmit()
	stalled := d.stalled()
	var stuck string
	for _, b := range d.bolts() {
		if in, ok := stalled[b.Component]; ok && stuck == "" {
			stuck = b.Component
			ev = append(ev, Metric{"executed by " + b.Component, fmt.Sprintf("0 in %.0f s, while its input came at %.1f/s", d.span.Seconds, in)})
		}
	}
	switch {
	case stuck != "" && !structural:
		want := max(int(math.Ceil(3*d.span.Seconds)), 2*d.timeout)
		d.add(Finding{Kind: KindTimeoutTooShort, Severity: Critical, Component: stuck,
			Cause: fmt.Sprintf("the message timeout is shorter than the processing time: bolt %s finished no input in %.0f s while its input kept coming, so a tuple through it takes longer than topology.message.timeout.secs (%d s) allows a whole tree, and the trees time out and are replayed",
				stuck, d.span.Seconds, d.timeout),
			Evidence: ev,
			Fix: fmt.Sprintf("raise topology.message.timeout.secs well above %s's time per tuple, at least %d (%s -c %s=%d), or make %s faster",
				stuck, want, resubmit, gale.TopologyMessageTimeoutSecs, want, stuck)})
	case structural:
		who := "bolt " + slow.Component + " alone takes"
		if took < timeout {
			took, who = chain, "the bolts together take"
		}
		want := suggestTimeout(took, p99, d.timeout)
		d.add(Finding{Kind: KindTimeoutTooShort, Severity: Critical, Component: slow.Component,
			Cause: fmt.Sprintf("the message timeout is shorter than the processing time: %s %s per tuple, more than topology.message.timeout.secs (%d s) allows a whole tree, so trees time out and are replayed",
				who, dur(took), d.timeout),
			Evidence: ev,
			Fix: fmt.Sprintf("raise topology.message.timeout.secs to at least %d (%s -c %s=%d), or make %s faster",
				want, resubmit, gale.TopologyMessageTimeoutSecs, want, slow.Component)})
	case p99 >= timeout/2:
		want := suggestTimeout(0, p99, d.timeout)
		d.add(Finding{Kind: KindTimeoutTooShort, Severity: Critical, Component: spout,
			Cause:    fmt.Sprintf("trees take close to topology.message.timeout.secs (p99 %s of %d s) to complete, so the slower ones time out, are replayed and queue up more: a replay storm", dur(p99), d.timeout),
			Evidence: ev,
			Fix: fmt.Sprintf("cut the feedback first: raise topology.message.timeout.secs to %d or lower topology.max.spout.pending (%s -c %s=%d); then find the slow bolt (gale doctor again, gale monitor)",
				want, resubmit, gale.TopologyMessageTimeoutSecs, want)})
	case d.unacked:
		// The bolt that does not ack them is named (notAcking).
	default:
		d.add(Finding{Kind: KindReplayStorm, Severity: Critical, Component: spout,
			Cause:    fmt.Sprintf("trees time out although those that complete take far less than the timeout (p99 %s of %d s): their tuples are lost or never acked (a bolt that neither acks nor fails, or a worker that died with them), and each is replayed", dur(p99), d.timeout),
			Evidence: ev,
			Fix:      "check that every bolt acks or fails each input (collector.Ack/Fail), and the workers' restarts below; replays repeat until then"})
	}
	return true
}

// suggestTimeout is a message timeout that covers a processing time took
// and a p99 three times over, and at least doubles the current one.
func suggestTimeout(took, p99 time.Duration, cur int) int {
	need := 3 * max(took, p99).Seconds()
	return max(int(math.Ceil(need)), 2*cur)
}

// resubmit is the command that submits the topology again with other
// config (config does not change on a running topology).
func (d *diagnosis) resubmit() string {
	def := d.last().Info.GetDefinition()
	name := d.last().Info.GetSummary().GetName()
	factory := strings.TrimPrefix(def.GetFactory(), "run:")
	if factory == "" {
		factory = name
	}
	var b strings.Builder
	fmt.Fprintf(&b, "gale kill %s; gale submit %s", name, factory)
	params := def.GetParams()
	for _, k := range slices.Sorted(maps.Keys(params)) {
		fmt.Fprintf(&b, " -p %s=%s", k, params[k])
	}
	return b.String()
}

// throttledOrSaturated checks step 2: a spout pinned at its cap while the
// bolts idle is throttled by the cap; a bolt near capacity 1 is the
// limit, whatever the spouts' caps do.
func (d *diagnosis) throttledOrSaturated() {
	name := d.last().Info.GetSummary().GetName()
	busiest, haveBolt := d.busiest()
	stalled := d.stalled()
	for _, b := range d.bolts() {
		if in, ok := stalled[b.Component]; ok {
			d.add(Finding{Kind: KindBoltSaturated, Severity: Warning, Component: b.Component,
				Cause: fmt.Sprintf("bolt %s is saturated: it finished no input in %.0f s while its input kept coming (%.1f/s), so each of its Execute calls takes long and it sets the topology's pace",
					b.Component, d.span.Seconds, in),
				Evidence: []Metric{{"executed", fmt.Sprintf("0 in %.0f s", d.span.Seconds)}, {"input emitted to it", fmt.Sprintf("%.1f/s", in)},
					{"executors / tasks", fmt.Sprintf("%d / %d", b.Executors, b.Tasks)}},
				Fix: fmt.Sprintf("make %s's Execute faster, or give it more executors (gale rebalance %s -e %s=N, up to its %d tasks)", b.Component, name, b.Component, b.Tasks)})
			return // its backpressure holds everything else
		}
		if b.Load() < saturated {
			continue
		}
		if sk, ok := d.skewOf(b); ok {
			d.skewed(b, sk)
			continue
		}
		ev := []Metric{
			{"capacity (busiest executor, last 10-20 s)", fmt.Sprintf("%.2f", b.Capacity)},
			{"busy over the span (executed × execute latency / executors)", fmt.Sprintf("%.2f", b.Busy)},
			{"executed", fmt.Sprintf("%.1f/s", b.Executed)},
			{"execute latency", dur(b.ExecuteLatency)},
			{"executors / tasks", fmt.Sprintf("%d / %d", b.Executors, b.Tasks)},
		}
		if b.QueueCapacity > 0 {
			ev = append(ev, Metric{"input queue", fmt.Sprintf("%d of %d", b.QueueDepth, b.QueueCapacity)})
		}
		for _, s := range d.spouts() {
			if s.MaxPending > 0 {
				ev = append(ev, Metric{"trees in flight of " + s.Component, fmt.Sprintf("%d of max %d (held by %s's backpressure, not by the cap)", s.Pending, s.MaxPending, b.Component)})
			}
		}
		want := int32(math.Ceil(float64(max(b.Executors, 1)) * b.Load() / 0.6))
		want = max(want, b.Executors+1)
		var fix string
		switch {
		case b.Tasks > b.Executors:
			want = min(want, b.Tasks)
			fix = fmt.Sprintf("give %s more executors: gale rebalance %s -e %s=%d at least (it has %d tasks; at capacity 1 it may be asked for more); or make its Execute faster", b.Component, name, b.Component, want, b.Tasks)
		default:
			fix = fmt.Sprintf("its %d executors already run all its %d tasks: resubmit it with a higher parallelism hint (about %d), or make its Execute faster", b.Executors, b.Tasks, want)
		}
		d.add(Finding{Kind: KindBoltSaturated, Severity: Warning, Component: b.Component,
			Cause: fmt.Sprintf("bolt %s is saturated: its busiest executor spends %.0f%% of its time in Execute (%s a tuple), so it sets the topology's pace",
				b.Component, 100*min(b.Load(), 1), dur(b.ExecuteLatency)),
			Evidence: ev, Fix: fix})
	}
	if haveBolt && busiest.Load() >= idle {
		return // a bolt is busy: a cap pinned is its backpressure, not the limit
	}
	for _, s := range d.spouts() {
		if s.MaxPending <= 0 {
			continue
		}
		pinned, seen := d.pinned(s.Component)
		if seen == 0 || float64(pinned) < pinnedShare*float64(seen) {
			if s.ThrottledShare < 0.5 {
				continue
			}
		}
		perTask := s.MaxPending / int64(max(s.Tasks, 1))
		ev := []Metric{
			{"trees in flight / max (topology.max.spout.pending × tasks)", fmt.Sprintf("%d / %d (%d per task × %d tasks)", s.Pending, s.MaxPending, perTask, s.Tasks)},
			{"samples at the cap", fmt.Sprintf("%d of %d", pinned, seen)},
			{"acked", fmt.Sprintf("%.1f/s", s.Acked)},
		}
		if s.ThrottledShare > 0 {
			ev = append(ev, Metric{"time held at the cap", fmt.Sprintf("%.0f%%", 100*min(s.ThrottledShare, 1))})
		}
		if s.CompleteP50 > 0 {
			ev = append(ev, Metric{"complete latency p50", dur(s.CompleteP50)})
		}
		// More trees in flight keep the bolts busier in proportion,
		// until one is the limit: aim the busiest bolt's executors, on
		// average, at 70% busy (its busiest executor, with one tree in
		// flight, is busier than the average it would settle at).
		headroom, target := 10.0, ""
		if haveBolt {
			ev = append(ev, Metric{"busiest bolt", fmt.Sprintf("%s at capacity %.2f", busiest.Component, busiest.Load())})
			avg := busiest.Busy
			if avg <= 0 {
				avg = busiest.Load()
			}
			if avg > 0 {
				headroom = min(max(0.7/avg, 2), 100)
				target = fmt.Sprintf(" per task, where %s's executors would be about 70%% busy", busiest.Component)
			}
		}
		want := max(int64(math.Ceil(float64(perTask)*headroom)), perTask+1)
		d.add(Finding{Kind: KindSpoutThrottled, Severity: Warning, Component: s.Component,
			Cause: fmt.Sprintf("spout %s is throttled by topology.max.spout.pending: its trees in flight sit at the cap (%d per task) while the bolts idle, so it waits for acks rather than for work to be done",
				s.Component, perTask),
			Evidence: ev,
			Fix: fmt.Sprintf("raise topology.max.spout.pending to about %d%s (%s -c %s=%d), or let the auto-tuner pick it (-c %s=true)",
				want, target, d.resubmit(), gale.TopologyMaxSpoutPending, want, gale.TopologyMaxSpoutPendingAutotune)})
	}
}

// pinned counts the samples in which spout's trees in flight were at its
// cap (at 90% of it or above, and at least one tree), of those that
// report a cap.
func (d *diagnosis) pinned(spout string) (pinned, seen int) {
	for _, s := range d.window {
		for _, c := range s.Info.GetComponents() {
			if c.GetComponent() != spout || c.GetMaxPending() <= 0 {
				continue
			}
			seen++
			if c.GetPending() >= max(int64(0.9*float64(c.GetMaxPending())), 1) {
				pinned++
			}
		}
	}
	return pinned, seen
}

// failedByBolt reports trees failed by bolts, with the bolt that failed
// them and its last error.
func (d *diagnosis) failedByBolt(storm bool) {
	var n, finished int64
	var spout string
	for _, s := range d.spouts() {
		n += s.DeltaFailedByBolt
		finished += s.DeltaAcked + s.DeltaFailed
		if s.DeltaFailedByBolt > 0 && spout == "" {
			spout = s.Component
		}
	}
	if n == 0 {
		return
	}
	ev := []Metric{{"trees failed by a bolt", fmt.Sprintf("%d in %.0f s (%.0f%% of the trees finished)", n, d.span.Seconds, 100*float64(n)/float64(max(finished, 1)))}}
	var failing []string
	for _, b := range d.bolts() {
		if b.Failed > 0 {
			failing = append(failing, b.Component)
			ev = append(ev, Metric{"failed by " + b.Component, fmt.Sprintf("%.1f/s", b.Failed)})
			if e := d.lastError(b); e != "" {
				ev = append(ev, Metric{"last error of " + b.Component, e})
			}
		}
	}
	who := "a bolt"
	comp := spout
	if len(failing) > 0 {
		who = "bolt " + strings.Join(failing, ", ")
		comp = failing[0]
	}
	cause := fmt.Sprintf("%s fails trees (Fail, or a panic in Execute): they are replayed or lost, as the spout decides", who)
	if storm {
		cause += "; with the timeouts above, fix those first"
	}
	d.add(Finding{Kind: KindFailedByBolt, Severity: Warning, Component: comp, Cause: cause, Evidence: ev,
		Fix: "read the bolt's errors (gale ui's component page, the worker's log) and fix the input or the code that fails it"})
}

// lastError is the component's most recent error: the topology's sum's,
// else any worker's.
func (d *diagnosis) lastError(c Component) string {
	if c.LastError != "" {
		return c.LastError
	}
	var last *nimbuspb.ComponentError
	for _, w := range d.last().Info.GetWorkers() {
		for _, wc := range w.GetComponents() {
			if wc.GetComponent() != c.Component {
				continue
			}
			for _, e := range wc.GetErrors() {
				if last == nil || e.GetTimeUnixMs() >= last.GetTimeUnixMs() {
					last = e
				}
			}
		}
	}
	return last.GetError()
}

// noTraffic notes an active topology whose spouts emitted nothing.
func (d *diagnosis) noTraffic() {
	var emitted, pending float64
	for _, s := range d.spouts() {
		emitted += s.Emitted
		pending += float64(s.Pending)
	}
	if len(d.spouts()) == 0 || emitted > 0 || len(d.report.Findings) > 0 {
		return
	}
	d.add(Finding{Kind: KindNoTraffic, Severity: Info,
		Cause:    fmt.Sprintf("the spouts emitted nothing in %.0f s: their source has nothing to give, or NextTuple does not emit", d.span.Seconds),
		Evidence: []Metric{{"emitted", "0/s"}, {"trees in flight", fmt.Sprintf("%.0f", pending)}},
		Fix:      "nothing to change if the source is empty; otherwise check the spout's source"})
}

// slotKey names a worker's slot across samples.
func slotKey(w *nimbuspb.WorkerReport) string {
	return w.GetSupervisor() + "|" + w.GetHost() + ":" + strconv.Itoa(int(w.GetPort()))
}

// restarted says whether the worker in b's report is another process
// than the one a reported in the same slot: another pid, a later start,
// more restarts, or counters that went down.
func restarted(a, b *nimbuspb.WorkerReport) bool {
	return (b.GetPid() != 0 && a.GetPid() != 0 && b.GetPid() != a.GetPid()) ||
		(a.GetStartedUnixMs() != 0 && b.GetStartedUnixMs() > a.GetStartedUnixMs()) ||
		b.GetRestarts() > a.GetRestarts() ||
		b.GetEmitted() < a.GetEmitted()
}

// restartedBetween says whether a worker of b started again since a.
func restartedBetween(a, b Sample) bool {
	before := make(map[string]*nimbuspb.WorkerReport)
	for _, w := range a.Info.GetWorkers() {
		before[slotKey(w)] = w
	}
	for _, w := range b.Info.GetWorkers() {
		if p := before[slotKey(w)]; p != nil && restarted(p, w) {
			return true
		}
	}
	return false
}

// restarts checks step 4: workers started again in the same slot (a new
// pid, a later start time, the restarts counter, counters that went
// down) or not running in some samples.
func (d *diagnosis) restarts() {
	type slot struct {
		last      *nimbuspb.WorkerReport // the latest report with a process
		restarts  int32
		state     string
		reason    string
		host      string
		port      int32
		changes   int
		notValid  int
		lastState string
	}
	bySlot := make(map[string]*slot)
	var order []string
	for _, s := range d.samples {
		for _, w := range s.Info.GetWorkers() {
			key := slotKey(w)
			p := bySlot[key]
			if p == nil {
				p = &slot{host: w.GetHost(), port: w.GetPort()}
				bySlot[key] = p
				order = append(order, key)
			} else if restarted(p.last, w) {
				p.changes++
			}
			p.restarts = max(p.restarts, w.GetRestarts())
			if w.GetPid() != 0 || p.last == nil {
				p.last = w
			}
			// A worker that has not started yet is not restarting; one
			// that ran and stopped, or timed out or exited, is.
			if st := w.GetState(); st == "timed-out" || st == "exited" || (st != "valid" && p.lastState == "valid") {
				p.notValid++
				p.state, p.reason = st, w.GetReason()
			}
			p.lastState = w.GetState()
		}
	}
	var ev []Metric
	restarted := 0
	for _, key := range order {
		p := bySlot[key]
		if p.changes == 0 && p.notValid == 0 {
			continue
		}
		restarted++
		v := "started again once while sampled"
		if p.changes != 1 {
			v = fmt.Sprintf("started again %d times while sampled", p.changes)
		}
		if p.restarts > 0 {
			v += fmt.Sprintf(", %d restarts in all", p.restarts)
		}
		if p.notValid > 0 {
			v += fmt.Sprintf("; %s in %d of %d samples", p.state, p.notValid, len(d.samples))
			if p.reason != "" {
				v += " (" + p.reason + ")"
			}
		}
		ev = append(ev, Metric{fmt.Sprintf("worker %s:%d", p.host, p.port), v})
	}
	if restarted == 0 {
		return
	}
	d.add(Finding{Kind: KindWorkersRestarting, Severity: Warning,
		Cause:    fmt.Sprintf("%d worker(s) started again or stopped heartbeating while sampled: each restart replays its trees in flight and empties its counters", restarted),
		Evidence: ev,
		Fix: fmt.Sprintf("read the worker's log for why it exits (a panic, memory); if it is killed for missed heartbeats, check %s against %s and the machine's load",
			config.SupervisorWorkerTimeoutSecs, config.WorkerHeartbeatFrequencySecs)})
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func round(f float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(f*p) / p
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }

// dur prints a latency with three significant digits or so.
func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

// Duration prints a latency as the report does.
func Duration(d time.Duration) string { return dur(d) }
