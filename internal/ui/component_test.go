package ui

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/testutil"
)

// reportDetail sends the supervisor's report of the topology's two
// workers with the per-stream, per-executor counters and the errors the
// runtime reports: split runs tasks 3-4 in the first worker and 5-6 in
// the second; each worker's split task reported an error.
func (ev *env) reportDetail(errAt time.Time) {
	if _, err := ev.sup.Report(testutil.Context(ev.t), ev.detailReport(errAt)); err != nil {
		ev.t.Fatalf("Report: %v", err)
	}
}

// detailReport is the report reportDetail sends.
func (ev *env) detailReport(errAt time.Time) *nimbuspb.ReportRequest {
	var ws []*nimbuspb.WorkerReport
	for i, port := range []int32{6700, 6701} {
		first := int32(3 + 2*i)
		ws = append(ws, &nimbuspb.WorkerReport{
			Topology: ev.id, Port: port, Pid: int32(1000 + i), State: "valid", Supervisor: ev.sups, Host: "127.0.0.1",
			Emitted: 30, Acked: 10, HeartbeatUnixMs: time.Now().UnixMilli(), StartedUnixMs: time.Now().Add(-90 * time.Second).UnixMilli(),
			Components: []*nimbuspb.ComponentStats{
				{Component: "sentences", Kind: "spout", Tasks: 1, Emitted: 30, Transferred: 12, Acked: 10,
					Outputs:   []*nimbuspb.StreamStats{{Stream: "default", Emitted: 30, Transferred: 12}},
					Executors: []*nimbuspb.ExecutorStats{{FirstTask: int32(1 + i), LastTask: int32(1 + i), Host: "127.0.0.1", Port: port, Emitted: 30, Transferred: 12, Acked: 10}}},
				{Component: "split", Kind: "bolt", Tasks: 2, Executed: 30, Acked: 29, Failed: 1, Emitted: 90, Transferred: 40,
					ProcessSamples: 4, ProcessSampledNanos: 8_000_000, Capacity: 0.5,
					Inputs: []*nimbuspb.StreamStats{{Component: "sentences", Stream: "default", Executed: 30, Acked: 29, Failed: 1,
						ExecuteSamples: 2, ExecuteSampledNanos: 2_000_000, ProcessSamples: 2, ProcessSampledNanos: 6_000_000}},
					Outputs: []*nimbuspb.StreamStats{{Stream: "default", Emitted: 90, Transferred: 40}},
					Executors: []*nimbuspb.ExecutorStats{
						{FirstTask: first, LastTask: first, Host: "127.0.0.1", Port: port, Executed: 20, Emitted: 60, Capacity: 0.5, QueueDepth: 3},
						{FirstTask: first + 1, LastTask: first + 1, Host: "127.0.0.1", Port: port, Executed: 10, Emitted: 30, Capacity: 0.25},
					},
					Errors: []*nimbuspb.ComponentError{{Task: first, TimeUnixMs: errAt.Add(time.Duration(i) * time.Second).UnixMilli(),
						Error: fmt.Sprintf("split: bad sentence %d%s", i, strings.Repeat("!", 300)), Host: "127.0.0.1", Port: port}}},
			},
		})
	}
	return &nimbuspb.ReportRequest{Supervisor: ev.sups, Workers: ws}
}

func TestComponentPageHasTheReportedDetail(t *testing.T) {
	ev := newEnv(t)
	errAt := time.Now().Add(-time.Minute)
	ev.reportDetail(errAt)

	split := ev.get("/api/v1/topology/" + ev.id + "/component/split?window=:all-time")
	want(t, "component/split", split, map[string]any{"topologyStatus": "ACTIVE", "window": ":all-time"})
	bs := list(t, "boltStats", split["boltStats"])
	if len(bs) != 1 {
		t.Fatalf("boltStats: got %v, want one window", bs)
	}
	want(t, "boltStats", bs[0], map[string]any{"executed": 60, "acked": 58, "failed": 2, "capacity": "0.500", "processLatency": "2.000"})

	in := list(t, "inputStats", split["inputStats"])
	if len(in) != 1 {
		t.Fatalf("inputStats: got %v, want sentences' stream", in)
	}
	want(t, "inputStats", in[0], map[string]any{"component": "sentences", "stream": "default", "grouping": "shuffle",
		"executed": 60, "acked": 58, "failed": 2, "executeLatency": "1.000", "processLatency": "3.000"})
	out := list(t, "outputStats", split["outputStats"])
	if len(out) != 1 {
		t.Fatalf("outputStats: got %v", out)
	}
	want(t, "outputStats", out[0], map[string]any{"stream": "default", "emitted": 180, "transferred": 80})

	ex := list(t, "executorStats", split["executorStats"])
	if len(ex) != 4 {
		t.Fatalf("executorStats: got %v, want split's four executors", ex)
	}
	for i, id := range []string{"[3-3]", "[4-4]", "[5-5]", "[6-6]"} {
		if ex[i]["id"] != id {
			t.Errorf("executorStats[%d].id: got %v, want %s (in task order)", i, ex[i]["id"], id)
		}
	}
	want(t, "executorStats[0]", ex[0], map[string]any{"host": "127.0.0.1", "port": 6700, "executed": 20, "emitted": 60, "capacity": "0.500", "queueDepth": 3})
	want(t, "executorStats[2]", ex[2], map[string]any{"port": 6701})
	if up, _ := ex[0]["uptimeSeconds"].(float64); up < 89 {
		t.Errorf("executorStats[0].uptimeSeconds: got %v, want the worker's (≥ 90 s)", ex[0]["uptimeSeconds"])
	}

	errs := list(t, "componentErrors", split["componentErrors"])
	if len(errs) != 2 {
		t.Fatalf("componentErrors: got %v, want the two reported", errs)
	}
	want(t, "componentErrors[0]", errs[0], map[string]any{"errorTime": float64(errAt.Unix()), "errorHost": "127.0.0.1", "errorPort": 6700,
		"errorTask": 3, "errorWorkerLogLink": ""})
	want(t, "componentErrors[1]", errs[1], map[string]any{"errorPort": 6701, "errorTask": 5})
	if e := fmt.Sprint(errs[0]["error"]); !strings.HasPrefix(e, "split: bad sentence 0") || len(e) < 300 {
		t.Errorf("componentErrors[0].error: got %q, want the whole error", e)
	}
	if l, _ := errs[0]["errorLapsedSecs"].(float64); l < 59 {
		t.Errorf("errorLapsedSecs: got %v, want about 60", errs[0]["errorLapsedSecs"])
	}

	sentences := ev.get("/api/v1/topology/" + ev.id + "/component/sentences")
	if ss := list(t, "spoutSummary", sentences["spoutSummary"]); len(ss) != 1 || fmt.Sprint(ss[0]["acked"]) != "20" {
		t.Errorf("spoutSummary: got %v, want the spout's 20 acked", ss)
	}
	if errs := list(t, "componentErrors", sentences["componentErrors"]); len(errs) != 0 {
		t.Errorf("sentences' componentErrors: got %v, want none", errs)
	}

	// topology/:id shows each component's latest error, cut to 200
	// characters as Storm does.
	tp := ev.get("/api/v1/topology/" + ev.id)
	bolts := list(t, "bolts", tp["bolts"])
	last := fmt.Sprint(bolts[0]["lastError"])
	if bolts[0]["boltId"] != "split" || !strings.HasPrefix(last, "split: bad sentence 1") || len([]rune(last)) != 200 {
		t.Errorf("split's lastError: got %q, want the latest error's first 200 characters", last)
	}
	want(t, "split", bolts[0], map[string]any{"errorPort": 6701, "errorHost": "127.0.0.1", "errorTask": 5})
	spouts := list(t, "spouts", tp["spouts"])
	want(t, "sentences", spouts[0], map[string]any{"lastError": "", "errorHost": ""})

	if code, b := ev.do("GET", "/api/v1/topology/"+ev.id+"/component/split?window=7", "", ""); code != http.StatusBadRequest || !strings.Contains(string(b), "600") {
		t.Errorf("window=7: got %d %s, want 400 naming the windows", code, b)
	}
}

func TestVisualizationHasStormsShape(t *testing.T) {
	ev := newEnv(t)
	ev.reportDetail(time.Now())
	v := ev.get("/api/v1/topology/" + ev.id + "/visualization")
	if len(v) != 3 {
		t.Fatalf("visualization: got the components %v, want sentences, split and count", keys(v))
	}
	comp := func(id string) map[string]any {
		m, ok := v[id].(map[string]any)
		if !ok {
			t.Fatalf("visualization[%s]: got %v", id, v[id])
		}
		return m
	}
	sentences, split, count := comp("sentences"), comp("split"), comp("count")
	want(t, "sentences", sentences, map[string]any{":type": "spout", ":capacity": 0, ":transferred": 24, ":emitted": 60, ":acked": 20})
	want(t, "split", split, map[string]any{":type": "bolt", ":capacity": 0.5, ":latency": 2, ":transferred": 80, ":executed": 60,
		":link": "/component.html?id=split&topology_id=" + ev.id})
	if in := list(t, "sentences :inputs", sentences[":inputs"]); len(in) != 0 {
		t.Errorf("sentences' :inputs: got %v, want none", in)
	}
	in := list(t, "split :inputs", split[":inputs"])
	if len(in) != 1 {
		t.Fatalf("split's :inputs: got %v", in)
	}
	want(t, "split :inputs", in[0], map[string]any{":component": "sentences", ":stream": "default", ":sani-stream": "default",
		":grouping": "shuffle", ":executed": 60})
	in = list(t, "count :inputs", count[":inputs"])
	if len(in) != 1 {
		t.Fatalf("count's :inputs: got %v", in)
	}
	want(t, "count :inputs", in[0], map[string]any{":component": "split", ":grouping": "fields", ":fields": []any{"word"}, ":executed": 0})
	stats := list(t, "split :stats", split[":stats"])
	if len(stats) != 4 {
		t.Fatalf("split's :stats: got %v, want one per executor", stats)
	}
	want(t, "split :stats[0]", stats[0], map[string]any{":host": "127.0.0.1", ":port": 6700})
	if tr, ok := stats[0][":transferred"].(map[string]any)[":all-time"].(map[string]any); !ok || fmt.Sprint(tr["default"]) != "0" {
		t.Errorf("split :stats[0] :transferred: got %v, want {\":all-time\": {\"default\": 0}}", stats[0][":transferred"])
	}

	withSys := ev.get("/api/v1/topology/" + ev.id + "/visualization?sys=true")
	// Gale has no acker executors: sys=true adds no "__acker".
	if _, ok := withSys["__acker"]; ok || len(withSys) != 3 {
		t.Errorf("visualization?sys=true: got %v, want the three components, no __acker", keys(withSys))
	}
	if code, _ := ev.do("GET", "/api/v1/topology/nosuch/visualization", "", ""); code != http.StatusNotFound {
		t.Errorf("an unknown topology's visualization: got %d, want 404", code)
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestSanitizeStream(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"default", "default"},
		{"__ack_ack", "_s__ack_ack"},
		{"words-2.x:y", "words-_.x:y"},
		{"a b/c", "a_b_c"},
		{"1st", "_s_st"},
	} {
		if got := sanitizeStream(c.in); got != c.want {
			t.Errorf("sanitizeStream(%q): got %q, want %q", c.in, got, c.want)
		}
	}
}
