package ui

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/nimbus"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/testutil"
)

// topology/:id takes Storm's window parameter: the spouts' and bolts'
// counters are the window's, topologyStats lists every window with
// Storm's window and windowPretty, and workers[] carry the worker
// processes' numbers.
func TestTopologyWindows(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := galetest.NewClock(t0)
	ev := newEnvWith(t, func(c *nimbus.Config) { c.Now = clock.Now })
	report := func(n int64) {
		t.Helper()
		ws := []*nimbuspb.WorkerReport{{
			Topology: ev.id, Port: 6700, Pid: 1000, State: "valid", Supervisor: ev.sups, Host: "127.0.0.1",
			StartedUnixMs: t0.Add(-time.Minute).UnixMilli(), Restarts: 1, CpuSeconds: 2.5, HeapBytes: 1 << 20,
			GcCount: 3, GcPauseNanos: 1000, Goroutines: 20, BytesIn: 10, BytesOut: 20, MetricsPort: 9100,
			Components: []*nimbuspb.ComponentStats{
				{Component: "sentences", Kind: "spout", Tasks: 2, Emitted: n, Transferred: n / 2, Acked: n},
				{Component: "split", Kind: "bolt", Tasks: 4, Executed: 3 * n, Acked: 3 * n},
			},
		}}
		if _, err := ev.sup.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: ev.sups, Workers: ws}); err != nil {
			t.Fatalf("Report: %v", err)
		}
	}
	report(100)
	clock.Advance(15 * time.Minute)
	report(400)

	for _, c := range []struct {
		query, window, hint string
		emitted             int64
	}{
		{"", ":all-time", "All time", 400},
		{"?window=:all-time", ":all-time", "All time", 400},
		{"?window=600", "600", "10m 0s", 300},
		{"?window=10800", "10800", "3h 0m 0s", 400}, // longer than the topology's life: all time
	} {
		tp := ev.get("/api/v1/topology/" + ev.id + c.query)
		want(t, "topology"+c.query, tp, map[string]any{"window": c.window, "windowHint": c.hint})
		spouts, bolts := list(t, "spouts", tp["spouts"]), list(t, "bolts", tp["bolts"])
		want(t, "spout"+c.query, spouts[0], map[string]any{"spoutId": "sentences", "emitted": c.emitted, "acked": c.emitted, "transferred": c.emitted / 2})
		want(t, "bolt"+c.query, bolts[0], map[string]any{"boltId": "split", "executed": 3 * c.emitted})
		stats := list(t, "topologyStats", tp["topologyStats"])
		if len(stats) != 4 {
			t.Fatalf("topologyStats%s: %v, want the four windows", c.query, stats)
		}
		for i, w := range []struct {
			window, pretty string
			emitted        int64
		}{{"600", "10m 0s", 300}, {"10800", "3h 0m 0s", 400}, {"86400", "1d 0h 0m 0s", 400}, {":all-time", "All time", 400}} {
			want(t, fmt.Sprintf("topologyStats[%d]", i), stats[i], map[string]any{
				"window": w.window, "windowPretty": w.pretty, "emitted": w.emitted, "acked": w.emitted, "transferred": w.emitted / 2, "failed": 0})
		}
		workers := list(t, "workers", tp["workers"])
		want(t, "worker", workers[0], map[string]any{"port": 6700, "restarts": 1, "cpuSeconds": 2.5, "heapBytes": float64(1 << 20),
			"gcCount": 3, "gcPauseNanos": 1000, "goroutines": 20, "bytesIn": 10, "bytesOut": 20, "metricsPort": 9100,
			"startedUnixMs": float64(t0.Add(-time.Minute).UnixMilli())})
	}

	code, b := ev.do("GET", "/api/v1/topology/"+ev.id+"?window=60", "", "")
	if code != http.StatusBadRequest {
		t.Fatalf("window=60: %d %s, want 400", code, b)
	}
	for _, s := range []string{`\"60\"`, "600", "10800", "86400", ":all-time"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("window=60: %s does not name %s", b, s)
		}
	}
}
