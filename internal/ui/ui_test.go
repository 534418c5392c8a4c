package ui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bearer"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/coord/etcdembed"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbus"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/testutil"
)

const token = "s3cret"

// env is a real nimbus on an embedded etcd, with one supervisor of two
// slots and a word count submitted, and the UI's handler on it.
type env struct {
	t    *testing.T
	api  nimbuspb.NimbusClient
	sup  nimbuspb.NimbusClient // a supervisor's client: it sends the cluster's token
	id   string                // the topology's id
	url  string                // the UI's base URL
	sups string                // the supervisor's id
}

func newEnv(t *testing.T) *env { t.Helper(); return newEnvWith(t, nil) }

// newEnvWith is newEnv with the nimbus's Config changed by mod.
func newEnvWith(t *testing.T, mod func(*nimbus.Config)) *env {
	t.Helper()
	e, err := etcdembed.Start(etcdembed.Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	c, err := coord.Dial(e.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	store := coord.NewStore(c)
	t.Cleanup(func() { store.Close(); c.Close() })
	m, err := store.JoinSupervisor(testutil.Context(t), coord.Supervisor{ID: "s1", Host: "127.0.0.1", Ports: []int{6700, 6701}, Started: time.Now()}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)

	ncfg := nimbus.Config{
		ID: "n1", Dir: t.TempDir(), Listen: "127.0.0.1:0", Endpoints: e.Endpoints,
		Cluster: gale.Config{config.NimbusAuthToken: token}, RequireAuth: true, GaleVersion: "1.2.3-test",
	}
	if mod != nil {
		mod(&ncfg)
	}
	n, err := nimbus.New(ncfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("nimbus Run: %v", err)
		}
	})
	select {
	case <-n.Ready():
	case err := <-done:
		t.Fatalf("nimbus Run: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !n.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("nimbus does not lead after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := grpc.NewClient(n.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	api := nimbuspb.NewNimbusClient(conn)
	supConn, err := grpc.NewClient(n.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(bearer.Credentials(token)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { supConn.Close() })

	h, err := New(Config{Nimbus: api})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ev := &env{t: t, api: api, sup: nimbuspb.NewNimbusClient(supConn), url: srv.URL, sups: "s1"}
	ev.id = ev.submit("wordcount")
	return ev
}

// submit submits a word count of two workers named name and returns its id.
func (ev *env) submit(name string) string {
	t := ev.t
	topo := plan.Topology{
		Components: []plan.Component{
			{ID: "sentences", Spout: true, Tasks: 2, Parallelism: 2, Streams: []string{"default"}},
			{ID: "split", Tasks: 4, Parallelism: 4, Streams: []string{"default"}, Inputs: []plan.Input{{Component: "sentences", Stream: "default", Grouping: "shuffle"}}},
			{ID: "count", Tasks: 4, Parallelism: 2, Streams: []string{"default"}, Inputs: []plan.Input{{Component: "split", Stream: "default", Grouping: "fields", Fields: []string{"word"}}}},
		},
	}
	data := []byte("not really a binary, but nimbus only stores it")
	sum := sha256.Sum256(data)
	conf, _ := json.Marshal(gale.Config{gale.TopologyMessageTimeoutSecs: 7})
	ctx := metadata.AppendToOutgoingContext(testutil.Context(t), "authorization", "Bearer "+token)
	stream, err := ev.api.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hdr := &nimbuspb.SubmitHeader{
		Name: name, Definition: nimbus.Definition(topo, "wordcount", nil, 2), ConfigJson: conf,
		Artifact: &nimbuspb.Artifact{Sha256: hex.EncodeToString(sum[:]), Size: int64(len(data)), Goos: "linux", Goarch: "amd64", GaleVersion: "dev", WireVersion: 1},
	}
	if err := stream.Send(&nimbuspb.SubmitRequest{Part: &nimbuspb.SubmitRequest_Header{Header: hdr}}); err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&nimbuspb.SubmitRequest{Part: &nimbuspb.SubmitRequest_Chunk{Chunk: data}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return resp.GetId()
}

// report sends the supervisor's report of the topology's two workers, as
// a supervisor does: 20 trees acked, half at 2 ms and half at 4 ms.
func (ev *env) report() {
	t := ev.t
	b2, b4 := metrics.LatencyBucket(2*time.Millisecond), metrics.LatencyBucket(4*time.Millisecond)
	var ws []*nimbuspb.WorkerReport
	for i, port := range []int32{6700, 6701} {
		ws = append(ws, &nimbuspb.WorkerReport{
			Topology: ev.id, Port: port, Pid: int32(1000 + i), State: "valid", Supervisor: ev.sups, Host: "127.0.0.1",
			Emitted: 30, Acked: 10, Failed: 1, HeartbeatUnixMs: time.Now().UnixMilli(),
			CompleteLatency: &nimbuspb.LatencyHistogram{Buckets: []int32{int32(b2), int32(b4)}, Counts: []int64{5, 5}},
			Components: []*nimbuspb.ComponentStats{
				{Component: "sentences", Kind: "spout", Tasks: 1, Emitted: 30, Transferred: 12, Acked: 10, Failed: 1, TimedOut: 1,
					Pending: 3, MaxPending: 100, ThrottledNanos: 1_500_000_000, Retries: 4, DeadLetters: 1,
					CompleteLatency: &nimbuspb.LatencyHistogram{Buckets: []int32{int32(b2), int32(b4)}, Counts: []int64{5, 5}}},
				{Component: "split", Kind: "bolt", Tasks: 2, Executed: 30, Acked: 29, Failed: 1, Emitted: 90,
					ExecuteSamples: 2, ExecuteSampledNanos: 3_000_000, ProcessSamples: 2, ProcessSampledNanos: 5_000_000, Capacity: 0.25 * float64(i+1),
					QueueDepth: 7, QueueCapacity: 1000, BackpressureNanos: 250_000_000},
			},
		})
	}
	if _, err := ev.sup.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: ev.sups, Workers: ws}); err != nil {
		t.Fatalf("Report: %v", err)
	}
}

// do sends a request to the UI and returns its status and body.
func (ev *env) do(method, path, auth, body string) (int, []byte) {
	ev.t.Helper()
	req, err := http.NewRequestWithContext(testutil.Context(ev.t), method, ev.url+path, strings.NewReader(body))
	if err != nil {
		ev.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ev.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ev.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// get answers GET path's JSON object, failing unless it is 200.
func (ev *env) get(path string) map[string]any {
	ev.t.Helper()
	code, b := ev.do("GET", path, "", "")
	if code != http.StatusOK {
		ev.t.Fatalf("GET %s: status %d: %s", path, code, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		ev.t.Fatalf("GET %s: %v in %s", path, err, b)
	}
	return m
}

// want checks that m's fields hold the values given (numbers as float64).
func want(t *testing.T, what string, m map[string]any, fields map[string]any) {
	t.Helper()
	for k, v := range fields {
		got, ok := m[k]
		if !ok {
			t.Errorf("%s: no field %q in %v", what, k, m)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("%s.%s: got %v, want %v", what, k, got, v)
		}
	}
}

func list(t *testing.T, what string, v any) []map[string]any {
	t.Helper()
	xs, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: got %T %v, want a list", what, v, v)
	}
	var out []map[string]any
	for _, x := range xs {
		out = append(out, x.(map[string]any))
	}
	return out
}

func TestGetEndpointsAnswerStormsFields(t *testing.T) {
	ev := newEnv(t)
	ev.report()

	cs := ev.get("/api/v1/cluster/summary")
	want(t, "cluster/summary", cs, map[string]any{
		"stormVersion": "1.2.3-test", "supervisors": 1, "topologies": 1,
		"slotsTotal": 2, "slotsUsed": 2, "slotsFree": 0, "executorsTotal": 8, "tasksTotal": 10,
	})
	if _, ok := cs["nimbusUptimeSeconds"]; !ok {
		t.Errorf("cluster/summary has no nimbusUptimeSeconds: %v", cs)
	}

	sups := list(t, "supervisors", ev.get("/api/v1/supervisor/summary")["supervisors"])
	if len(sups) != 1 {
		t.Fatalf("supervisor/summary: got %v, want one", sups)
	}
	want(t, "supervisor", sups[0], map[string]any{"id": "s1", "host": "127.0.0.1", "slotsTotal": 2, "slotsFree": 0, "slotsUsed": 2})
	for _, k := range []string{"uptime", "uptimeSeconds"} {
		if _, ok := sups[0][k]; !ok {
			t.Errorf("supervisor has no %s: %v", k, sups[0])
		}
	}

	ns := list(t, "nimbuses", ev.get("/api/v1/nimbus/summary")["nimbuses"])
	if len(ns) != 1 {
		t.Fatalf("nimbus/summary: got %v, want one", ns)
	}
	want(t, "nimbus", ns[0], map[string]any{"host": "127.0.0.1", "status": "Leader", "version": "1.2.3-test"})
	if p, _ := ns[0]["port"].(float64); p <= 0 {
		t.Errorf("nimbus port: got %v, want the API's port", ns[0]["port"])
	}

	ts := list(t, "topologies", ev.get("/api/v1/topology/summary")["topologies"])
	if len(ts) != 1 {
		t.Fatalf("topology/summary: got %v, want one", ts)
	}
	want(t, "topology", ts[0], map[string]any{
		"id": ev.id, "name": "wordcount", "status": "ACTIVE", "tasksTotal": 10, "workersTotal": 2, "executorsTotal": 8,
	})
	for _, k := range []string{"uptime", "uptimeSeconds"} {
		if _, ok := ts[0][k]; !ok {
			t.Errorf("topology has no %s: %v", k, ts[0])
		}
	}

	// By name and by id, with Storm's query parameters.
	for _, ref := range []string{"wordcount", ev.id} {
		tp := ev.get("/api/v1/topology/" + ref + "?window=600&sys=false")
		want(t, "topology/"+ref, tp, map[string]any{
			"id": ev.id, "name": "wordcount", "status": "ACTIVE", "workersTotal": 2, "executorsTotal": 8, "tasksTotal": 10, "msgTimeout": 7,
		})
		stats := list(t, "topologyStats", tp["topologyStats"])
		if len(stats) != 4 {
			t.Fatalf("topologyStats: got %v, want the four windows", stats)
		}
		want(t, "topologyStats", stats[3], map[string]any{"window": ":all-time", "windowPretty": "All time", "emitted": 60, "transferred": 24, "acked": 20, "failed": 2})
		lat, err := strconv.ParseFloat(fmt.Sprint(stats[3]["completeLatency"]), 64)
		if err != nil || lat < 2.8 || lat > 3.2 {
			t.Errorf("completeLatency: got %v, want about 3 (ms, the mean of 2 and 4)", stats[3]["completeLatency"])
		}
		spouts := list(t, "spouts", tp["spouts"])
		if len(spouts) != 1 {
			t.Fatalf("spouts: got %v", spouts)
		}
		want(t, "spout", spouts[0], map[string]any{"spoutId": "sentences", "executors": 2, "tasks": 2,
			"emitted": 60, "transferred": 24, "acked": 20, "failed": 2, "timedOut": 2, "failedByBolt": 0})
		if l, err := strconv.ParseFloat(fmt.Sprint(spouts[0]["completeLatency"]), 64); err != nil || l < 2.8 || l > 3.2 {
			t.Errorf("spout completeLatency: got %v, want about 3 (ms)", spouts[0]["completeLatency"])
		}
		bolts := list(t, "bolts", tp["bolts"])
		if len(bolts) != 2 {
			t.Fatalf("bolts without sys: got %v, want split and count", bolts)
		}
		want(t, "bolt", bolts[0], map[string]any{"boltId": "split", "executors": 4, "tasks": 4,
			"executed": 60, "acked": 58, "failed": 2, "emitted": 180, "executeLatency": "1.500", "processLatency": "2.500", "capacity": "0.500"})
		want(t, "bolt", bolts[1], map[string]any{"boltId": "count", "executed": 0, "capacity": "0.000"})
		want(t, "bolt", bolts[1], map[string]any{"boltId": "count", "executors": 2, "tasks": 4})
		workers := list(t, "workers", tp["workers"])
		if len(workers) != 2 {
			t.Fatalf("workers: got %v, want the two reported", workers)
		}
		want(t, "worker", workers[0], map[string]any{"host": "127.0.0.1", "supervisorId": "s1", "topologyId": ev.id})
		conf, ok := tp["configuration"].(map[string]any)
		if !ok || fmt.Sprint(conf[gale.TopologyMessageTimeoutSecs]) != "7" {
			t.Errorf("configuration: got %v, want the topology's config", tp["configuration"])
		}
	}
	bolts := list(t, "bolts", ev.get("/api/v1/topology/" + ev.id + "?sys=true")["bolts"])
	// Gale has no acker executors: sys=true shows no "__acker" bolt.
	if len(bolts) != 2 || bolts[0]["boltId"] != "split" || bolts[1]["boltId"] != "count" {
		t.Errorf("bolts with sys=true: got %v, want split and count only, no __acker", bolts)
	}
}

func TestUnknownTopologyIs404(t *testing.T) {
	ev := newEnv(t)
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/topology/nosuch"},
		{"POST", "/api/v1/topology/nosuch/deactivate"},
	} {
		code, b := ev.do(c.method, c.path, "Bearer "+token, "")
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %v in %s", c.method, c.path, err, b)
		}
		if code != http.StatusNotFound || m["error"] != "Not Found" || !strings.Contains(m["errorMessage"], "nosuch") {
			t.Errorf("%s %s: got %d %v, want 404 naming the topology", c.method, c.path, code, m)
		}
	}
}

func topologyStatus(t *testing.T, ev *env) string {
	t.Helper()
	return fmt.Sprint(ev.get("/api/v1/topology/" + ev.id)["status"])
}

func TestMutationsNeedTheTokenAndChangeTheTopology(t *testing.T) {
	ev := newEnv(t)
	for _, auth := range []string{"", "Bearer wrong"} {
		code, b := ev.do("POST", "/api/v1/topology/"+ev.id+"/deactivate", auth, "")
		if code != http.StatusUnauthorized || !strings.Contains(string(b), "errorMessage") {
			t.Errorf("deactivate with %q: got %d %s, want 401", auth, code, b)
		}
	}
	if s := topologyStatus(t, ev); s != "ACTIVE" {
		t.Fatalf("a refused deactivate changed the status to %s", s)
	}

	code, b := ev.do("POST", "/api/v1/topology/wordcount/deactivate", "Bearer "+token, "")
	var m map[string]string
	_ = json.Unmarshal(b, &m)
	if code != http.StatusOK || m["topologyOperation"] != "deactivate" || m["topologyId"] != "wordcount" || m["status"] != "success" {
		t.Fatalf("deactivate: got %d %s", code, b)
	}
	if s := topologyStatus(t, ev); s != "INACTIVE" {
		t.Errorf("after deactivate: status %s, want INACTIVE", s)
	}
	if code, b := ev.do("POST", "/api/v1/topology/"+ev.id+"/activate", "Bearer "+token, ""); code != http.StatusOK {
		t.Fatalf("activate: got %d %s", code, b)
	}
	if s := topologyStatus(t, ev); s != "ACTIVE" {
		t.Errorf("after activate: status %s, want ACTIVE", s)
	}

	if code, b := ev.do("POST", "/api/v1/topology/"+ev.id+"/rebalance/x", "Bearer "+token, ""); code != http.StatusBadRequest {
		t.Errorf("rebalance/x: got %d %s, want 400", code, b)
	}
	body := `{"rebalanceOptions":{"numWorkers":1,"executors":{"split":2}}}`
	if code, b := ev.do("POST", "/api/v1/topology/"+ev.id+"/rebalance/0", "Bearer "+token, body); code != http.StatusOK {
		t.Fatalf("rebalance: got %d %s", code, b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		tp := ev.get("/api/v1/topology/" + ev.id)
		bolts := list(t, "bolts", tp["bolts"])
		if fmt.Sprint(tp["workersTotal"]) == "1" && fmt.Sprint(bolts[0]["executors"]) == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after rebalance to 1 worker and split×2: got %v", tp)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if code, b := ev.do("POST", "/api/v1/topology/"+ev.id+"/kill/0", "", ""); code != http.StatusUnauthorized {
		t.Errorf("kill without the token: got %d %s, want 401", code, b)
	}
	if code, b := ev.do("POST", "/api/v1/topology/"+ev.id+"/kill/0", "Bearer "+token, ""); code != http.StatusOK {
		t.Fatalf("kill: got %d %s", code, b)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, _ := ev.do("GET", "/api/v1/topology/"+ev.id, "", "")
		if code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after kill/0 the topology is still there (%d)", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMetricsHoldTheGaleSeries(t *testing.T) {
	ev := newEnv(t)
	ev.report()
	code, b := ev.do("GET", "/metrics", "", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, b)
	}
	text := string(b)
	labels := fmt.Sprintf(`{topology="wordcount",topology_id="%s"}`, ev.id)
	for _, line := range []string{
		"gale_nimbus_up 1",
		"gale_cluster_supervisors 1",
		"gale_cluster_slots_total 2",
		"gale_cluster_slots_used 2",
		"gale_topology_emitted_total" + labels + " 60",
		"gale_topology_acked_total" + labels + " 20",
		"gale_topology_failed_total" + labels + " 2",
		"gale_topology_workers" + labels + " 2",
		"gale_topology_complete_latency_seconds_count" + labels + " 20",
		fmt.Sprintf(`gale_topology_complete_latency_seconds_bucket{topology="wordcount",topology_id="%s",le="0.001"} 0`, ev.id),
		fmt.Sprintf(`gale_topology_complete_latency_seconds_bucket{topology="wordcount",topology_id="%s",le="0.0025"} 10`, ev.id),
		fmt.Sprintf(`gale_topology_complete_latency_seconds_bucket{topology="wordcount",topology_id="%s",le="0.005"} 20`, ev.id),
		"# TYPE gale_topology_acked_total counter",
		"# TYPE go_goroutines gauge",
		fmt.Sprintf(`gale_component_acked_total{component="sentences",kind="spout",topology="wordcount",topology_id="%s"} 20`, ev.id),
		fmt.Sprintf(`gale_component_transferred_total{component="sentences",kind="spout",topology="wordcount",topology_id="%s"} 24`, ev.id),
		fmt.Sprintf(`gale_spout_failed_by_reason_total{component="sentences",kind="spout",reason="timeout",topology="wordcount",topology_id="%s"} 2`, ev.id),
		fmt.Sprintf(`gale_spout_failed_by_reason_total{component="sentences",kind="spout",reason="bolt",topology="wordcount",topology_id="%s"} 0`, ev.id),
		fmt.Sprintf(`gale_bolt_executed_total{component="split",topology="wordcount",topology_id="%s"} 60`, ev.id),
		fmt.Sprintf(`gale_bolt_capacity_ratio{component="split",topology="wordcount",topology_id="%s"} 0.5`, ev.id),
		fmt.Sprintf(`gale_bolt_execute_latency_seconds{component="split",topology="wordcount",topology_id="%s"} 0.0015`, ev.id),
		fmt.Sprintf(`gale_bolt_process_latency_seconds{component="split",topology="wordcount",topology_id="%s"} 0.0025`, ev.id),
		fmt.Sprintf(`gale_component_queue_depth{component="split",kind="bolt",topology="wordcount",topology_id="%s"} 14`, ev.id),
		fmt.Sprintf(`gale_component_queue_capacity{component="split",kind="bolt",topology="wordcount",topology_id="%s"} 2000`, ev.id),
		fmt.Sprintf(`gale_component_backpressure_seconds_total{component="split",kind="bolt",topology="wordcount",topology_id="%s"} 0.5`, ev.id),
		fmt.Sprintf(`gale_component_retries_total{component="sentences",kind="spout",topology="wordcount",topology_id="%s"} 8`, ev.id),
		fmt.Sprintf(`gale_component_dead_letters_total{component="sentences",kind="spout",topology="wordcount",topology_id="%s"} 2`, ev.id),
		fmt.Sprintf(`gale_spout_pending_trees{component="sentences",topology="wordcount",topology_id="%s"} 6`, ev.id),
		fmt.Sprintf(`gale_spout_max_pending_trees{component="sentences",topology="wordcount",topology_id="%s"} 200`, ev.id),
		fmt.Sprintf(`gale_spout_throttled_seconds_total{component="sentences",topology="wordcount",topology_id="%s"} 3`, ev.id),
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("/metrics has no line %q", line)
		}
	}
}

func TestPrettyUptime(t *testing.T) {
	for _, c := range []struct {
		secs int64
		want string
	}{{0, "0s"}, {59, "59s"}, {61, "1m 1s"}, {3600, "1h 0m 0s"}, {90061, "1d 1h 1m 1s"}, {-5, "0s"}} {
		if got := prettyUptime(c.secs); got != c.want {
			t.Errorf("prettyUptime(%d): got %q, want %q", c.secs, got, c.want)
		}
	}
}

// TestConfigurationIsAnObject: a topology that set no config keys shows
// an empty configuration object, as Storm's scripts expect, not null.
func TestConfigurationIsAnObject(t *testing.T) {
	for _, conf := range []string{"", "null", "{}"} {
		page := topologyPage(&nimbuspb.TopologyInfo{Summary: &nimbuspb.TopologySummary{Id: "t-1"}, ConfigJson: []byte(conf)}, false)
		b, err := json.Marshal(page["configuration"])
		if err != nil || string(b) != "{}" {
			t.Errorf("config_json %q: configuration %s (%v), want {}", conf, b, err)
		}
	}
}

func TestComponentPage(t *testing.T) {
	ev := newEnv(t)
	split := ev.get("/api/v1/topology/" + ev.id + "/component/split")
	want(t, "component/split", split, map[string]any{"id": "split", "componentType": "bolt", "executors": 4, "tasks": 4, "topologyId": ev.id})
	in := list(t, "inputStats", split["inputStats"])
	if len(in) != 1 || in[0]["component"] != "sentences" || in[0]["stream"] != "default" {
		t.Errorf("split's inputStats: got %v, want sentences' default stream", in)
	}
	if out := list(t, "outputStats", split["outputStats"]); len(out) != 1 || out[0]["stream"] != "default" {
		t.Errorf("split's outputStats: got %v, want its default stream", out)
	}
	if errs, ok := split["componentErrors"].([]any); !ok || len(errs) != 0 {
		t.Errorf("componentErrors: got %v, want an empty list", split["componentErrors"])
	}
	want(t, "component/sentences", ev.get("/api/v1/topology/wordcount/component/sentences"), map[string]any{"componentType": "spout", "executors": 2})
	code, b := ev.do("GET", "/api/v1/topology/"+ev.id+"/component/nosuch", "", "")
	if code != http.StatusNotFound || !strings.Contains(string(b), "has no component") || !strings.Contains(string(b), "split") {
		t.Errorf("an unknown component: got %d %s, want 404 naming the components", code, b)
	}
}
