package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/metrics/components"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// component is topology/:id/component/:component: the component's
// executors and tasks, its counters (boltStats or spoutSummary), its
// inputs and output streams from the definition with their counters,
// its executors (executorStats) and its recent errors (componentErrors,
// oldest first), with Storm's field names.
func (h *Handler) component(w http.ResponseWriter, r *http.Request) {
	secs, ok := requestedWindow(w, r)
	if !ok {
		return
	}
	info, err := h.nimbus.Get(r.Context(), &nimbuspb.GetRequest{Name: r.PathValue("id"), WindowSecs: secs})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	id := r.PathValue("component")
	var c *nimbuspb.Component
	var ids []string
	for _, x := range info.GetDefinition().GetComponents() {
		ids = append(ids, x.GetId())
		if x.GetId() == id {
			c = x
		}
	}
	if c == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("topology %s has no component %q: it has %s", info.GetSummary().GetId(), id, strings.Join(ids, ", ")))
		return
	}
	writeJSON(w, http.StatusOK, componentPage(info, c, time.Now()))
}

// componentPage is component's answer for c, a component of info's
// definition; now dates the errors' errorLapsedSecs.
func componentPage(info *nimbuspb.TopologyInfo, c *nimbuspb.Component, now time.Time) map[string]any {
	id := c.GetId()
	var cs *nimbuspb.ComponentStats // nil until a worker reported: every count 0
	for _, x := range info.GetComponents() {
		if x.GetComponent() == id {
			cs = x
		}
	}
	executors := c.GetParallelism()
	if p, ok := info.GetAssignment().GetParallelism()[id]; ok {
		executors = p
	}
	kind := "bolt"
	if c.GetSpout() {
		kind = "spout"
	}
	window, hint := windowName(info.GetWindowSecs())
	page := map[string]any{
		"id":                id,
		"encodedId":         id,
		"name":              info.GetSummary().GetName(),
		"topologyId":        info.GetSummary().GetId(),
		"encodedTopologyId": info.GetSummary().GetId(),
		"topologyStatus":    info.GetSummary().GetStatus(),
		"componentType":     kind,
		"executors":         executors,
		"tasks":             c.GetTasks(),
		"window":            window,
		"windowHint":        hint,
		"inputStats":        inputStats(c, cs),
		"outputStats":       outputStats(c, cs),
		"executorStats":     executorStats(info, cs),
		"componentErrors":   componentErrors(cs, now),
	}
	stats := map[string]any{
		"window": window, "windowPretty": hint,
		"executors": executors, "tasks": c.GetTasks(),
		"emitted": cs.GetEmitted(), "transferred": cs.GetTransferred(),
		"acked": cs.GetAcked(), "failed": cs.GetFailed(),
	}
	if c.GetSpout() {
		stats["completeLatency"] = fmt.Sprintf("%.3f", latencyMillis(cs.GetCompleteLatency()))
		stats["failedByBolt"], stats["timedOut"], stats["failedShutdown"] = cs.GetFailedByBolt(), cs.GetTimedOut(), cs.GetFailedShutdown()
		stats["pending"], stats["maxPending"] = cs.GetPending(), cs.GetMaxPending()
		stats["lastError"] = lastErrorInfo(cs, now)["lastError"]
		page["spoutSummary"] = []map[string]any{stats}
	} else {
		stats["executed"] = cs.GetExecuted()
		stats["capacity"] = fmt.Sprintf("%.3f", cs.GetCapacity())
		stats["executeLatency"] = meanMillis(cs.GetExecuteSamples(), cs.GetExecuteSampledNanos())
		stats["processLatency"] = meanMillis(cs.GetProcessSamples(), cs.GetProcessSampledNanos())
		page["boltStats"] = []map[string]any{stats}
	}
	stats["queueDepth"], stats["queueCapacity"] = cs.GetQueueDepth(), cs.GetQueueCapacity()
	stats["backpressureSeconds"] = float64(cs.GetBackpressureNanos()) / 1e9
	stats["throttledSeconds"] = float64(cs.GetThrottledNanos()) / 1e9
	stats["retries"], stats["deadLetters"] = cs.GetRetries(), cs.GetDeadLetters()
	return page
}

// requestedWindow is the rolling window the request's window parameter
// names, in seconds: Storm's 600, 10800 or 86400, or 0 for :all-time
// (the default). Any other value answers 400.
func requestedWindow(w http.ResponseWriter, r *http.Request) (int64, bool) {
	win, err := parseWindow(r.URL.Query().Get("window"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return 0, false
	}
	return win.Secs, true
}

// windowName is Storm's name of the rolling window of secs seconds, and
// its pretty form: "600" and "10m 0s", or ":all-time" and "All time".
func windowName(secs int64) (window, pretty string) {
	win := windowOf(secs)
	return win.Param, win.Pretty
}

// meanMillis is the mean of n sampled durations totalling nanos, in
// milliseconds as Storm prints them; "0.000" for none.
func meanMillis(n, nanos int64) string {
	return fmt.Sprintf("%.3f", meanMillisFloat(n, nanos))
}

// meanMillisFloat is that mean as a number; 0 for none.
func meanMillisFloat(n, nanos int64) float64 { return metrics.MeanNanos(n, nanos) / 1e6 }

// latencyMillis is the mean of h, in milliseconds, taking each tree at
// its bucket's middle (within 1/16 of its latency); 0 when h is empty.
func latencyMillis(h *nimbuspb.LatencyHistogram) float64 {
	l, _ := components.LatencyOf(h) // nimbus sums checked histograms
	return l.MeanMillis()
}

// findStream is the counters of stream from component in ss; nil (every
// count 0) if there are none.
func findStream(ss []*nimbuspb.StreamStats, component, stream string) *nimbuspb.StreamStats {
	for _, s := range ss {
		if s.GetComponent() == component && s.GetStream() == stream {
			return s
		}
	}
	return nil
}

// inputStats lists a bolt's inputs as its definition declares them, with
// their counters (0 until counted).
func inputStats(c *nimbuspb.Component, cs *nimbuspb.ComponentStats) []map[string]any {
	out := []map[string]any{}
	for _, in := range c.GetInputs() {
		s := findStream(cs.GetInputs(), in.GetComponent(), in.GetStream())
		out = append(out, map[string]any{
			"component": in.GetComponent(), "encodedComponentId": in.GetComponent(), "stream": in.GetStream(),
			"grouping": in.GetGrouping(), "groupingFields": nonNil(in.GetFields()),
			"executed": s.GetExecuted(), "acked": s.GetAcked(), "failed": s.GetFailed(),
			"executeLatency": meanMillis(s.GetExecuteSamples(), s.GetExecuteSampledNanos()),
			"processLatency": meanMillis(s.GetProcessSamples(), s.GetProcessSampledNanos()),
		})
	}
	return out
}

// outputStats lists the component's declared streams with their counters.
// A spout's carry Storm's completeLatency, the spout's.
func outputStats(c *nimbuspb.Component, cs *nimbuspb.ComponentStats) []map[string]any {
	out := []map[string]any{}
	for _, st := range c.GetStreams() {
		var s *nimbuspb.StreamStats
		for _, x := range cs.GetOutputs() {
			if x.GetStream() == st {
				s = x
			}
		}
		m := map[string]any{"stream": st, "emitted": s.GetEmitted(), "transferred": s.GetTransferred()}
		if c.GetSpout() {
			m["acked"], m["failed"] = s.GetAcked(), s.GetFailed()
			m["completeLatency"] = fmt.Sprintf("%.3f", latencyMillis(cs.GetCompleteLatency()))
		}
		out = append(out, m)
	}
	return out
}

// executorStats lists the component's executors, Storm's id "[first-last]"
// naming each by its tasks, with the uptime of the worker it runs in.
func executorStats(info *nimbuspb.TopologyInfo, cs *nimbuspb.ComponentStats) []map[string]any {
	started := map[string]int64{}
	for _, wr := range info.GetWorkers() {
		started[wr.GetHost()+":"+strconv.Itoa(int(wr.GetPort()))] = wr.GetStartedUnixMs()
	}
	now := time.Now().UnixMilli()
	out := []map[string]any{}
	for _, e := range cs.GetExecutors() {
		var up int64
		if ms := started[e.GetHost()+":"+strconv.Itoa(int(e.GetPort()))]; ms > 0 && now > ms {
			up = (now - ms) / 1000
		}
		id := fmt.Sprintf("[%d-%d]", e.GetFirstTask(), e.GetLastTask())
		m := map[string]any{
			"id": id, "encodedId": id, "uptime": prettyUptime(up), "uptimeSeconds": up,
			"host": e.GetHost(), "port": e.GetPort(),
			"emitted": e.GetEmitted(), "transferred": e.GetTransferred(), "acked": e.GetAcked(), "failed": e.GetFailed(),
			"workerLogLink": "",
		}
		if cs.GetKind() != "spout" {
			m["executed"] = e.GetExecuted()
			m["capacity"] = fmt.Sprintf("%.3f", e.GetCapacity())
			m["executeLatency"] = meanMillis(e.GetExecuteSamples(), e.GetExecuteSampledNanos())
			m["processLatency"] = meanMillis(e.GetProcessSamples(), e.GetProcessSampledNanos())
			m["queueDepth"] = e.GetQueueDepth()
		}
		out = append(out, m)
	}
	return out
}

// componentErrors lists the component's recent errors, oldest first, in
// Storm's shape (errorTime in Unix seconds), with the task that reported
// each (errorTask) and its time in milliseconds (errorTimeUnixMs).
// Gale has no log viewer: errorWorkerLogLink is empty.
func componentErrors(cs *nimbuspb.ComponentStats, now time.Time) []map[string]any {
	out := []map[string]any{}
	for _, e := range cs.GetErrors() {
		m := errorInfo(e, now)
		m["error"] = e.GetError()
		out = append(out, m)
	}
	return out
}

func errorInfo(e *nimbuspb.ComponentError, now time.Time) map[string]any {
	lapsed := (now.UnixMilli() - e.GetTimeUnixMs()) / 1000
	return map[string]any{
		"errorTime":          e.GetTimeUnixMs() / 1000,
		"errorTimeUnixMs":    e.GetTimeUnixMs(),
		"errorLapsedSecs":    max(lapsed, 0),
		"errorHost":          e.GetHost(),
		"errorPort":          e.GetPort(),
		"errorTask":          e.GetTask(),
		"errorWorkerLogLink": "",
	}
}

// maxLastError is how much of an error topology/:id's lastError shows,
// as Storm truncates it.
const maxLastError = 200

// lastErrorInfo is the most recent of the component's errors as
// topology/:id's spouts and bolts show it: lastError (its first 200
// characters, "" for none), errorHost, errorPort, errorTime,
// errorLapsedSecs (null for none), errorTask and errorWorkerLogLink.
func lastErrorInfo(cs *nimbuspb.ComponentStats, now time.Time) map[string]any {
	errs := cs.GetErrors()
	if len(errs) == 0 {
		return map[string]any{"lastError": "", "errorHost": "", "errorPort": nil, "errorTime": nil,
			"errorLapsedSecs": nil, "errorTask": nil, "errorWorkerLogLink": ""}
	}
	e := errs[len(errs)-1]
	m := errorInfo(e, now)
	msg := e.GetError()
	if r := []rune(msg); len(r) > maxLastError {
		msg = string(r[:maxLastError])
	}
	m["lastError"] = msg
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// visualization is topology/:id/visualization, in the shape of Storm's
// getVisualizationData: an object keyed by component id, each with its
// ":type" (spout or bolt), ":capacity" (a bolt's; 0 for a spout),
// ":latency" (a spout's complete latency, a bolt's process latency, in
// ms), ":transferred", ":stats" (one per executor: ":host", ":port",
// ":uptime_secs" and ":transferred" {window: {stream: count}}, null where
// the executor's count is not split by stream: its component declares
// several), ":link" to the component's page, and ":inputs" (":component",
// ":stream", ":sani-stream", ":grouping" by Storm's name). Gale adds
// ":fields" (a fields grouping's) and the input's ":executed", ":acked"
// and ":failed" to each input, and each component's ":emitted",
// ":acked", ":failed", ":executed" and ":outputs" (per stream: ":stream",
// ":sani-stream", ":emitted", ":transferred"). Gale has no acker bolt
// (each spout task keeps its own trees), so sys=true adds none.
func (h *Handler) visualization(w http.ResponseWriter, r *http.Request) {
	secs, ok := requestedWindow(w, r)
	if !ok {
		return
	}
	info, err := h.nimbus.Get(r.Context(), &nimbuspb.GetRequest{Name: r.PathValue("id"), WindowSecs: secs})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, visualizationData(info, r.URL.Query().Get("sys") == "true"))
}

func visualizationData(info *nimbuspb.TopologyInfo, sys bool) map[string]any {
	stats := map[string]*nimbuspb.ComponentStats{}
	for _, cs := range info.GetComponents() {
		stats[cs.GetComponent()] = cs
	}
	started := map[string]int64{}
	for _, wr := range info.GetWorkers() {
		started[wr.GetHost()+":"+strconv.Itoa(int(wr.GetPort()))] = wr.GetStartedUnixMs()
	}
	now := time.Now().UnixMilli()
	window, _ := windowName(info.GetWindowSecs())
	topoID := info.GetSummary().GetId()
	out := map[string]any{}
	for _, c := range info.GetDefinition().GetComponents() {
		cs := stats[c.GetId()]
		m := map[string]any{
			":type":        "bolt",
			":capacity":    cs.GetCapacity(),
			":latency":     meanMillisFloat(cs.GetProcessSamples(), cs.GetProcessSampledNanos()),
			":transferred": cs.GetTransferred(),
			":emitted":     cs.GetEmitted(),
			":acked":       cs.GetAcked(),
			":failed":      cs.GetFailed(),
			":executed":    cs.GetExecuted(),
			":link":        "/component.html?id=" + url.QueryEscape(c.GetId()) + "&topology_id=" + url.QueryEscape(topoID),
		}
		if c.GetSpout() {
			m[":type"], m[":capacity"] = "spout", 0.0
			m[":latency"] = latencyMillis(cs.GetCompleteLatency())
		}
		execs := []map[string]any{}
		for _, e := range cs.GetExecutors() {
			var up int64
			if ms := started[e.GetHost()+":"+strconv.Itoa(int(e.GetPort()))]; ms > 0 && now > ms {
				up = (now - ms) / 1000
			}
			var tr any // null: not split by stream
			if len(c.GetStreams()) == 1 {
				tr = map[string]any{window: map[string]int64{sanitizeStream(c.GetStreams()[0]): e.GetTransferred()}}
			}
			execs = append(execs, map[string]any{":host": e.GetHost(), ":port": e.GetPort(), ":uptime_secs": up, ":transferred": tr})
		}
		m[":stats"] = execs
		outputs := []map[string]any{}
		for _, st := range c.GetStreams() {
			var s *nimbuspb.StreamStats
			for _, x := range cs.GetOutputs() {
				if x.GetStream() == st {
					s = x
				}
			}
			outputs = append(outputs, map[string]any{":stream": st, ":sani-stream": sanitizeStream(st), ":emitted": s.GetEmitted(), ":transferred": s.GetTransferred()})
		}
		m[":outputs"] = outputs
		inputs := []map[string]any{}
		for _, in := range c.GetInputs() {
			s := findStream(cs.GetInputs(), in.GetComponent(), in.GetStream())
			inputs = append(inputs, map[string]any{
				":component": in.GetComponent(), ":stream": in.GetStream(), ":sani-stream": sanitizeStream(in.GetStream()),
				":grouping": in.GetGrouping(), ":fields": nonNil(in.GetFields()),
				":executed": s.GetExecuted(), ":acked": s.GetAcked(), ":failed": s.GetFailed(),
			})
		}
		m[":inputs"] = inputs
		out[c.GetId()] = m
	}
	return out
}

var notStreamChar = regexp.MustCompile(`[^A-Za-z_\-:.]`)

// sanitizeStream is Storm's sanitized stream name, an id safe in HTML
// and CSS: each character other than a letter, _, -, : and . becomes _,
// and a name that does not start with a letter gets the prefix "_s".
func sanitizeStream(s string) string {
	if s == "" || !isLetter(s[0]) {
		s = `\s` + s
	}
	return notStreamChar.ReplaceAllString(s, "_")
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
