package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/testutil"
)

// reportProcesses sends the supervisor's report of the topology's two
// workers with their processes' numbers; the one on 6701 serves no
// /metrics, and a third, on 6702, is not running.
func (ev *env) reportProcesses() {
	t := ev.t
	ws := []*nimbuspb.WorkerReport{
		{Topology: ev.id, Port: 6700, Pid: 1000, State: "valid", Supervisor: ev.sups, Host: "127.0.0.1",
			CpuSeconds: 12.5, HeapBytes: 64 << 20, RssBytes: 100 << 20, GcCount: 42, GcPauseNanos: 3_500_000, Goroutines: 77,
			BytesIn: 1000, BytesOut: 2000, Restarts: 2, StartedUnixMs: 1_700_000_000_000, MetricsPort: 9100},
		{Topology: ev.id, Port: 6701, Pid: 1001, State: "valid", Supervisor: ev.sups, Host: "127.0.0.1", CpuSeconds: 1},
		{Topology: ev.id, Port: 6702, State: "waiting", Supervisor: ev.sups, Host: "127.0.0.1", MetricsPort: 9102},
	}
	if _, err := ev.sup.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: ev.sups, Workers: ws}); err != nil {
		t.Fatalf("Report: %v", err)
	}
}

// The UI offers Prometheus its workers' own /metrics by HTTP service
// discovery: the running workers that serve one, with their supervisor
// and slot.
func TestMetricsTargetsListTheWorkersEndpoints(t *testing.T) {
	ev := newEnv(t)
	code, b := ev.do("GET", "/api/v1/metrics/targets", "", "")
	if code != http.StatusOK || strings.TrimSpace(string(b)) != "[]" {
		t.Fatalf("targets before any report: %d %s, want 200 and []", code, b)
	}
	ev.reportProcesses()
	code, b = ev.do("GET", "/api/v1/metrics/targets", "", "")
	if code != http.StatusOK {
		t.Fatalf("targets: %d %s", code, b)
	}
	var got []struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("targets: %v in %s", err, b)
	}
	if len(got) != 1 || len(got[0].Targets) != 1 || got[0].Targets[0] != "127.0.0.1:9100" {
		t.Fatalf("targets %s, want the one running worker serving /metrics, 127.0.0.1:9100", b)
	}
	want := map[string]string{"supervisor": "s1", "slot": "6700", "__meta_gale_topology": "wordcount", "__meta_gale_topology_id": ev.id}
	for k, v := range want {
		if got[0].Labels[k] != v {
			t.Errorf("target label %s = %q, want %q", k, got[0].Labels[k], v)
		}
	}
}

// The UI's /metrics holds each running worker process's numbers, from
// the supervisors' reports.
func TestMetricsHoldTheWorkerProcesses(t *testing.T) {
	ev := newEnv(t)
	ev.reportProcesses()
	code, b := ev.do("GET", "/metrics", "", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, b)
	}
	text := string(b)
	l := func(port int) string {
		return fmt.Sprintf(`{host="127.0.0.1",port="%d",supervisor="s1",topology="wordcount",topology_id="%s"}`, port, ev.id)
	}
	for _, line := range []string{
		"gale_worker_cpu_seconds_total" + l(6700) + " 12.5",
		"gale_worker_heap_bytes" + l(6700) + " 6.7108864e+07",
		"gale_worker_resident_memory_bytes" + l(6700) + " 1.048576e+08",
		"gale_worker_gc_cycles_total" + l(6700) + " 42",
		"gale_worker_gc_pause_seconds_total" + l(6700) + " 0.0035",
		"gale_worker_goroutines" + l(6700) + " 77",
		"gale_worker_received_bytes_total" + l(6700) + " 1000",
		"gale_worker_sent_bytes_total" + l(6700) + " 2000",
		"gale_worker_restarts_total" + l(6700) + " 2",
		"gale_worker_start_time_seconds" + l(6700) + " 1.7e+09",
		"gale_worker_cpu_seconds_total" + l(6701) + " 1",
		"# TYPE gale_worker_cpu_seconds_total counter",
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("/metrics has no line %q", line)
		}
	}
	if strings.Contains(text, `port="6702"`) {
		t.Errorf("/metrics has series of the worker on 6702, which does not run")
	}
}
