package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/metrics/prom"
	"github.com/gale-stream/gale/internal/metrics/prom/cluster"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// Nimbus is the part of the nimbus API the UI calls: the reads of its
// /metrics (List, Get and ClusterInfo) and the mutations.
// nimbuspb.NimbusClient has it. It must be safe for concurrent use.
type Nimbus interface {
	cluster.Nimbus
	Kill(ctx context.Context, in *nimbuspb.KillRequest, opts ...grpc.CallOption) (*nimbuspb.KillResponse, error)
	Activate(ctx context.Context, in *nimbuspb.ActivateRequest, opts ...grpc.CallOption) (*nimbuspb.ActivateResponse, error)
	Deactivate(ctx context.Context, in *nimbuspb.DeactivateRequest, opts ...grpc.CallOption) (*nimbuspb.DeactivateResponse, error)
	Rebalance(ctx context.Context, in *nimbuspb.RebalanceRequest, opts ...grpc.CallOption) (*nimbuspb.RebalanceResponse, error)
}

// Config is what a Handler needs.
type Config struct {
	// Nimbus answers every request. Required.
	Nimbus Nimbus
	// Logger receives the errors of failed requests at debug level; nil
	// discards them.
	Logger *slog.Logger
}

// Handler serves /api/v1/..., /metrics and the web UI at /. Safe for
// concurrent use.
type Handler struct {
	nimbus Nimbus
	log    *slog.Logger
	mux    *http.ServeMux
	rates  *rateBook // the topology pages' live rates (rates.go)
}

// New returns the UI's handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Nimbus == nil {
		return nil, errors.New("ui: Config.Nimbus is required")
	}
	h := &Handler{nimbus: cfg.Nimbus, log: cfg.Logger, mux: http.NewServeMux(), rates: newRateBook()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.mux.HandleFunc("GET /api/v1/cluster/summary", h.clusterSummary)
	h.mux.HandleFunc("GET /api/v1/supervisor/summary", h.supervisorSummary)
	h.mux.HandleFunc("GET /api/v1/nimbus/summary", h.nimbusSummary)
	h.mux.HandleFunc("GET /api/v1/topology/summary", h.topologySummary)
	h.mux.HandleFunc("GET /api/v1/topology/{id}", h.topology)
	h.mux.HandleFunc("GET /api/v1/topology/{id}/component/{component}", h.component)
	h.mux.HandleFunc("GET /api/v1/topology/{id}/visualization", h.visualization)
	h.mux.HandleFunc("POST /api/v1/topology/{id}/activate", h.activate)
	h.mux.HandleFunc("POST /api/v1/topology/{id}/deactivate", h.deactivate)
	h.mux.HandleFunc("POST /api/v1/topology/{id}/rebalance/{wait}", h.rebalance)
	h.mux.HandleFunc("POST /api/v1/topology/{id}/kill/{wait}", h.kill)
	h.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such API path %s %s: see Storm's STORM-UI-REST-API.md for the paths under /api/v1", r.Method, r.URL.Path))
	})
	h.mux.Handle("GET /metrics", prom.Handler(cluster.NewCollector(h.nimbus)))
	h.mux.HandleFunc("GET /api/v1/metrics/targets", h.metricsTargets) // targets.go
	h.mux.Handle("/", staticHandler())
	return h, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if guard(w, r) { // guard.go: other web sites are kept out
		h.mux.ServeHTTP(w, r)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to do
}

// writeError answers Storm's error shape: {"error": the HTTP status,
// "errorMessage": what went wrong}.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": http.StatusText(code), "errorMessage": msg})
}

// fail answers a failed nimbus call with the HTTP status of its gRPC code.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	msg := err.Error()
	if st, ok := status.FromError(err); ok {
		msg = st.Message()
		switch st.Code() {
		case codes.NotFound:
			code = http.StatusNotFound
		case codes.InvalidArgument:
			code = http.StatusBadRequest
		case codes.Unauthenticated:
			code = http.StatusUnauthorized
			msg += " (send the cluster's nimbus.auth.token as the header Authorization: Bearer TOKEN)"
		case codes.PermissionDenied:
			code = http.StatusForbidden
		case codes.AlreadyExists, codes.FailedPrecondition, codes.Aborted:
			code = http.StatusConflict
		case codes.Unavailable, codes.DeadlineExceeded:
			code = http.StatusServiceUnavailable
		case codes.Canceled:
			return // the client went away
		}
	}
	h.log.Debug("ui: request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", msg)
	writeError(w, code, msg)
}

func (h *Handler) clusterSummary(w http.ResponseWriter, r *http.Request) {
	ci, err := h.nimbus.ClusterInfo(r.Context(), &nimbuspb.ClusterInfoRequest{})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	list, err := h.nimbus.List(r.Context(), &nimbuspb.ListRequest{})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	s := clusterTotals(ci, list)
	var uptime int64
	for _, n := range ci.GetNimbuses() {
		if n.GetLeader() {
			uptime = n.GetUptimeSecs()
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"stormVersion":        ci.GetGaleVersion(),
		"galeVersion":         ci.GetGaleVersion(),
		"nimbusUptime":        prettyUptime(uptime),
		"nimbusUptimeSeconds": uptime,
		"supervisors":         len(ci.GetSupervisors()),
		"topologies":          len(list.GetTopologies()),
		"slotsTotal":          s.slotsTotal,
		"slotsUsed":           s.slotsUsed,
		"slotsFree":           s.slotsTotal - s.slotsUsed,
		"executorsTotal":      s.executors,
		"tasksTotal":          s.tasks,
	})
}

// totals are the cluster's sums over its supervisors and topologies.
type totals struct {
	slotsTotal, slotsUsed int
	executors, tasks      int64
}

func clusterTotals(ci *nimbuspb.ClusterInfoResponse, list *nimbuspb.ListResponse) totals {
	var s totals
	s.slotsTotal, s.slotsUsed = cluster.Slots(ci)
	for _, t := range list.GetTopologies() {
		s.executors += int64(t.GetExecutors())
		s.tasks += int64(t.GetTasks())
	}
	return s
}

func (h *Handler) supervisorSummary(w http.ResponseWriter, r *http.Request) {
	ci, err := h.nimbus.ClusterInfo(r.Context(), &nimbuspb.ClusterInfoRequest{})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	sups := []map[string]any{}
	for _, sv := range ci.GetSupervisors() {
		total, used := len(sv.GetPorts()), int(sv.GetSlotsUsed())
		sups = append(sups, map[string]any{
			"id":            sv.GetId(),
			"host":          sv.GetHost(),
			"uptime":        prettyUptime(sv.GetUptimeSecs()),
			"uptimeSeconds": sv.GetUptimeSecs(),
			"slotsTotal":    total,
			"slotsUsed":     used,
			"slotsFree":     total - used,
			"ports":         sv.GetPorts(),
			"goos":          sv.GetGoos(),
			"goarch":        sv.GetGoarch(),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"supervisors": sups})
}

func (h *Handler) nimbusSummary(w http.ResponseWriter, r *http.Request) {
	ci, err := h.nimbus.ClusterInfo(r.Context(), &nimbuspb.ClusterInfoRequest{})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ns := []map[string]any{}
	for _, n := range ci.GetNimbuses() {
		host, port, err := net.SplitHostPort(n.GetAddr())
		if err != nil {
			host = n.GetAddr()
		}
		p, _ := strconv.Atoi(port)
		st := "Not a Leader"
		if n.GetLeader() {
			st = "Leader"
		}
		ns = append(ns, map[string]any{
			"id":                  n.GetId(),
			"host":                host,
			"port":                p,
			"status":              st,
			"nimbusUpTime":        prettyUptime(n.GetUptimeSecs()),
			"nimbusUpTimeSeconds": n.GetUptimeSecs(),
			"version":             ci.GetGaleVersion(),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"nimbuses": ns})
}

// summary is a topology's fields common to topology/summary and
// topology/:id.
func summary(t *nimbuspb.TopologySummary) map[string]any {
	return map[string]any{
		"id":             t.GetId(),
		"encodedId":      t.GetId(),
		"name":           t.GetName(),
		"status":         t.GetStatus(),
		"pendingReason":  t.GetPendingReason(),
		"uptime":         prettyUptime(t.GetUptimeSecs()),
		"uptimeSeconds":  t.GetUptimeSecs(),
		"tasksTotal":     t.GetTasks(),
		"workersTotal":   t.GetWorkers(),
		"workersRunning": t.GetWorkersRunning(),
		"executorsTotal": t.GetExecutors(),
	}
}

func (h *Handler) topologySummary(w http.ResponseWriter, r *http.Request) {
	list, err := h.nimbus.List(r.Context(), &nimbuspb.ListRequest{})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ts := []map[string]any{}
	for _, t := range list.GetTopologies() {
		ts = append(ts, summary(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"topologies": ts})
}

// topology is topology/:id: the spouts' and bolts' counters over the
// window asked for (Storm's window parameter: 600, 10800, 86400 or
// :all-time, the default), the topology's totals over every window.
func (h *Handler) topology(w http.ResponseWriter, r *http.Request) {
	win, err := parseWindow(r.URL.Query().Get("window"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	info, err := h.nimbus.Get(r.Context(), &nimbuspb.GetRequest{Name: r.PathValue("id"), WindowSecs: win.Secs})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	sys := r.URL.Query().Get("sys") == "true"
	page := topologyPage(info, sys)
	rates, measured, running := h.rates.observe(info.GetSummary().GetId(), info.GetWorkers(), time.Now())
	page["liveRates"] = liveRates(info, rates, measured, running) // Gale's: not in Storm's API
	writeJSON(w, http.StatusOK, page)
}

// topologyPage is topology/:id's answer: its window field names the
// window of the spouts' and bolts' counters.
func topologyPage(info *nimbuspb.TopologyInfo, sys bool) map[string]any {
	s := info.GetSummary()
	page := summary(s)
	win := windowOf(info.GetWindowSecs())
	page["window"] = win.Param
	page["windowHint"] = win.Pretty
	lat := latencyMillis(s.GetCompleteLatency())
	page["topologyStats"] = []map[string]any{{
		"window":          metrics.AllTime,
		"windowPretty":    "All time",
		"emitted":         s.GetEmitted(),
		"transferred":     0, // the spouts' sum, set below
		"completeLatency": fmt.Sprintf("%.3f", lat),
		"acked":           s.GetAcked(),
		"failed":          s.GetFailed(),
	}}
	par := info.GetAssignment().GetParallelism()
	stats := map[string]*nimbuspb.ComponentStats{}
	var transferred int64
	for _, cs := range info.GetComponents() {
		stats[cs.GetComponent()] = cs
		if cs.GetKind() == "spout" {
			transferred += cs.GetTransferred()
		}
	}
	page["topologyStats"].([]map[string]any)[0]["transferred"] = transferred
	if ws := topologyStats(info); len(ws) > 0 {
		page["topologyStats"] = ws // windows.go; a nimbus without windows has the all-time one above
	}
	spouts, bolts := []map[string]any{}, []map[string]any{}
	for _, c := range info.GetDefinition().GetComponents() {
		executors := c.GetParallelism()
		if p, ok := par[c.GetId()]; ok {
			executors = p
		}
		cs := stats[c.GetId()] // nil until a worker reported: every count 0
		m := map[string]any{
			"executors":   executors,
			"tasks":       c.GetTasks(),
			"emitted":     cs.GetEmitted(),
			"transferred": cs.GetTransferred(),
			"acked":       cs.GetAcked(),
			"failed":      cs.GetFailed(),
		}
		maps.Copy(m, lastErrorInfo(cs, time.Now()))
		if c.GetSpout() {
			m["spoutId"], m["encodedSpoutId"] = c.GetId(), c.GetId()
			m["completeLatency"] = fmt.Sprintf("%.3f", latencyMillis(cs.GetCompleteLatency()))
			// Gale's split of failed: what Storm's users ask for most.
			m["failedByBolt"], m["timedOut"], m["failedShutdown"] = cs.GetFailedByBolt(), cs.GetTimedOut(), cs.GetFailedShutdown()
			spouts = append(spouts, m)
			continue
		}
		m["boltId"], m["encodedBoltId"] = c.GetId(), c.GetId()
		m["executed"] = cs.GetExecuted()
		m["capacity"] = fmt.Sprintf("%.3f", cs.GetCapacity())
		m["executeLatency"] = meanMillis(cs.GetExecuteSamples(), cs.GetExecuteSampledNanos())
		m["processLatency"] = meanMillis(cs.GetProcessSamples(), cs.GetProcessSampledNanos())
		bolts = append(bolts, m)
	}
	page["spouts"], page["bolts"] = spouts, bolts
	page["workers"] = workers(info)
	// The topology's own config layer: the keys it set, {} for none.
	conf := map[string]any{}
	if err := json.Unmarshal(info.GetConfigJson(), &conf); err != nil || conf == nil {
		conf = map[string]any{}
	}
	page["configuration"] = conf
	// Storm's msgTimeout: the effective topology.message.timeout.secs
	// (the cluster's gale.yaml, the topology's config, the default), as
	// nimbus resolves it; the topology's own where a nimbus does not say.
	if v := info.GetMessageTimeoutSecs(); v > 0 {
		page["msgTimeout"] = v
	} else if v, ok := conf["topology.message.timeout.secs"]; ok {
		page["msgTimeout"] = v
	}
	return page
}

// workers lists the topology's workers as the supervisors report them,
// with the executors its assignment gives each.
func workers(info *nimbuspb.TopologyInfo) []map[string]any {
	a := info.GetAssignment()
	executors := make(map[string]int)
	for _, slot := range a.GetExecutors() {
		if int(slot) < len(a.GetWorkers()) {
			ws := a.GetWorkers()[slot]
			executors[ws.GetSupervisor()+":"+strconv.Itoa(int(ws.GetPort()))]++
		}
	}
	out := []map[string]any{}
	now := time.Now()
	for _, wr := range info.GetWorkers() {
		var uptime int64
		if ms := wr.GetStartedUnixMs(); ms > 0 {
			uptime = int64(now.Sub(time.UnixMilli(ms)).Seconds())
		}
		out = append(out, map[string]any{
			"topologyId":      info.GetSummary().GetId(),
			"topologyName":    info.GetSummary().GetName(),
			"host":            wr.GetHost(),
			"port":            wr.GetPort(),
			"supervisorId":    wr.GetSupervisor(),
			"executorsTotal":  executors[wr.GetSupervisor()+":"+strconv.Itoa(int(wr.GetPort()))],
			"state":           wr.GetState(),
			"reason":          wr.GetReason(),
			"pid":             wr.GetPid(),
			"rssBytes":        wr.GetRssBytes(),
			"heartbeatUnixMs": wr.GetHeartbeatUnixMs(),
			"emitted":         wr.GetEmitted(),
			"acked":           wr.GetAcked(),
			"failed":          wr.GetFailed(),
			"timedOut":        wr.GetTimedOut(),
			"pending":         wr.GetPending(),
			// The worker process itself (WorkerReport 18-27).
			"uptime":        prettyUptime(uptime),
			"uptimeSeconds": uptime,
			"startedUnixMs": wr.GetStartedUnixMs(),
			"restarts":      wr.GetRestarts(),
			"cpuSeconds":    wr.GetCpuSeconds(),
			"heapBytes":     wr.GetHeapBytes(),
			"gcCount":       wr.GetGcCount(),
			"gcPauseNanos":  wr.GetGcPauseNanos(),
			"goroutines":    wr.GetGoroutines(),
			"bytesIn":       wr.GetBytesIn(),
			"bytesOut":      wr.GetBytesOut(),
			"metricsPort":   wr.GetMetricsPort(),
		})
	}
	return out
}

// operation runs a mutation with the caller's Authorization header and
// answers Storm's {"topologyOperation", "topologyId", "status"}.
func (h *Handler) operation(w http.ResponseWriter, r *http.Request, op string, call func(ctx context.Context, name string) error) {
	ctx := r.Context()
	if auth := r.Header.Get("Authorization"); auth != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", auth)
	}
	id := r.PathValue("id")
	if err := call(ctx, id); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"topologyOperation": op, "topologyId": id, "status": "success"})
}

func (h *Handler) activate(w http.ResponseWriter, r *http.Request) {
	h.operation(w, r, "activate", func(ctx context.Context, name string) error {
		_, err := h.nimbus.Activate(ctx, &nimbuspb.ActivateRequest{Name: name})
		return err
	})
}

func (h *Handler) deactivate(w http.ResponseWriter, r *http.Request) {
	h.operation(w, r, "deactivate", func(ctx context.Context, name string) error {
		_, err := h.nimbus.Deactivate(ctx, &nimbuspb.DeactivateRequest{Name: name})
		return err
	})
}

// waitSecs is the {wait} of a kill or rebalance path: seconds ≥ 0.
func waitSecs(w http.ResponseWriter, r *http.Request) (int32, bool) {
	s := r.PathValue("wait")
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the wait time in %s must be a whole number of seconds ≥ 0, got %q", r.URL.Path, s))
		return 0, false
	}
	return int32(n), true
}

func (h *Handler) kill(w http.ResponseWriter, r *http.Request) {
	wait, ok := waitSecs(w, r)
	if !ok {
		return
	}
	h.operation(w, r, "kill", func(ctx context.Context, name string) error {
		_, err := h.nimbus.Kill(ctx, &nimbuspb.KillRequest{Name: name, WaitSecs: wait})
		return err
	})
}

// rebalanceBody is Storm's rebalance request body; it may be empty.
type rebalanceBody struct {
	RebalanceOptions struct {
		NumWorkers int32            `json:"numWorkers"`
		Executors  map[string]int32 `json:"executors"`
	} `json:"rebalanceOptions"`
}

// maxBody bounds a request body the UI reads.
const maxBody = 1 << 20

func (h *Handler) rebalance(w http.ResponseWriter, r *http.Request) {
	wait, ok := waitSecs(w, r)
	if !ok {
		return
	}
	var body rebalanceBody
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &body); err != nil {
			writeError(w, http.StatusBadRequest, `the rebalance body must be JSON like {"rebalanceOptions":{"numWorkers":2,"executors":{"split":4}}}: `+err.Error())
			return
		}
	}
	h.operation(w, r, "rebalance", func(ctx context.Context, name string) error {
		_, err := h.nimbus.Rebalance(ctx, &nimbuspb.RebalanceRequest{
			Name: name, WaitSecs: wait,
			NumWorkers: body.RebalanceOptions.NumWorkers, Executors: body.RebalanceOptions.Executors,
		})
		return err
	})
}

// prettyUptime is Storm's form of a duration: "1d 2h 3m 4s", without the
// leading units that are zero.
func prettyUptime(secs int64) string {
	if secs < 0 {
		secs = 0
	}
	d, h, m, s := secs/86400, secs/3600%24, secs/60%60, secs%60
	switch {
	case d > 0:
		return fmt.Sprintf("%dd %dh %dm %ds", d, h, m, s)
	case h > 0:
		return fmt.Sprintf("%dh %dm %ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}
