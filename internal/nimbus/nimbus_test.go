package nimbus

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/scheduler"
	"github.com/gale-stream/gale/internal/testutil"
)

func wantCode(t *testing.T, err error, code codes.Code, says ...string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v, want %v", err, code)
	}
	for _, s := range says {
		if !strings.Contains(status.Convert(err).Message(), s) {
			t.Errorf("error %q does not say %q", status.Convert(err).Message(), s)
		}
	}
}

func TestSubmitRecordsTopologyAndAssignment(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	nd := cl.startNimbus("n1", "", nil)
	nd.leads()
	sub := newSubmission("wordcount", 2, 1)
	resp := nd.mustSubmit(sub)
	if resp.GetStatus() != "ACTIVE" || resp.GetPendingReason() != "" {
		t.Fatalf("Submit: got %v, want ACTIVE", resp)
	}
	topo, err := cl.store.Topology(testutil.Context(t), resp.GetId())
	if err != nil {
		t.Fatalf("the topology's record: %v", err)
	}
	if topo.Name != "wordcount" || topo.Status != coord.StatusActive || topo.Workers != 2 || topo.Factory != "wordcount" ||
		topo.Params["lang"] != "en" || topo.Artifact.SHA256 != sub.header.Artifact.Sha256 || len(topo.Secret) != 64 {
		t.Errorf("the topology's record: got %+v", topo)
	}
	if !reflect.DeepEqual(topo.Definition, topology()) {
		t.Errorf("the record's definition: got %+v, want the submitted one", topo.Definition)
	}
	a, ok := cl.assignment(resp.GetId())
	if !ok {
		t.Fatal("no assignment after a submission to a cluster with free slots")
	}
	p, _ := plan.New(topology())
	if a.Version != 1 || !a.Active || len(a.Workers) != 2 || len(a.Executors) != len(p.Executors) || a.Secret != topo.Secret ||
		a.Artifact != topo.Artifact || a.Factory != "wordcount" || a.Name != "wordcount" {
		t.Errorf("assignment: got %s %+v", describe(a), a)
	}
	for _, w := range a.Workers {
		if w.Supervisor != "s1" || w.Host != "127.0.0.1" || (w.Port != 6700 && w.Port != 6701) {
			t.Errorf("worker slot %+v is not one of s1's", w)
		}
	}
	if !nd.holds(topo.Artifact.SHA256) {
		t.Error("the artifact is not in the nimbus's store")
	}
	if hs, _ := cl.store.Holders(testutil.Context(t), topo.Artifact.SHA256); !slices.Equal(hs, []string{"n1"}) {
		t.Errorf("Holders: got %v, want [n1]", hs)
	}

	list, err := nd.api.List(testutil.Context(t), &nimbuspb.ListRequest{})
	if err != nil || len(list.GetTopologies()) != 1 {
		t.Fatalf("List: got %v, %v", list, err)
	}
	if s := list.Topologies[0]; s.GetName() != "wordcount" || s.GetStatus() != "ACTIVE" || s.GetExecutors() != int32(len(p.Executors)) || s.GetTasks() != int32(p.Tasks) {
		t.Errorf("List: got %v", s)
	}
	info, err := nd.api.Get(testutil.Context(t), &nimbuspb.GetRequest{Name: "wordcount"})
	if err != nil {
		t.Fatal(err)
	}
	// The fingerprint is the one the workers compute: their addresses in
	// order, by index, and the executor map.
	sa := scheduler.Assignment{Executors: a.Executors}
	for i, w := range a.Workers {
		sa.Slots = append(sa.Slots, scheduler.Slot{ID: strconv.Itoa(i), Addr: "127.0.0.1:" + strconv.Itoa(w.Port)})
	}
	if info.GetAssignment().GetVersion() != 1 || len(info.GetAssignment().GetWorkers()) != 2 || info.GetAssignment().GetFingerprint() != sa.Fingerprint() {
		t.Errorf("Get: assignment %v, want fingerprint %s", info.GetAssignment(), sa.Fingerprint())
	}
	ci, err := nd.api.ClusterInfo(testutil.Context(t), &nimbuspb.ClusterInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if ci.GetLeaderId() != "n1" || ci.GetLeaderAddr() != nd.n.Addr() || len(ci.GetSupervisors()) != 1 || ci.GetSupervisors()[0].GetSlotsUsed() != 2 || ci.GetTopologies() != 1 {
		t.Errorf("ClusterInfo: got %v", ci)
	}

	// Reports feed List and Get, and never etcd. The workers' complete
	// latencies add up, across supervisors; the workers running are the
	// valid ones.
	rev := cl.etcd.RaftIndex()
	hist := func(ds ...time.Duration) *nimbuspb.LatencyHistogram {
		var l metrics.Latency
		for _, d := range ds {
			l.Record(d)
		}
		h := &nimbuspb.LatencyHistogram{}
		h.Buckets, h.Counts = l.Sparse()
		return h
	}
	_, err = nd.api.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: "s1", Workers: []*nimbuspb.WorkerReport{
		{Topology: resp.GetId(), Port: 6700, State: "valid", Emitted: 10, Acked: 7, Failed: 1,
			CompleteLatency: hist(time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond, 50*time.Millisecond)},
		{Topology: resp.GetId(), Port: 6701, State: "starting", Emitted: 5, Acked: 5},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nd.api.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: "s2", Workers: []*nimbuspb.WorkerReport{
		{Topology: resp.GetId(), Port: 6700, State: "valid", CompleteLatency: hist(2*time.Millisecond, 2*time.Millisecond, 2*time.Millisecond)},
	}}); err != nil {
		t.Fatal(err)
	}
	list, _ = nd.api.List(testutil.Context(t), &nimbuspb.ListRequest{})
	if s := list.GetTopologies()[0]; s.GetEmitted() != 15 || s.GetAcked() != 12 || s.GetFailed() != 1 {
		t.Errorf("List after a report: emitted/acked/failed %d/%d/%d, want 15/12/1", s.GetEmitted(), s.GetAcked(), s.GetFailed())
	}
	s := list.GetTopologies()[0]
	h := s.GetCompleteLatency()
	lat, err := metrics.LatencyFromSparse(h.GetBuckets(), h.GetCounts())
	if err != nil || lat.Count() != 10 {
		t.Fatalf("List's complete latency: %v (%d trees), want the 10 reported", err, lat.Count())
	}
	if p50, p99 := lat.Quantile(0.5), lat.Quantile(0.99); p50 < 900*time.Microsecond || p50 > 1100*time.Microsecond ||
		p99 < 45*time.Millisecond || p99 > 55*time.Millisecond {
		t.Errorf("List's complete latency: p50 %v, p99 %v; want about 1ms and 50ms", p50, p99)
	}
	if s.GetWorkers() != 2 || s.GetWorkersRunning() != 2 {
		t.Errorf("List's workers: %d running of %d, want 2 of 2 (two valid, one starting)", s.GetWorkersRunning(), s.GetWorkers())
	}
	_, err = nd.api.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: "s1", Workers: []*nimbuspb.WorkerReport{
		{Topology: resp.GetId(), Port: 6700, State: "valid", CompleteLatency: &nimbuspb.LatencyHistogram{Buckets: []int32{300}, Counts: []int64{1}}},
	}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "out of range") || !strings.Contains(err.Error(), "port 6700") {
		t.Errorf("a report with a bad histogram: %v, want InvalidArgument naming the bucket and the worker", err)
	}
	if info, _ := nd.api.Get(testutil.Context(t), &nimbuspb.GetRequest{Name: resp.GetId()}); len(info.GetWorkers()) != 3 {
		t.Errorf("Get by id: workers %v, want the three reported", info.GetWorkers())
	}
	_, err = nd.api.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: "s1", Workers: []*nimbuspb.WorkerReport{
		{Topology: resp.GetId(), Port: 6700, State: "valid", Components: []*nimbuspb.ComponentStats{
			{Component: "c", Kind: "spout", Tasks: 1, Emitted: 10, Acked: 7, Failed: 3, FailedByBolt: 1, TimedOut: 2,
				CompleteLatency: hist(time.Millisecond, time.Millisecond)},
			{Component: "d", Kind: "bolt", Tasks: 1, Executed: 10, Acked: 9, Failed: 1, ExecuteSamples: 1, ExecuteSampledNanos: 1000, Capacity: 0.25},
		}},
		{Topology: resp.GetId(), Port: 6701, State: "valid", Components: []*nimbuspb.ComponentStats{
			{Component: "c", Kind: "spout", Tasks: 1, Emitted: 5, Acked: 5,
				CompleteLatency: &nimbuspb.LatencyHistogram{Buckets: []int32{300}, Counts: []int64{1}}},
		}},
	}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `component "c" complete_latency`) {
		t.Errorf("a report with a bad component histogram: %v, want InvalidArgument naming the component", err)
	}
	if _, err := nd.api.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: "s1", Workers: []*nimbuspb.WorkerReport{
		{Topology: resp.GetId(), Port: 6700, State: "valid", Components: []*nimbuspb.ComponentStats{
			{Component: "c", Kind: "spout", Tasks: 1, Emitted: 10, Acked: 7, Failed: 3, FailedByBolt: 1, TimedOut: 2,
				CompleteLatency: hist(time.Millisecond, time.Millisecond)},
			{Component: "d", Kind: "bolt", Tasks: 1, Executed: 10, Acked: 9, Failed: 1, ExecuteSamples: 1, ExecuteSampledNanos: 1000, Capacity: 0.25},
		}},
		{Topology: resp.GetId(), Port: 6701, State: "valid", Components: []*nimbuspb.ComponentStats{
			{Component: "c", Kind: "spout", Tasks: 1, Emitted: 5, Acked: 5, CompleteLatency: hist(time.Millisecond)},
			{Component: "d", Kind: "bolt", Tasks: 2, Executed: 6, Acked: 6, ExecuteSamples: 1, ExecuteSampledNanos: 3000, Capacity: 0.75},
		}},
	}}); err != nil {
		t.Fatal(err)
	}
	// Get sums the components over the workers of both supervisors (s2
	// reported none): the counters add, the capacity is the largest.
	info, err = nd.api.Get(testutil.Context(t), &nimbuspb.GetRequest{Name: resp.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	cs := info.GetComponents()
	if len(cs) != 2 || len(info.GetWorkers()) != 3 {
		t.Fatalf("Get's components %v of %d workers, want c and d of 3", cs, len(info.GetWorkers()))
	}
	c, d := cs[0], cs[1]
	if c.GetComponent() != "c" || c.GetKind() != "spout" || c.GetTasks() != 2 || c.GetEmitted() != 15 || c.GetAcked() != 12 ||
		c.GetFailed() != 3 || c.GetFailedByBolt() != 1 || c.GetTimedOut() != 2 {
		t.Errorf("Get's spout c: %v, want 2 tasks, 15 emitted, 12 acked, 3 failed (1 by a bolt, 2 timed out)", c)
	}
	if h := c.GetCompleteLatency(); h == nil {
		t.Errorf("Get's spout c: no complete latency, want the 3 trees reported")
	} else if l, err := metrics.LatencyFromSparse(h.GetBuckets(), h.GetCounts()); err != nil || l.Count() != 3 {
		t.Errorf("Get's spout c: complete latency of %d trees (%v), want 3", l.Count(), err)
	}
	if d.GetComponent() != "d" || d.GetKind() != "bolt" || d.GetTasks() != 3 || d.GetExecuted() != 16 || d.GetAcked() != 15 ||
		d.GetFailed() != 1 || d.GetExecuteSamples() != 2 || d.GetExecuteSampledNanos() != 4000 || d.GetCapacity() != 0.75 {
		t.Errorf("Get's bolt d: %v, want 3 tasks, 16 executed, 15 acked, 1 failed, 2 samples of 4000 ns, capacity 0.75", d)
	}
	if got := cl.etcd.RaftIndex(); got != rev {
		t.Errorf("a report moved etcd's raft index from %d to %d", rev, got)
	}
}

func TestSubmitRefusesBadSubmissionsAndChangesNothing(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	nd := cl.startNimbus("n1", "", func(c *Config) { c.Cluster = gale.Config{config.NimbusArtifactMaxMB: 1} })
	nd.leads()
	good := newSubmission("ok", 1, 2)
	with := func(f func(h *nimbuspb.SubmitHeader, s *submission)) submission {
		s := newSubmission("ok", 1, 2)
		f(s.header, &s)
		return s
	}
	tests := []struct {
		name string
		sub  submission
		code codes.Code
		says []string
	}{
		{"no name", with(func(h *nimbuspb.SubmitHeader, _ *submission) { h.Name = "" }), codes.InvalidArgument, []string{"no name"}},
		{"slash in name", with(func(h *nimbuspb.SubmitHeader, _ *submission) { h.Name = "a/b" }), codes.InvalidArgument, []string{`"a/b"`, "'/'"}},
		{"no header", submission{data: good.data}, codes.InvalidArgument, []string{"header"}},
		{"no workers", with(func(h *nimbuspb.SubmitHeader, _ *submission) { h.Definition.Workers = 0 }), codes.InvalidArgument, []string{"topology.workers must be ≥ 1, got 0"}},
		{"bad definition", with(func(h *nimbuspb.SubmitHeader, _ *submission) {
			h.Definition.Components[1].Inputs[0].Component = "nope"
		}), codes.InvalidArgument, []string{`"split"`, `"nope"`}},
		{"no factory", with(func(h *nimbuspb.SubmitHeader, _ *submission) { h.Definition.Factory = "" }), codes.InvalidArgument, []string{"factory"}},
		{"cluster key in config", with(func(h *nimbuspb.SubmitHeader, _ *submission) { h.ConfigJson = []byte(`{"nimbus.seeds":["x"]}`) }),
			codes.InvalidArgument, []string{"nimbus.seeds", "only topology.* keys"}},
		{"unknown key", with(func(h *nimbuspb.SubmitHeader, _ *submission) { h.ConfigJson = []byte(`{"topology.wrokers":2}`) }),
			codes.InvalidArgument, []string{"topology.wrokers", "did you mean"}},
		{"config not JSON", with(func(h *nimbuspb.SubmitHeader, _ *submission) { h.ConfigJson = []byte(`{topology`) }),
			codes.InvalidArgument, []string{"JSON"}},
		{"bad sha", with(func(h *nimbuspb.SubmitHeader, _ *submission) { h.Artifact.Sha256 = "abc" }), codes.InvalidArgument, []string{`"abc"`, "64 lowercase hex"}},
		{"size zero", with(func(h *nimbuspb.SubmitHeader, _ *submission) { h.Artifact.Size = 0 }), codes.InvalidArgument, []string{"size must be > 0"}},
		{"over the limit", with(func(h *nimbuspb.SubmitHeader, _ *submission) { h.Artifact.Size = 2 << 20 }),
			codes.InvalidArgument, []string{"1 MiB", "nimbus.artifact.max.mb"}},
		{"bytes do not match", with(func(_ *nimbuspb.SubmitHeader, s *submission) { s.data[100] ^= 1 }), codes.InvalidArgument, []string{"SHA-256"}},
		{"fewer bytes than declared", with(func(_ *nimbuspb.SubmitHeader, s *submission) { s.data = s.data[:len(s.data)-1] }),
			codes.InvalidArgument, []string{"want"}},
		{"more bytes than declared", with(func(_ *nimbuspb.SubmitHeader, s *submission) { s.data = append(s.data, 1, 2, 3) }),
			codes.InvalidArgument, []string{"longer than"}},
	}
	rev := cl.etcd.RaftIndex()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := nd.submit(testutil.Context(t), tt.sub)
			wantCode(t, err, tt.code, tt.says...)
		})
	}
	if ts := cl.topologies(); len(ts) != 0 {
		t.Errorf("bad submissions left topologies %+v", ts)
	}
	if as, _ := cl.store.Assignments(testutil.Context(t)); len(as) != 0 {
		t.Errorf("bad submissions left assignments %+v", as)
	}
	if hs, _ := cl.store.Holders(testutil.Context(t), good.header.Artifact.Sha256); len(hs) != 0 {
		t.Errorf("bad submissions left holders %v", hs)
	}
	if files := nd.artifactFiles(); len(files) != 0 {
		t.Errorf("bad submissions left files %v", files)
	}
	if got := cl.etcd.RaftIndex(); got != rev {
		t.Errorf("bad submissions moved etcd's raft index from %d to %d", rev, got)
	}
	// The same submission, whole, goes through.
	if resp := nd.mustSubmit(good); resp.GetStatus() != "ACTIVE" {
		t.Fatalf("good submission: got %v", resp)
	}
}

func TestSubmitRefusesATakenName(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701, 6702)
	nd := cl.startNimbus("n1", "", nil)
	nd.leads()
	first := nd.mustSubmit(newSubmission("wc", 1, 1))
	_, err := nd.submit(testutil.Context(t), newSubmission("wc", 1, 2))
	wantCode(t, err, codes.AlreadyExists, `"wc"`, first.GetId(), "kill it first")
	if ts := cl.topologies(); len(ts) != 1 || ts[0].ID != first.GetId() {
		t.Errorf("topologies: got %+v, want only the first", ts)
	}
}

func TestKillRemovesEverything(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	nd := cl.startNimbus("n1", "", nil)
	nd.leads()
	sub := newSubmission("wc", 2, 1)
	id := nd.mustSubmit(sub).GetId()
	if _, err := nd.api.Kill(testutil.Context(t), &nimbuspb.KillRequest{Name: "wc", WaitSecs: 0}); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if ts := cl.topologies(); len(ts) != 0 {
		t.Errorf("after Kill: topologies %+v", ts)
	}
	if _, err := cl.store.TopologyByName(testutil.Context(t), "wc"); !errors.Is(err, coord.ErrNotFound) {
		t.Errorf("after Kill: the name is still taken: %v", err)
	}
	if a, ok := cl.assignment(id); ok {
		t.Errorf("after Kill: assignment %s", describe(a))
	}
	if nd.holds(sub.header.Artifact.Sha256) {
		t.Error("after Kill: the artifact no topology uses is still stored")
	}
	if hs, _ := cl.store.Holders(testutil.Context(t), sub.header.Artifact.Sha256); len(hs) != 0 {
		t.Errorf("after Kill: holders of the deleted artifact %v, want none", hs)
	}
	_, err := nd.api.Kill(testutil.Context(t), &nimbuspb.KillRequest{Name: "wc"})
	wantCode(t, err, codes.NotFound, `"wc"`)
	// The name is free again, and the slots.
	if resp := nd.mustSubmit(newSubmission("wc", 2, 3)); resp.GetStatus() != "ACTIVE" {
		t.Errorf("resubmit after Kill: got %v", resp)
	}
}

func TestKillKeepsAnArtifactAnotherTopologyUses(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	nd := cl.startNimbus("n1", "", nil)
	nd.leads()
	a := newSubmission("a", 1, 1)
	b := newSubmission("b", 1, 1) // the same binary
	nd.mustSubmit(a)
	nd.mustSubmit(b)
	if _, err := nd.api.Kill(testutil.Context(t), &nimbuspb.KillRequest{Name: "a", WaitSecs: 0}); err != nil {
		t.Fatal(err)
	}
	if !nd.holds(a.header.Artifact.Sha256) {
		t.Fatal("killing a deleted the artifact b still runs")
	}
}

func TestActivateDeactivateRebalance(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701, 6702, 6703)
	nd := cl.startNimbus("n1", "", nil)
	nd.leads()
	id := nd.mustSubmit(newSubmission("wc", 2, 1)).GetId()
	ctx := testutil.Context(t)
	if _, err := nd.api.Deactivate(ctx, &nimbuspb.DeactivateRequest{Name: "wc"}); err != nil {
		t.Fatal(err)
	}
	a, _ := cl.assignment(id)
	if a.Active || a.Version != 2 {
		t.Errorf("after Deactivate: %s, want inactive at v2", describe(a))
	}
	if tp, _ := cl.store.Topology(ctx, id); tp.Status != coord.StatusInactive {
		t.Errorf("after Deactivate: status %s", tp.Status)
	}
	if _, err := nd.api.Deactivate(ctx, &nimbuspb.DeactivateRequest{Name: "wc"}); err != nil {
		t.Fatal(err)
	}
	if a2, _ := cl.assignment(id); a2.Version != a.Version {
		t.Errorf("a second Deactivate rewrote the assignment: %s", describe(a2))
	}
	if _, err := nd.api.Activate(ctx, &nimbuspb.ActivateRequest{Name: "wc"}); err != nil {
		t.Fatal(err)
	}
	if a, _ = cl.assignment(id); !a.Active || a.Version != 3 {
		t.Errorf("after Activate: %s, want active at v3", describe(a))
	}

	_, err := nd.api.Rebalance(ctx, &nimbuspb.RebalanceRequest{Name: "wc", WaitSecs: 0, Executors: map[string]int32{"count": 5}})
	wantCode(t, err, codes.InvalidArgument, "count=5", "4 tasks", "1 to 4")
	_, err = nd.api.Rebalance(ctx, &nimbuspb.RebalanceRequest{Name: "wc", WaitSecs: 0, Executors: map[string]int32{"nope": 1}})
	wantCode(t, err, codes.InvalidArgument, `"nope"`)
	_, err = nd.api.Rebalance(ctx, &nimbuspb.RebalanceRequest{Name: "wc", WaitSecs: 0, NumWorkers: -1})
	wantCode(t, err, codes.InvalidArgument, "-n")
	if a2, _ := cl.assignment(id); a2.Version != a.Version {
		t.Errorf("refused rebalances rewrote the assignment: %s", describe(a2))
	}

	if _, err := nd.api.Rebalance(ctx, &nimbuspb.RebalanceRequest{Name: "wc", WaitSecs: 0, NumWorkers: 3, Executors: map[string]int32{"count": 4}}); err != nil {
		t.Fatalf("Rebalance: %v", err)
	}
	tp, _ := cl.store.Topology(ctx, id)
	if tp.Status != coord.StatusActive || tp.Workers != 3 || tp.Parallelism["count"] != 4 || tp.Rebalance != nil {
		t.Errorf("after Rebalance: %+v", tp)
	}
	d, _ := topology().WithParallelism(map[string]int{"count": 4})
	p, _ := plan.New(d)
	a, _ = cl.assignment(id)
	if !a.Active || len(a.Workers) != 3 || len(a.Executors) != len(p.Executors) || a.Parallelism["count"] != 4 || a.Version <= 3 {
		t.Errorf("after Rebalance: %s, want 3 active workers and %d executors", describe(a), len(p.Executors))
	}
}

func TestRebalanceOfAnInactiveTopologyKeepsItInactive(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	nd := cl.startNimbus("n1", "", nil)
	nd.leads()
	id := nd.mustSubmit(newSubmission("wc", 1, 1)).GetId()
	ctx := testutil.Context(t)
	if _, err := nd.api.Deactivate(ctx, &nimbuspb.DeactivateRequest{Name: "wc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := nd.api.Rebalance(ctx, &nimbuspb.RebalanceRequest{Name: "wc", WaitSecs: 0, NumWorkers: 2}); err != nil {
		t.Fatal(err)
	}
	a, _ := cl.assignment(id)
	if a.Active || len(a.Workers) != 2 {
		t.Errorf("after rebalancing an inactive topology: %s, want 2 inactive workers", describe(a))
	}
}

func TestSubmitWithoutFreeSlotsIsPendingWithTheReason(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700)
	nd := cl.startNimbus("n1", "", nil)
	nd.leads()
	resp := nd.mustSubmit(newSubmission("big", 3, 1))
	if resp.GetStatus() != "PENDING" || !strings.Contains(resp.GetPendingReason(), "3") {
		t.Fatalf("Submit needing 3 slots of 1: got %v, want PENDING naming the numbers", resp)
	}
	if _, ok := cl.assignment(resp.GetId()); ok {
		t.Error("a pending topology got an assignment")
	}
	list, _ := nd.api.List(testutil.Context(t), &nimbuspb.ListRequest{})
	if s := list.GetTopologies()[0]; s.GetPendingReason() != resp.GetPendingReason() {
		t.Errorf("List: pending reason %q, want %q", s.GetPendingReason(), resp.GetPendingReason())
	}
	// Slots that join are used without another call.
	cl.supervisor("s2", 6700, 6701)
	testutil.Eventually(t, 30*time.Second, "the pending topology is assigned once slots join", func() bool {
		_, ok := cl.assignment(resp.GetId())
		return ok
	})
}

func TestStandbyReplicatesRefusesMutationsAndTakesOver(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701, 6702, 6703)
	a := cl.startNimbus("a", "", nil)
	a.leads()
	sub := newSubmission("wc", 2, 1)
	id := a.mustSubmit(sub).GetId()
	before, _ := cl.assignment(id)

	b := cl.startNimbus("b", "", nil)
	sha := sub.header.Artifact.Sha256
	testutil.Eventually(t, 30*time.Second, "the standby replicates the artifact", func() bool { return b.holds(sha) })
	testutil.Eventually(t, 30*time.Second, "the standby records its hold", func() bool {
		hs, _ := cl.store.Holders(testutil.Context(t), sha)
		return slices.Contains(hs, "b")
	})
	if b.n.IsLeader() {
		t.Fatal("two leaders")
	}
	_, err := b.api.Kill(testutil.Context(t), &nimbuspb.KillRequest{Name: "wc"})
	wantCode(t, err, codes.FailedPrecondition, "nimbus b is a standby; the leader is "+a.n.Addr())
	_, err = b.submit(testutil.Context(t), newSubmission("other", 1, 2))
	wantCode(t, err, codes.FailedPrecondition, "standby")
	// A standby takes reports (supervisors report to every nimbus), and
	// answers reads once it has the other nimbuses' totals and has heard
	// from every supervisor.
	testutil.Eventually(t, 30*time.Second, "the standby taking the leader's totals", b.n.windows.isSynced)
	_, err = b.api.List(testutil.Context(t), &nimbuspb.ListRequest{})
	wantCode(t, err, codes.Unavailable, "has not heard from supervisor(s) s1 yet")
	if _, err := b.api.Report(testutil.Context(t), &nimbuspb.ReportRequest{Supervisor: "s1"}); err != nil {
		t.Fatalf("Report to the standby: %v", err)
	}
	if list, err := b.api.List(testutil.Context(t), &nimbuspb.ListRequest{}); err != nil || len(list.GetTopologies()) != 1 {
		t.Errorf("List on the standby: %v, %v", list, err)
	}

	a.stop()
	b.leads()
	resp := b.mustSubmit(newSubmission("second", 1, 3))
	if resp.GetStatus() != "ACTIVE" {
		t.Fatalf("Submit to the new leader: %v", resp)
	}
	if _, ok := cl.assignment(resp.GetId()); !ok {
		t.Error("the new leader did not assign its submission")
	}
	if after, _ := cl.assignment(id); after.Version != before.Version || !slices.Equal(after.Workers, before.Workers) {
		t.Errorf("the new leader moved a running topology: %s, was %s", describe(after), describe(before))
	}
}

// Storm's "leader without the code": a nimbus elected without a
// topology's artifact says which and steps down; one that has it leads.
func TestLeaderWithoutAnArtifactResigns(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	slow := func(c *Config) { c.Cluster = gale.Config{config.NimbusMonitorFreqSecs: 3600} }
	adir := t.TempDir()
	a := cl.startNimbus("a", adir, slow)
	a.leads()
	sub := newSubmission("wc", 1, 1)
	a.mustSubmit(sub)
	sha := sub.header.Artifact.Sha256
	b := cl.startNimbus("b", "", slow)
	testutil.Eventually(t, 30*time.Second, "b replicates the artifact", func() bool { return b.holds(sha) })
	testutil.Eventually(t, 30*time.Second, "b campaigns", func() bool {
		return strings.Contains(b.logs.String(), "campaigning")
	})
	// b lost it (a wiped disk) while waiting to lead.
	if err := os.Remove(filepath.Join(b.dir, "artifacts", sha)); err != nil {
		t.Fatal(err)
	}
	a.stop()
	testutil.Eventually(t, 30*time.Second, "b says it was elected without the artifact", func() bool {
		return strings.Contains(b.logs.String(), "elected without a topology's artifact")
	})
	log := b.logs.String()
	for _, want := range []string{"topology=wc", "sha256=" + sha} {
		if !strings.Contains(log, want) {
			t.Errorf("b's log does not say %q", want)
		}
	}
	testutil.Eventually(t, 30*time.Second, "b resigns", func() bool {
		_, err := cl.store.Leader(testutil.Context(t))
		return errors.Is(err, coord.ErrNotFound)
	})
	if b.n.IsLeader() {
		t.Error("b leads without the artifact")
	}
	_, err := b.api.Kill(testutil.Context(t), &nimbuspb.KillRequest{Name: "wc"})
	wantCode(t, err, codes.FailedPrecondition, "standby")

	// a comes back with the artifact and leads; b replicates from it.
	a = cl.startNimbus("a", adir, slow)
	a.leads()
	testutil.Eventually(t, 30*time.Second, "b replicates the artifact again", func() bool { return b.holds(sha) })
}

// A kill's wait is recorded in etcd: a leader killed during it does not
// lose the kill, the next one finishes it.
func TestKillInProgressSurvivesTheLeader(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	a := cl.startNimbus("a", "", nil)
	a.leads()
	sub := newSubmission("wc", 1, 1)
	id := a.mustSubmit(sub).GetId()
	b := cl.startNimbus("b", "", nil)
	testutil.Eventually(t, 30*time.Second, "b replicates the artifact", func() bool { return b.holds(sub.header.Artifact.Sha256) })

	if _, err := a.api.Kill(testutil.Context(t), &nimbuspb.KillRequest{Name: "wc", WaitSecs: 1}); err != nil {
		t.Fatal(err)
	}
	tp, err := cl.store.Topology(testutil.Context(t), id)
	if err != nil || tp.Status != coord.StatusKilled || tp.Deadline.IsZero() {
		t.Fatalf("during the kill's wait: %+v, %v; want KILLED with a deadline", tp, err)
	}
	if asg, _ := cl.assignment(id); asg.Active {
		t.Errorf("during the kill's wait: %s, want deactivated", describe(asg))
	}
	a.stop()
	b.leads()
	testutil.Eventually(t, 30*time.Second, "the new leader finishes the kill", func() bool {
		_, err := cl.store.Topology(testutil.Context(t), id)
		return errors.Is(err, coord.ErrNotFound)
	})
	if _, ok := cl.assignment(id); ok {
		t.Error("the finished kill left the assignment")
	}
}

func TestMutatingCallsNeedTheToken(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701)
	nd := cl.startNimbus("n1", "", func(c *Config) {
		c.RequireAuth = true
		c.Cluster = gale.Config{config.NimbusAuthToken: "s3cret"}
	})
	nd.leads()
	_, err := nd.submit(testutil.Context(t), newSubmission("wc", 1, 1))
	wantCode(t, err, codes.Unauthenticated, "bearer token")
	for _, md := range []string{"Bearer wrong", "s3cret", "Basic s3cret"} {
		ctx := metadataCtx(t, md)
		_, err := nd.api.Kill(ctx, &nimbuspb.KillRequest{Name: "wc"})
		wantCode(t, err, codes.Unauthenticated)
		_, err = nd.api.Deactivate(ctx, &nimbuspb.DeactivateRequest{Name: "wc"})
		wantCode(t, err, codes.Unauthenticated)
	}
	if ts := cl.topologies(); len(ts) != 0 {
		t.Fatalf("an unauthenticated submit stored %+v", ts)
	}
	// Reads need no token.
	if _, err := nd.api.List(testutil.Context(t), &nimbuspb.ListRequest{}); err != nil {
		t.Errorf("List without a token: %v", err)
	}
	ctx := metadataCtx(t, "Bearer s3cret")
	if _, err := nd.submit(ctx, newSubmission("wc", 1, 1)); err != nil {
		t.Fatalf("Submit with the token: %v", err)
	}
	if _, err := nd.api.Kill(ctx, &nimbuspb.KillRequest{Name: "wc", WaitSecs: 0}); err != nil {
		t.Fatalf("Kill with the token: %v", err)
	}
}

func TestTokenFile(t *testing.T) {
	cl := newCluster(t)
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("  from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nd := cl.startNimbus("n1", "", func(c *Config) {
		c.RequireAuth = true
		c.Cluster = gale.Config{config.NimbusAuthTokenFile: path}
	})
	nd.leads()
	_, err := nd.api.Kill(metadataCtx(t, "Bearer from-a-file"), &nimbuspb.KillRequest{Name: "none"})
	wantCode(t, err, codes.NotFound) // past the token check
	_, err = nd.api.Kill(testutil.Context(t), &nimbuspb.KillRequest{Name: "none"})
	wantCode(t, err, codes.Unauthenticated)
}

func TestNewRefusesOffLoopbackWithoutAToken(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:6627", ":6627", "10.1.2.3:6627"} {
		_, err := New(Config{Dir: t.TempDir(), Listen: listen, Endpoints: []string{"http://127.0.0.1:2379"}})
		if err == nil || !strings.Contains(err.Error(), "nimbus.auth.token") || !strings.Contains(err.Error(), listen) {
			t.Errorf("New listening on %s without a token: got %v, want an error naming the address and nimbus.auth.token", listen, err)
		}
	}
	if _, err := New(Config{Dir: t.TempDir(), Listen: "0.0.0.0:6627", Endpoints: []string{"http://127.0.0.1:2379"},
		Cluster: gale.Config{config.NimbusAuthToken: "t"}}); err != nil {
		t.Errorf("New off loopback with a token: %v", err)
	}
	if _, err := New(Config{Dir: t.TempDir(), Listen: "127.0.0.1:6627", Endpoints: []string{"http://127.0.0.1:2379"}}); err != nil {
		t.Errorf("New on loopback without a token: %v", err)
	}
}

// isolation.scheduler.machines comes from the cluster layer, checked by
// the config registry: a bad entry is refused by name.
func TestNewRefusesABadIsolationEntry(t *testing.T) {
	_, err := New(Config{Dir: t.TempDir(), Endpoints: []string{"http://127.0.0.1:2379"},
		Cluster: gale.Config{config.IsolationSchedulerMachines: map[string]any{"wordcount": 0}}})
	const want = `"isolation.scheduler.machines" in gale.yaml must map names to integers ≥ 1, got 0 for "wordcount"`
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, gale.ErrOutOfRange) {
		t.Errorf("New with 0 machines for a topology: got %v, want gale.ErrOutOfRange containing %s", err, want)
	}
}

func TestDownloadServesHeldArtifactsOnly(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700)
	nd := cl.startNimbus("n1", "", nil)
	nd.leads()
	sub := newSubmission("wc", 1, 1)
	nd.mustSubmit(sub)
	stream, err := nd.api.Download(testutil.Context(t), &nimbuspb.DownloadRequest{Sha256: sub.header.Artifact.Sha256})
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for first := true; ; first = false {
		c, err := stream.Recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Download: %v", err)
			}
			break
		}
		if first && c.GetSize() != int64(len(sub.data)) {
			t.Errorf("first chunk's size: got %d, want %d", c.GetSize(), len(sub.data))
		}
		got = append(got, c.GetData()...)
	}
	if string(got) != string(sub.data) {
		t.Errorf("Download: got %d bytes, want the %d submitted", len(got), len(sub.data))
	}
	missing := newSubmission("x", 1, 99).header.Artifact.Sha256
	stream, err = nd.api.Download(testutil.Context(t), &nimbuspb.DownloadRequest{Sha256: missing})
	if err == nil {
		_, err = stream.Recv()
	}
	wantCode(t, err, codes.NotFound, missing)
}

func metadataCtx(t *testing.T, authorization string) context.Context {
	return metadata.AppendToOutgoingContext(testutil.Context(t), "authorization", authorization)
}

// A rebalance's wait is recorded too: the next leader applies it and
// reactivates the topology.
func TestRebalanceInProgressSurvivesTheLeader(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701, 6702)
	a := cl.startNimbus("a", "", nil)
	a.leads()
	sub := newSubmission("wc", 1, 1)
	id := a.mustSubmit(sub).GetId()
	b := cl.startNimbus("b", "", nil)
	testutil.Eventually(t, 30*time.Second, "b replicates the artifact", func() bool { return b.holds(sub.header.Artifact.Sha256) })

	if _, err := a.api.Rebalance(testutil.Context(t), &nimbuspb.RebalanceRequest{Name: "wc", WaitSecs: 1, NumWorkers: 3}); err != nil {
		t.Fatal(err)
	}
	tp, _ := cl.store.Topology(testutil.Context(t), id)
	if tp.Status != coord.StatusRebalancing || tp.Rebalance == nil || tp.Rebalance.Workers != 3 || tp.Workers != 1 {
		t.Fatalf("during the rebalance's wait: %+v, want REBALANCING to 3 workers, still 1", tp)
	}
	if asg, _ := cl.assignment(id); asg.Active || len(asg.Workers) != 1 {
		t.Errorf("during the rebalance's wait: %s, want the one worker deactivated", describe(asg))
	}
	a.stop()
	b.leads()
	testutil.Eventually(t, 30*time.Second, "the new leader finishes the rebalance", func() bool {
		asg, _ := cl.assignment(id)
		return asg.Active && len(asg.Workers) == 3
	})
	if tp, _ := cl.store.Topology(testutil.Context(t), id); tp.Status != coord.StatusActive || tp.Workers != 3 || tp.Rebalance != nil {
		t.Errorf("after the rebalance: %+v", tp)
	}
}
