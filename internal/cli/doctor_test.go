package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale/internal/doctor"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// scriptedNimbus answers Get with its infos in turn (the last one again
// once they run out), as a topology's numbers move between reports.
type scriptedNimbus struct {
	nimbuspb.UnimplementedNimbusServer
	addr string

	mu    sync.Mutex
	infos []*nimbuspb.TopologyInfo
	gets  int
}

func (s *scriptedNimbus) ClusterInfo(context.Context, *nimbuspb.ClusterInfoRequest) (*nimbuspb.ClusterInfoResponse, error) {
	return &nimbuspb.ClusterInfoResponse{LeaderAddr: s.addr, Supervisors: []*nimbuspb.SupervisorSummary{
		{Id: "s1", Host: "127.0.0.1", Ports: []int32{6700, 6701}, SlotsUsed: 1}}}, nil
}

func (s *scriptedNimbus) Get(_ context.Context, r *nimbuspb.GetRequest) (*nimbuspb.TopologyInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.GetName() != "wc" {
		return nil, status.Errorf(codes.NotFound, "nimbus: no topology %q", r.GetName())
	}
	info := s.infos[min(s.gets, len(s.infos)-1)]
	s.gets++
	return info, nil
}

func startScripted(t *testing.T, infos ...*nimbuspb.TopologyInfo) *scriptedNimbus {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedNimbus{addr: ln.Addr().String(), infos: infos}
	srv := grpc.NewServer()
	nimbuspb.RegisterNimbusServer(srv, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return s
}

// wcInfo is a one-worker word count i seconds into the test: 100 trees
// acked a second, timedOut of them a second timed out, the count bolt at
// capacity.
func wcInfo(i int, timedOut int64, capacity float64) *nimbuspb.TopologyInfo {
	t := int64(60 + i)
	hb := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).UnixMilli()
	return &nimbuspb.TopologyInfo{
		Summary: &nimbuspb.TopologySummary{Id: "wc-1", Name: "wc", Status: "ACTIVE", Workers: 1, WorkersRunning: 1, UptimeSecs: t},
		Definition: &nimbuspb.TopologyDefinition{Factory: "run:wordcount", Workers: 1, Components: []*nimbuspb.Component{
			{Id: "count", Tasks: 2, Parallelism: 2, Inputs: []*nimbuspb.Input{{Component: "sentences"}}},
			{Id: "sentences", Spout: true, Tasks: 1, Parallelism: 1}}},
		Workers: []*nimbuspb.WorkerReport{{Topology: "wc-1", Supervisor: "s1", Host: "127.0.0.1", Port: 6700, Pid: 42, State: "valid",
			HeartbeatUnixMs: hb, Emitted: t * 100}},
		Components: []*nimbuspb.ComponentStats{
			{Component: "count", Kind: "bolt", Tasks: 2, Executed: t * 700, Acked: t * 700, ExecuteSamples: t * 700 / 64, ExecuteSampledNanos: t * 700 / 64 * 20000, Capacity: capacity,
				ProcessSamples: t * 700 / 64, ProcessSampledNanos: t * 700 / 64 * 50000},
			{Component: "sentences", Kind: "spout", Tasks: 1, Emitted: t * 100, Acked: t * (100 - timedOut), Failed: t * timedOut, TimedOut: t * timedOut,
				Pending: 12, MaxPending: 1000, CompleteLatency: &nimbuspb.LatencyHistogram{Buckets: []int32{100}, Counts: []int64{t * (100 - timedOut)}}},
		},
	}
}

func TestDoctorHealthy(t *testing.T) {
	s := startScripted(t, wcInfo(0, 0, 0.3), wcInfo(1, 0, 0.3), wcInfo(2, 0, 0.3))
	code, out, _ := runGale(t, "doctor", "wc", "--nimbus", s.addr, "--duration", "20ms", "--interval", "10ms")
	if code != 0 {
		t.Fatalf("exit %d, want 0 (no problem)", code)
	}
	for _, want := range []string{"topology wc (wc-1): ACTIVE, ", "no problem found: workers 1/1", "acked 100.0/s",
		"busiest bolt count at capacity 0.30", "trees in flight 12 of 1000", "message timeout 30 s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Trees timing out: exit 1, and the JSON names the finding.
func TestDoctorProblemJSON(t *testing.T) {
	s := startScripted(t, wcInfo(0, 20, 0.95), wcInfo(1, 20, 0.95), wcInfo(2, 20, 0.95))
	code, out, stderr := runGale(t, "doctor", "wc", "--nimbus", s.addr, "--duration", "20ms", "--interval", "10ms", "--json")
	if code != 1 || !strings.Contains(stderr, "doctor wc: 1 problem(s) found") {
		t.Errorf("exit %d, stderr %q; want 1 and the problems counted", code, stderr)
	}
	var r doctorReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if r.Problems != 1 || len(r.Findings) != 1 || r.Findings[0].Kind != doctor.KindReplayStorm || r.Nimbus != s.addr || r.Samples < 2 {
		t.Errorf("got %+v, want one replay-storm finding (timeouts with trees fast), from the samples of %s", r, s.addr)
	}
	// Keys follow the other commands' snake case.
	for _, k := range []string{`"duration_secs"`, `"interval_secs"`, `"acked_per_sec"`, `"execute_latency_ms"`, `"evidence"`} {
		if !strings.Contains(out, k) {
			t.Errorf("--json lacks %s", k)
		}
	}
}

func TestDoctorMonitorUsage(t *testing.T) {
	for _, args := range [][]string{
		{"doctor"},
		{"doctor", "a", "b"},
		{"doctor", "wc", "--interval", "0s"},
		{"doctor", "wc", "--duration", "-1s"},
		{"monitor"},
		{"monitor", "wc", "--count", "-1"},
		{"monitor", "wc", "--interval", "-2s"},
	} {
		if code, _, stderr := runGale(t, args...); code != exitUsage || !strings.Contains(stderr, "Run 'gale ") {
			t.Errorf("gale %s: exit %d, stderr %q; want 2 with the usage hint", strings.Join(args, " "), code, stderr)
		}
	}
	s := startScripted(t, wcInfo(0, 0, 0.3))
	if code, _, stderr := runGale(t, "doctor", "nope", "--nimbus", s.addr, "--duration", "0s"); code != 1 || !strings.Contains(stderr, `no topology "nope"`) {
		t.Errorf("an unknown topology: exit %d, stderr %q; want 1 and nimbus's reason", code, stderr)
	}
}

// monitor to a pipe appends a block per refresh: the first with the
// averages since the start, the next with the rates between reports.
func TestMonitorBlocks(t *testing.T) {
	s := startScripted(t, wcInfo(0, 0, 0.3), wcInfo(2, 0, 0.4), wcInfo(2, 0, 0.4))
	code, out, _ := runGale(t, "monitor", "wc", "--nimbus", s.addr, "--count", "3", "--interval", "10ms")
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("ANSI escapes to a pipe:\n%q", out)
	}
	blocks := strings.Split(strings.TrimSpace(out), "\n\n")
	if len(blocks) != 3 {
		t.Fatalf("got %d blocks, want 3:\n%s", len(blocks), out)
	}
	if !strings.Contains(blocks[0], "(averages since the workers started)") || !strings.Contains(blocks[1], "(rates over 2.0 s)") {
		t.Errorf("headers: want averages since the start, then rates over 2.0 s:\n%s", out)
	}
	if strings.Index(blocks[1], "\nsentences ") > strings.Index(blocks[1], "\ncount ") {
		t.Errorf("want the spouts before the bolts:\n%s", blocks[1])
	}
	// The third sample repeats the second's report: the same rates.
	if !strings.Contains(blocks[2], "(rates over 2.0 s)") {
		t.Errorf("a repeated report: want the last rates again\n%s", blocks[2])
	}
	row := func(b, comp string) []string {
		for _, l := range strings.Split(b, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == comp {
				return f
			}
		}
		t.Fatalf("no %s row in\n%s", comp, b)
		return nil
	}
	// sentences: EMITTED/s ACKED/s - FAILED/s (bolt, timeout) complete p50/p99 - IN FLIGHT
	if f := strings.Join(row(blocks[1], "sentences"), " "); !strings.Contains(f, "spout 1 100 100 - 0 (bolt 0, timeout 0) complete") || !strings.Contains(f, "12 of 1000") {
		t.Errorf("sentences row: got %q", f)
	}
	if f := strings.Join(row(blocks[1], "count"), " "); !strings.Contains(f, "bolt 2 0 700 700 0 execute 20µs, process 50µs 0.40") {
		t.Errorf("count row: got %q", f)
	}

	code, out, _ = runGale(t, "monitor", "wc", "--nimbus", s.addr, "--count", "2", "--interval", "10ms", "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d", code)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var frames []monitorFrame
	for {
		var fr monitorFrame
		if err := dec.Decode(&fr); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("--json: %v\n%s", err, out)
		}
		frames = append(frames, fr)
	}
	if len(frames) != 2 || frames[0].Topology != "wc" || len(frames[1].Components) != 2 {
		t.Errorf("--json: got %+v, want 2 frames of wc's 2 components", frames)
	}
}

// On a terminal each frame redraws the screen.
func TestMonitorRedraw(t *testing.T) {
	var b strings.Builder
	fr := monitorFrame{Topology: "wc", ID: "wc-1", Status: "ACTIVE"}
	if err := writeMonitor(&b, fr, true, true); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "\x1b[H\x1b[2J") || !strings.Contains(b.String(), "no numbers yet") {
		t.Errorf("redraw: got %q, want cursor home and clear, then the frame", b.String())
	}
}
