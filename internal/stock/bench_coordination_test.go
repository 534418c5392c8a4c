package stock

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/gale-stream/gale/internal/cli/clitest"
)

// coordinationReport is the part of `gale bench coordination --json` a
// user relies on.
type coordinationReport struct {
	Error               string  `json:"error"`
	Supervisors         int     `json:"supervisors"`
	WorkersPer          int     `json:"workers_per"`
	Slots               int     `json:"slots"`
	Workers             int     `json:"workers"`
	TopologyWorkers     int     `json:"topology_workers"`
	FillerWorkers       int     `json:"filler_workers"`
	JoinS               float64 `json:"join_s"`
	JoinSeenS           float64 `json:"join_seen_s"`
	ScheduleS           float64 `json:"schedule_s"`
	SteadyS             float64 `json:"steady_s"`
	RaftIndexStart      uint64  `json:"raft_index_start"`
	RaftIndexEnd        uint64  `json:"raft_index_end"`
	RevisionStart       int64   `json:"revision_start"`
	RevisionEnd         int64   `json:"revision_end"`
	EtcdWritesPerS      float64 `json:"etcd_writes_per_s"`
	NimbusCPUSPerS      float64 `json:"nimbus_cpu_s_per_s"`
	NimbusCPUError      string  `json:"nimbus_cpu_error"`
	ReportsPerS         float64 `json:"reports_per_s"`
	ReportFailures      int64   `json:"report_failures"`
	ReportError         string  `json:"report_error"`
	WorkerSummariesPerS float64 `json:"worker_summaries_per_s"`
	RPCProtoBytesPerS   float64 `json:"rpc_proto_bytes_per_s"`
	RPCBytesPerS        float64 `json:"rpc_bytes_per_s"`
	DetectS             float64 `json:"detect_s"`
	DetectTTLS          float64 `json:"detect_ttl_s"`
	DetectNimbusS       float64 `json:"detect_nimbus_s"`
	Killed              string  `json:"killed"`
	KilledWorkers       int     `json:"killed_workers"`
	MovedWorkers        int     `json:"moved_workers"`
}

// hasCommand says whether the gale under test has the command name.
func hasCommand(name string) bool {
	opts := testOptions
	for _, c := range opts.Commands {
		if c(&opts).Name() == name {
			return true
		}
	}
	return false
}

// TestBenchCoordinationSmall runs the coordination bench at a small size
// against a real etcd and nimbus (this test binary, run as gale) and
// checks what a user relies on in its document: every supervisor joined,
// the topology and the filler were assigned, nothing wrote to etcd in the
// steady state while the supervisors reported, and the killed
// supervisor's workers, and only they, moved once its lease expired.
//
// The lease TTL is 4 s rather than 2 s so that keep-alives delayed by a
// busy machine do not lose a lease (whose re-grant would be a write).
func TestBenchCoordinationSmall(t *testing.T) {
	for _, c := range []string{"etcd", "nimbus"} {
		if !hasCommand(c) {
			t.Skipf("gale has no %q command: the bench runs the real etcd and nimbus", c)
		}
	}
	t.Setenv(clitest.MainEnv, "1") // the etcd and nimbus processes are this binary, as gale
	code, stdout, _ := runGale(t, "bench", "coordination", "--supervisors", "20", "--workers-per", "2",
		"--topology-workers", "10", "--steady", "3s", "--supervisor-timeout", "4s", "--report-every", "1s", "--json")
	var r coordinationReport
	clitest.DecodeOne(t, stdout, &r)
	if code != exitOK {
		t.Fatalf("exit code %d, want %d; error: %s", code, exitOK, r.Error)
	}
	var keys map[string]json.RawMessage
	clitest.DecodeOne(t, stdout, &keys)
	for _, k := range []string{"supervisors", "workers", "join_s", "schedule_s", "steady_s", "raft_index_start", "raft_index_end",
		"revision_start", "revision_end", "etcd_writes_per_s", "nimbus_cpu_s_per_s", "rpc_bytes_per_s", "reports_per_s",
		"detect_s", "detect_ttl_s"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("the document has no %q", k)
		}
	}
	if r.Supervisors != 20 || r.WorkersPer != 2 || r.Slots != 40 || r.TopologyWorkers != 10 {
		t.Errorf("supervisors, workers_per, slots, topology_workers: got %d, %d, %d, %d, want 20, 2, 40, 10",
			r.Supervisors, r.WorkersPer, r.Slots, r.TopologyWorkers)
	}
	// The filler takes every slot but one supervisor's two.
	if r.FillerWorkers != 28 || r.Workers != 38 {
		t.Errorf("filler_workers, workers: got %d, %d, want 28, 38", r.FillerWorkers, r.Workers)
	}
	if r.JoinS <= 0 || r.JoinSeenS < r.JoinS || r.ScheduleS <= 0 {
		t.Errorf("join_s %v, join_seen_s %v, schedule_s %v: want join_s > 0, join_seen_s ≥ join_s, schedule_s > 0",
			r.JoinS, r.JoinSeenS, r.ScheduleS)
	}
	if r.SteadyS < 3 {
		t.Errorf("steady_s: got %v, want ≥ 3 (--steady 3s)", r.SteadyS)
	}
	if r.RaftIndexStart == 0 || r.RaftIndexEnd != r.RaftIndexStart || r.RevisionEnd != r.RevisionStart || r.EtcdWritesPerS != 0 {
		t.Errorf("steady state: raft index %d → %d, revision %d → %d, %v writes/s; want no write at all",
			r.RaftIndexStart, r.RaftIndexEnd, r.RevisionStart, r.RevisionEnd, r.EtcdWritesPerS)
	}
	if r.ReportsPerS <= 0 || r.ReportFailures != 0 || r.WorkerSummariesPerS <= 0 {
		t.Errorf("reports: %v/s with %v worker summaries/s, %d failed (%s); want some, none failed",
			r.ReportsPerS, r.WorkerSummariesPerS, r.ReportFailures, r.ReportError)
	}
	if r.RPCProtoBytesPerS <= 0 || r.RPCBytesPerS <= r.RPCProtoBytesPerS {
		t.Errorf("rpc bytes: %v/s protobuf, %v/s on the wire; want the wire's (with framing) > the protobuf's > 0",
			r.RPCProtoBytesPerS, r.RPCBytesPerS)
	}
	if runtime.GOOS == "linux" && (r.NimbusCPUError != "" || r.NimbusCPUSPerS < 0) {
		t.Errorf("nimbus cpu: %v s/s, error %q; want it measured", r.NimbusCPUSPerS, r.NimbusCPUError)
	}
	if r.Killed == "" || r.KilledWorkers < 1 || r.MovedWorkers != r.KilledWorkers {
		t.Errorf("detection: killed %q running %d workers, %d moved; want one that ran some, and only they moved",
			r.Killed, r.KilledWorkers, r.MovedWorkers)
	}
	if r.DetectS <= 0 || r.DetectTTLS <= 0 || r.DetectTTLS > r.DetectS || r.DetectNimbusS < 0 {
		t.Errorf("detect_s %v, detect_ttl_s %v, detect_nimbus_s %v: want 0 < ttl ≤ total and nimbus's part ≥ 0",
			r.DetectS, r.DetectTTLS, r.DetectNimbusS)
	}
}
