package coordination

import (
	"encoding/json"
	"fmt"
	wordbench "github.com/gale-stream/gale/internal/bench"
	"io"
	"runtime"
	"text/tabwriter"
)

// Report is what Run measured, printed as JSON with --json. A phase that
// did not run (an error, or the run was cut short) leaves its fields 0;
// Error says what went wrong.
type Report struct {
	Error string `json:"error,omitempty"`

	Supervisors int `json:"supervisors"`
	WorkersPer  int `json:"workers_per"`
	// Slots is Supervisors × WorkersPer; Workers the workers assigned,
	// which the reports summarise: TopologyWorkers plus FillerWorkers.
	Slots           int `json:"slots"`
	Workers         int `json:"workers"`
	TopologyWorkers int `json:"topology_workers"`
	FillerWorkers   int `json:"filler_workers"`
	// The settings of the run, in seconds.
	SupervisorTimeoutS float64 `json:"supervisor_timeout_s"`
	ReportEveryS       float64 `json:"report_every_s"`
	Conns              int     `json:"conns"`
	EtcdClients        int     `json:"etcd_clients"`

	// JoinS is from the first lease grant until every supervisor's
	// membership was in etcd; JoinSeenS until nimbus's ClusterInfo listed
	// them all.
	JoinS     float64 `json:"join_s"`
	JoinSeenS float64 `json:"join_seen_s"`
	// JoinRaftEntries is how far the raft index moved while they joined
	// (a lease grant and a put each).
	JoinRaftEntries uint64 `json:"join_raft_entries"`

	// ScheduleS is from the start of the topology's Submit until its
	// assignment, all of its workers placed, was read from etcd; SubmitS
	// is how long Submit took (nimbus assigns before it answers), and
	// ScheduleAfterSubmitS how long after Submit returned the assignment
	// was read (0 when it was there already).
	ScheduleS            float64 `json:"schedule_s"`
	SubmitS              float64 `json:"submit_s"`
	ScheduleAfterSubmitS float64 `json:"schedule_after_submit_s"`
	// FillerScheduleS is the same as ScheduleS for the filler topology.
	FillerScheduleS float64 `json:"filler_schedule_s"`

	// SteadyS is how long the steady state was measured.
	SteadyS        float64 `json:"steady_s"`
	RaftIndexStart uint64  `json:"raft_index_start"`
	RaftIndexEnd   uint64  `json:"raft_index_end"`
	RevisionStart  int64   `json:"revision_start"`
	RevisionEnd    int64   `json:"revision_end"`
	// EtcdWritesPerS is the raft entries per second in the steady state.
	EtcdWritesPerS float64 `json:"etcd_writes_per_s"`
	// NimbusCPUSPerS is the nimbus process's CPU seconds (user + system,
	// /proc/PID/stat) per second of steady state; NimbusCPUError says why
	// the CPU was not measured (not Linux).
	NimbusCPUSPerS float64 `json:"nimbus_cpu_s_per_s"`
	NimbusCPUError string  `json:"nimbus_cpu_error,omitempty"`
	// EtcdCPUSPerS and BenchCPUSPerS are the same for the etcd process
	// and for this one, which simulates the supervisors.
	EtcdCPUSPerS  float64 `json:"etcd_cpu_s_per_s"`
	BenchCPUSPerS float64 `json:"bench_cpu_s_per_s"`
	// ReportsPerS counts the reports nimbus answered without error;
	// ReportFailures those it refused or that failed, and ReportError the
	// first such error.
	ReportsPerS    float64 `json:"reports_per_s"`
	ReportFailures int64   `json:"report_failures"`
	ReportError    string  `json:"report_error,omitempty"`
	// WorkerSummariesPerS is the worker summaries the reports carried.
	WorkerSummariesPerS float64 `json:"worker_summaries_per_s"`
	// RPCProtoBytesPerS is the reports' protobuf size (proto.Size of
	// each request) per second. RPCBytesPerS is what the supervisors
	// wrote to their report connections' TCP sockets per second: the
	// requests with gRPC's and HTTP/2's framing, headers and control
	// frames; RPCBytesInPerS what they read back (responses, window
	// updates, pings).
	RPCProtoBytesPerS float64 `json:"rpc_proto_bytes_per_s"`
	RPCBytesPerS      float64 `json:"rpc_bytes_per_s"`
	RPCBytesInPerS    float64 `json:"rpc_bytes_in_per_s"`

	// DetectS is from the moment the killed supervisor stopped its
	// keep-alives and reports until nimbus's assignment moving its
	// workers was read from etcd. DetectTTLS is the part until its
	// membership was gone (the lease expired: at most the supervisor
	// timeout after its last keep-alive), DetectNimbusS the rest
	// (nimbus's reaction and the write).
	DetectS       float64 `json:"detect_s"`
	DetectTTLS    float64 `json:"detect_ttl_s"`
	DetectNimbusS float64 `json:"detect_nimbus_s"`
	// Killed is the supervisor killed; KilledWorkers the topology's
	// workers it ran, MovedWorkers how many of the topology's workers the
	// new assignment put elsewhere (only the killed ones should move).
	Killed        string `json:"killed,omitempty"`
	KilledWorkers int    `json:"killed_workers"`
	MovedWorkers  int    `json:"moved_workers"`

	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
}

func newReport(c Config) *Report {
	return &Report{
		Supervisors: c.Supervisors, WorkersPer: c.WorkersPer, Slots: c.Supervisors * c.WorkersPer,
		TopologyWorkers:    c.TopologyWorkers,
		SupervisorTimeoutS: c.SupervisorTimeout.Seconds(), ReportEveryS: c.ReportEvery.Seconds(),
		Conns: c.conns(), EtcdClients: min(c.EtcdClients, c.Supervisors),
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
}

// WriteJSON writes r as one indented JSON document followed by a newline.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteTable writes r as a human-readable table.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	if r.Error != "" {
		row("error", "%s", r.Error)
	}
	row("cluster", "%s supervisors × %d slots = %s slots; %s workers assigned (topology %s, filler %s)",
		wordbench.Commas(int64(r.Supervisors)), r.WorkersPer, wordbench.Commas(int64(r.Slots)), wordbench.Commas(int64(r.Workers)),
		wordbench.Commas(int64(r.TopologyWorkers)), wordbench.Commas(int64(r.FillerWorkers)))
	row("settings", "lease TTL %gs, a report every %gs, %d report connections, %d etcd clients",
		r.SupervisorTimeoutS, r.ReportEveryS, r.Conns, r.EtcdClients)
	row("join", "%.2fs in etcd, %.2fs until nimbus listed them all (%s raft entries)", r.JoinS, r.JoinSeenS, wordbench.Commas(int64(r.JoinRaftEntries)))
	row("schedule", "%.3fs from submit to the assignment of %s workers in etcd (submit took %.3fs; +%.3fs after it returned)",
		r.ScheduleS, wordbench.Commas(int64(r.TopologyWorkers)), r.SubmitS, r.ScheduleAfterSubmitS)
	if r.FillerWorkers > 0 {
		row("", "%.3fs for the filler's %s workers", r.FillerScheduleS, wordbench.Commas(int64(r.FillerWorkers)))
	}
	row("steady state", "%.1fs", r.SteadyS)
	row("etcd", "raft index %d → %d, revision %d → %d: %.2f writes/s",
		r.RaftIndexStart, r.RaftIndexEnd, r.RevisionStart, r.RevisionEnd, r.EtcdWritesPerS)
	if r.NimbusCPUError != "" {
		row("cpu", "not measured: %s", r.NimbusCPUError)
	} else {
		row("cpu", "nimbus %.4f s/s, etcd %.4f s/s, the simulated supervisors %.4f s/s", r.NimbusCPUSPerS, r.EtcdCPUSPerS, r.BenchCPUSPerS)
	}
	row("reports", "%.1f/s carrying %s worker summaries/s; %d failed", r.ReportsPerS, wordbench.Commas(int64(r.WorkerSummariesPerS)), r.ReportFailures)
	if r.ReportError != "" {
		row("", "first failure: %s", r.ReportError)
	}
	row("rpc bytes", "%s/s protobuf, %s/s on the wire out (gRPC + HTTP/2 framing), %s/s in",
		wordbench.Commas(int64(r.RPCProtoBytesPerS)), wordbench.Commas(int64(r.RPCBytesPerS)), wordbench.Commas(int64(r.RPCBytesInPerS)))
	row("detection", "%.2fs from %s's death to its workers' reassignment: %.2fs until its lease expired + %.2fs for nimbus",
		r.DetectS, orNone(r.Killed), r.DetectTTLS, r.DetectNimbusS)
	row("", "it ran %d of the topology's workers; %d moved", r.KilledWorkers, r.MovedWorkers)
	row("go", "%s, GOMAXPROCS %d", r.GoVersion, r.GOMAXPROCS)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
