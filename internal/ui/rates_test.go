package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/nimbus"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/testutil"
)

// steadyWorker is a worker acking rate trees a second since started,
// in batches of batch (its counters move in steps, as a worker's do),
// whose supervisor reports it every period from phase on.
type steadyWorker struct {
	port          int32
	rate          float64
	batch         int64
	phase, period time.Duration
}

// at is the worker's report as of its last heartbeat at or before sim
// time t (0 is base), and whether it has made one.
func (w steadyWorker) at(ev *env, base, started time.Time, t time.Duration) (*nimbuspb.WorkerReport, bool) {
	if t < w.phase {
		return nil, false
	}
	hb := base.Add(w.phase + (t-w.phase)/w.period*w.period)
	n := int64(w.rate*hb.Sub(started).Seconds()) / w.batch * w.batch
	return &nimbuspb.WorkerReport{
		Topology: ev.id, Port: w.port, Pid: 1000 + w.port, State: "valid", Supervisor: ev.sups, Host: "127.0.0.1",
		Emitted: n, Acked: n, HeartbeatUnixMs: hb.UnixMilli(), StartedUnixMs: started.UnixMilli(),
		Components: []*nimbuspb.ComponentStats{
			{Component: "sentences", Kind: "spout", Tasks: 1, Emitted: n, Acked: n,
				Outputs: []*nimbuspb.StreamStats{{Stream: "default", Emitted: n}}},
			{Component: "split", Kind: "bolt", Tasks: 2, Executed: n, Acked: n, Emitted: 3 * n,
				Inputs: []*nimbuspb.StreamStats{{Stream: "default", Component: "sentences", Executed: n}}},
		},
	}, true
}

// TestLiveRatesFollowTheReports: a steady 100 trees/s, acked by two
// workers whose supervisor reports each every 5 s, out of phase, with
// counters that move in batches, reads 90-110/s in the topology page's
// liveRates on every 2 s poll, where the difference of the counters
// over the poll interval reads 0/s or several times that. The time is
// simulated: the reports carry their heartbeats, and the polls follow
// them.
func TestLiveRatesFollowTheReports(t *testing.T) {
	ev := newEnv(t)
	base := time.Now().Add(-2 * time.Minute)
	started := base.Add(-5 * time.Minute) // a minute or more: its first report gives its average since then
	workers := []steadyWorker{
		{port: 6700, rate: 60, batch: 8, phase: 0, period: 5 * time.Second},
		{port: 6701, rate: 40, batch: 8, phase: 2500 * time.Millisecond, period: 5 * time.Second},
	}
	ctx := metadata.AppendToOutgoingContext(testutil.Context(t), "authorization", "Bearer "+token)
	var lastAcked float64
	naiveOff := 0
	polls := 0
	for poll := time.Second; poll <= 60*time.Second; poll += 2 * time.Second {
		var ws []*nimbuspb.WorkerReport
		for _, w := range workers {
			if r, ok := w.at(ev, base, started, poll); ok {
				ws = append(ws, r)
			}
		}
		if _, err := ev.api.Report(ctx, &nimbuspb.ReportRequest{Supervisor: ev.sups, Workers: ws}); err != nil {
			t.Fatalf("Report: %v", err)
		}
		page := ev.get("/api/v1/topology/" + ev.id)
		lr, ok := page["liveRates"].(map[string]any)
		if !ok {
			t.Fatalf("poll at %s: no liveRates in the topology page", poll)
		}
		var acked float64
		for _, s := range page["topologyStats"].([]any) {
			if s := s.(map[string]any); s["window"] == ":all-time" {
				acked = s["acked"].(float64)
			}
		}
		naive := (acked - lastAcked) / 2
		if polls > 0 && (naive < 90 || naive > 110) {
			naiveOff++
		}
		lastAcked = acked
		polls++
		if poll < workers[1].phase {
			// Only the first worker has reported: its own rate.
			if got := lr["acked"].(float64); got < 54 || got > 66 {
				t.Errorf("poll at %s, one worker reporting: acked %.1f/s, want 60 ± 10%%", poll, got)
			}
			continue
		}
		for _, k := range []string{"acked", "emitted"} {
			if got := lr[k].(float64); got < 90 || got > 110 {
				t.Errorf("poll at %s: liveRates.%s %.1f/s, want 90-110 (a steady 100/s); the counters' change over the poll reads %.1f/s", poll, k, got, naive)
			}
		}
		comps := lr["components"].(map[string]any)
		if got := comps["split"].(float64); got < 90 || got > 110 {
			t.Errorf("poll at %s: split executes %.1f/s, want 90-110", poll, got)
		}
		var edge float64
		for _, in := range lr["inputs"].([]any) {
			if in := in.(map[string]any); in["component"] == "split" && in["source"] == "sentences" {
				edge = in["rate"].(float64)
			}
		}
		if edge < 90 || edge > 110 {
			t.Errorf("poll at %s: sentences → split %.1f/s, want 90-110", poll, edge)
		}
		if m, r := lr["workersMeasured"].(float64), lr["workersRunning"].(float64); m != 2 || r != 2 {
			t.Errorf("poll at %s: %v of %v workers measured, want 2 of 2", poll, m, r)
		}
	}
	// The test's sequence is one that fools the poll interval.
	if naiveOff < polls/2 {
		t.Errorf("the counters' change over the 2 s polls read 90-110/s on %d of %d polls: the sequence does not show the fault", polls-1-naiveOff, polls-1)
	}

	// A worker started again counts from zero: no negative rate, and its
	// rate is known again from its next report.
	restart := base.Add(70 * time.Second)
	ws := []*nimbuspb.WorkerReport{}
	for _, w := range workers {
		r, _ := w.at(ev, base, started, 70*time.Second)
		ws = append(ws, r)
	}
	ws[0].Pid, ws[0].StartedUnixMs, ws[0].Acked, ws[0].Emitted, ws[0].HeartbeatUnixMs = 4242, restart.UnixMilli(), 0, 0, restart.Add(time.Second).UnixMilli()
	ws[0].Components = nil
	if _, err := ev.api.Report(ctx, &nimbuspb.ReportRequest{Supervisor: ev.sups, Workers: ws}); err != nil {
		t.Fatalf("Report: %v", err)
	}
	lr := ev.get("/api/v1/topology/" + ev.id)["liveRates"].(map[string]any)
	if got := lr["acked"].(float64); got < 0 || got > 44 {
		t.Errorf("after a restart: acked %.1f/s, want the other worker's 40 ± 10%%", got)
	}
	if m := lr["workersMeasured"].(float64); m != 1 {
		t.Errorf("after a restart: %v workers measured, want 1 (the new one needs a second report)", m)
	}
}

// TestRateBookIsBounded: the rates of topologies no page asks about are
// forgotten, and at most rateBookTopologies are kept.
func TestRateBookIsBounded(t *testing.T) {
	b := newRateBook()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w := []*nimbuspb.WorkerReport{{Supervisor: "s", Host: "h", Port: 1, State: "valid", HeartbeatUnixMs: now.UnixMilli()}}
	for i := range rateBookTopologies + 10 {
		b.observe(fmt.Sprint("t", i), w, now.Add(time.Duration(i)*time.Millisecond))
	}
	if n := len(b.mu.topos); n > rateBookTopologies {
		t.Errorf("%d topologies kept, want at most %d", n, rateBookTopologies)
	}
	b.observe("late", w, now.Add(rateBookIdle+time.Minute))
	if n := len(b.mu.topos); n != 1 {
		t.Errorf("%d topologies kept after %s without a page, want 1 (the one asked)", n, rateBookIdle)
	}
}

// TestMessageTimeoutIsTheEffectiveOne: a topology that does not set
// topology.message.timeout.secs shows the effective one, the cluster's
// or Gale's default (30 s), not "default".
func TestMessageTimeoutIsTheEffectiveOne(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster gale.Config
		want    float64
	}{
		{"the default", nil, 30},
		{"the cluster's", gale.Config{gale.TopologyMessageTimeoutSecs: 45}, 45},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := newEnvWith(t, func(c *nimbus.Config) {
				for k, v := range tc.cluster {
					c.Cluster[k] = v
				}
			})
			id := submitConf(ev, "plain", nil)
			if got := ev.get("/api/v1/topology/" + id)["msgTimeout"]; got != tc.want {
				t.Errorf("msgTimeout of a topology without its own: %v, want %v", got, tc.want)
			}
			// The topology's own wins.
			if got := ev.get("/api/v1/topology/" + ev.id)["msgTimeout"]; got != 7.0 {
				t.Errorf("msgTimeout of a topology with its own 7: %v, want 7", got)
			}
		})
	}
}

// submitConf submits a one-spout topology named name with conf as its
// config and returns its id.
func submitConf(ev *env, name string, conf gale.Config) string {
	t := ev.t
	topo := plan.Topology{Components: []plan.Component{{ID: "s", Spout: true, Tasks: 1, Parallelism: 1, Streams: []string{"default"}}}}
	data := []byte("not really a binary, but nimbus only stores it")
	sum := sha256.Sum256(data)
	confJSON, _ := json.Marshal(conf)
	ctx := metadata.AppendToOutgoingContext(testutil.Context(t), "authorization", "Bearer "+token)
	stream, err := ev.api.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hdr := &nimbuspb.SubmitHeader{
		Name: name, Definition: nimbus.Definition(topo, "plain", nil, 1), ConfigJson: confJSON,
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
