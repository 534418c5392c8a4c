package coord

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/testutil"
)

func testTopology(id, name string) Topology {
	return Topology{
		ID: id, Name: name,
		Definition: plan.Topology{Components: []plan.Component{
			{ID: "words", Spout: true, Tasks: 2, Parallelism: 2, Streams: []string{"default"}},
		}},
		Workers:     2,
		Factory:     "wordcount",
		Params:      map[string]string{"rate": "10"},
		Config:      map[string]any{"topology.debug": true},
		Artifact:    Artifact{SHA256: "ab12", Size: 3, GOOS: "linux", GOARCH: "amd64", GaleVersion: "0.1", WireVersion: 1},
		Status:      StatusActive,
		Secret:      "00ff",
		SubmittedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
	}
}

func TestTopologyNameIsTakenOnce(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	a := testTopology("t-1", "words")
	if err := cl.s.CreateTopology(ctx, a); err != nil {
		t.Fatal(err)
	}
	err := cl.s.CreateTopology(ctx, testTopology("t-2", "words"))
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), `"words"`) || !strings.Contains(err.Error(), "t-1") {
		t.Fatalf("second create of the name: got %v, want ErrExists naming %q and t-1", err, "words")
	}
	if _, err := cl.s.Topology(ctx, "t-2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused topology: got %v, want ErrNotFound (nothing written)", err)
	}
	if err := cl.s.CreateTopology(ctx, testTopology("t-1", "other")); !errors.Is(err, ErrExists) {
		t.Errorf("create with a used id: got %v, want ErrExists", err)
	}
	if _, err := cl.s.TopologyByName(ctx, "other"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the name of the refused topology: got %v, want ErrNotFound", err)
	}

	got, err := cl.s.TopologyByName(ctx, "words")
	if err != nil {
		t.Fatal(err)
	}
	if got.Rev == 0 {
		t.Error("read back: Rev is 0, want the record's mod revision")
	}
	a.Rev = got.Rev
	if !reflect.DeepEqual(got, a) {
		t.Errorf("read back:\n got %+v\nwant %+v", got, a)
	}
	a.Status = StatusInactive
	if err := cl.s.UpdateTopology(ctx, a); err != nil {
		t.Fatal(err)
	}
	// A second write decided on the same read is refused: the record
	// changed since.
	stale := a
	stale.Status = StatusKilled
	if err := cl.s.UpdateTopology(ctx, stale); !errors.Is(err, ErrChanged) {
		t.Errorf("update at a stale revision: got %v, want ErrChanged", err)
	}
	a, _ = cl.s.Topology(ctx, "t-1")
	if got, _ := cl.s.Topology(ctx, "t-1"); got.Status != StatusInactive {
		t.Errorf("after update: status %q, want %q", got.Status, StatusInactive)
	}
	renamed := a
	renamed.Name = "other"
	if err := cl.s.UpdateTopology(ctx, renamed); !errors.Is(err, ErrNotFound) {
		t.Errorf("update under another name: got %v, want ErrNotFound", err)
	}
	if err := cl.s.UpdateTopology(ctx, testTopology("t-9", "nine")); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of a missing topology: got %v, want ErrNotFound", err)
	}

	if err := cl.s.CreateTopology(ctx, testTopology("t-0", "zero")); err != nil {
		t.Fatal(err)
	}
	all, err := cl.s.Topologies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != "t-0" || all[1].ID != "t-1" {
		t.Errorf("Topologies: got %+v, want t-0 and t-1 in order", all)
	}
}

func TestDeleteTopologyRemovesRecordNameAndAssignment(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	if err := cl.s.CreateTopology(ctx, testTopology("t-1", "words")); err != nil {
		t.Fatal(err)
	}
	a := Assignment{Topology: "t-1", Name: "words", Version: 1,
		Workers: []Slot{{Supervisor: "s1", Host: "127.0.0.1", Port: 6700}}, Executors: []int{0, 0}, Active: true}
	if err := cl.s.PutAssignment(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := cl.s.Assignments(ctx)
	if err != nil || len(got) != 1 || got[0].Rev == 0 {
		t.Fatalf("Assignments: got %+v, %v; want [%+v] at a revision", got, err, a)
	}
	if g := got[0]; !reflect.DeepEqual(withoutRev(g), a) {
		t.Fatalf("Assignments: got %+v; want [%+v]", got, a)
	}

	if err := cl.s.DeleteTopology(ctx, "t-1"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{TopologiesPrefix + "t-1", namesPrefix + "words", AssignmentsPrefix + "t-1"} {
		r, err := cl.c.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Kvs) != 0 {
			t.Errorf("%s still there after DeleteTopology", k)
		}
	}
	if err := cl.s.DeleteTopology(ctx, "t-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: got %v, want ErrNotFound", err)
	}
	if err := cl.s.CreateTopology(ctx, testTopology("t-2", "words")); err != nil {
		t.Errorf("the name is free again: %v", err)
	}
}

func TestChangesFiresOnItsPrefixAcrossAnEtcdRestart(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	ch := cl.s.Changes(ctx, AssignmentsPrefix)
	if !received(ch, 30*time.Second) {
		t.Fatal("no first send")
	}
	// The first watch's creation sends once more; wait for it (or it is
	// coalesced with the first) before asserting silence.
	received(ch, time.Second)

	put := func(k string) {
		t.Helper()
		if _, err := cl.c.Put(ctx, k, "{}"); err != nil {
			t.Fatal(err)
		}
	}
	put(TopologiesPrefix + "x")
	put("/gale/assignmentsX")
	if received(ch, 500*time.Millisecond) {
		t.Error("fired on a put under another prefix")
	}
	put(AssignmentsPrefix + "x")
	if !received(ch, 30*time.Second) {
		t.Fatal("no send after a put under the prefix")
	}
	if _, err := cl.c.Delete(ctx, AssignmentsPrefix+"x"); err != nil {
		t.Fatal(err)
	}
	if !received(ch, 30*time.Second) {
		t.Fatal("no send after a delete under the prefix")
	}

	cl.restartEtcd(func() {})
	put(AssignmentsPrefix + "y")
	if !received(ch, 30*time.Second) {
		t.Fatal("no send after a put once etcd was restarted")
	}
}

func TestChangesClosesWithItsContextAndTheStore(t *testing.T) {
	cl := newCluster(t)
	ctx, cancel := context.WithCancel(testutil.Context(t))
	a := cl.s.Changes(ctx, TopologiesPrefix)
	b := cl.s.Changes(testutil.Context(t), TopologiesPrefix)
	cancel()
	drainClosed(t, a, "after its ctx is done")
	cl.s.Close()
	drainClosed(t, b, "after Store.Close")
	drainClosed(t, cl.s.Changes(testutil.Context(t), TopologiesPrefix), "when made on a closed Store")
}

func drainClosed(t *testing.T, ch <-chan struct{}, when string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("channel not closed %s", when)
		}
	}
}

func withoutRev(a Assignment) Assignment {
	a.Rev = 0
	return a
}

func TestSnapshotReadsEverythingAtTheirRevisions(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	if err := cl.s.CreateTopology(ctx, testTopology("t-1", "words")); err != nil {
		t.Fatal(err)
	}
	if err := cl.s.PutAssignment(ctx, Assignment{Topology: "t-1", Name: "words", Version: 1}); err != nil {
		t.Fatal(err)
	}
	m, err := cl.s.JoinSupervisor(ctx, Supervisor{ID: "s1", Host: "127.0.0.1", Ports: []int{6700}}, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ts, as, sups, err := cl.s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].ID != "t-1" || len(as) != 1 || as[0].Topology != "t-1" || len(sups) != 1 || sups[0].ID != "s1" {
		t.Fatalf("snapshot: %+v, %+v, %+v; want t-1, its assignment and s1", ts, as, sups)
	}
	if tp, _ := cl.s.Topology(ctx, "t-1"); ts[0].Rev != tp.Rev || as[0].Rev <= ts[0].Rev {
		t.Errorf("snapshot revisions: topology %d (a read says %d), assignment %d; want the records' mod revisions", ts[0].Rev, tp.Rev, as[0].Rev)
	}
}
