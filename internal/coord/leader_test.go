package coord

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gale-stream/gale/internal/testutil"
)

// The "keep-alives are not writes": three members alive, one of
// them leading, and nothing else happening. Across several TTLs, each
// lease is renewed many times, and neither etcd's revision nor its raft
// index moves.
func TestKeepAlivesAreNotWrites(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	var ms []*Membership
	for _, id := range []string{"s1", "s2"} {
		m, err := cl.s.JoinSupervisor(ctx, Supervisor{ID: id, Ports: []int{6700, 6701}}, testTTL)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	n, err := cl.s.JoinNimbus(ctx, Nimbus{ID: "n1"}, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	ms = append(ms, n)
	if err := n.Hold(ctx, "abc"); err != nil {
		t.Fatal(err)
	}
	l, err := cl.s.Campaign(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Resign(ctx)

	revision := func() int64 {
		t.Helper()
		r, err := cl.c.Get(ctx, "/gale/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		return r.Header.Revision
	}
	rev0, raft0 := revision(), cl.e.RaftIndex()
	var ka0 []int64
	for _, m := range ms {
		ka0 = append(ka0, m.keepAlives.Load())
	}
	// The client renews every TTL/3: 12 renewals are 4 TTLs.
	const renewals = 12
	testutil.Eventually(t, 30*time.Second, "12 keep-alives each", func() bool {
		for i, m := range ms {
			if m.keepAlives.Load()-ka0[i] < renewals {
				return false
			}
		}
		return true
	})
	for i, m := range ms {
		ttl, err := cl.c.TimeToLive(ctx, m.lease())
		if err != nil {
			t.Fatal(err)
		}
		if ttl.TTL <= 0 || m.losses.Load() != 0 {
			t.Fatalf("member %d: lease TTL %d, %d losses; want a live lease never lost", i, ttl.TTL, m.losses.Load())
		}
	}
	if rev, raft := revision(), cl.e.RaftIndex(); rev != rev0 || raft != raft0 {
		t.Errorf("over %d keep-alives each: revision %d → %d, raft index %d → %d; want both unchanged",
			renewals, rev0, rev, raft0, raft)
	}
	// The measure sees a write.
	if _, err := cl.c.Put(ctx, "/gale/probe", ""); err != nil {
		t.Fatal(err)
	}
	if rev, raft := revision(), cl.e.RaftIndex(); rev == rev0 || raft == raft0 {
		t.Errorf("after a put: revision %d → %d, raft index %d → %d; want both moved", rev0, rev, raft0, raft)
	}
}

func TestCampaignResignAndLostLease(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	if _, err := cl.s.Leader(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Leader with no nimbus: got %v, want ErrNotFound", err)
	}
	// Each nimbus with its own client, as in separate processes.
	join := func(id string) (*Store, *Membership) {
		c := dial(t, cl.e.Endpoints)
		s := NewStore(c)
		t.Cleanup(func() { s.Close(); c.Close() })
		m, err := s.JoinNimbus(ctx, Nimbus{ID: id, Addr: id + ":6627"}, testTTL)
		if err != nil {
			t.Fatal(err)
		}
		return s, m
	}
	sa, a := join("a")
	sb, b := join("b")
	type result struct {
		l   *Leadership
		err error
	}
	campaign := func(ctx context.Context, s *Store, m *Membership) <-chan result {
		ch := make(chan result, 1)
		go func() {
			l, err := s.Campaign(ctx, m)
			ch <- result{l, err}
		}()
		return ch
	}
	leads := func(what string, r <-chan result, id string) *Leadership {
		t.Helper()
		var got result
		select {
		case got = <-r:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: %s is not leader after 30 s", what, id)
		}
		if got.err != nil {
			t.Fatalf("%s: campaign of %s: %v", what, id, got.err)
		}
		n, err := cl.s.Leader(ctx)
		if err != nil || n.ID != id || n.Addr != id+":6627" {
			t.Fatalf("%s: Leader got %+v, %v; want %s", what, n, err, id)
		}
		return got.l
	}
	la := leads("first", campaign(ctx, sa, a), "a")
	rb := campaign(ctx, sb, b)
	select {
	case r := <-rb:
		t.Fatalf("b's campaign returned while a leads: %+v", r)
	case <-time.After(500 * time.Millisecond):
	}

	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if !received(la.Lost(), 0) {
		t.Error("Lost open after Resign")
	}
	lb := leads("after a resigned", rb, "b")

	ra := campaign(ctx, sa, a)
	// b's lease goes (as when b is cut off past the TTL): its term ends,
	// and a, campaigning, takes over.
	if _, err := cl.c.Revoke(ctx, b.lease()); err != nil {
		t.Fatal(err)
	}
	if !received(lb.Lost(), 30*time.Second) {
		t.Fatal("b's Lost open after its lease was revoked")
	}
	la = leads("after b's lease was revoked", ra, "a")
	testutil.Eventually(t, 30*time.Second, "b's membership is back", func() bool {
		ns, err := cl.s.Nimbuses(ctx)
		return err == nil && len(ns) == 2
	})

	// A campaign gives up with its context, and leaves no key behind.
	cctx, cancel := context.WithCancel(ctx)
	rb = campaign(cctx, sb, b)
	cancel()
	if r := <-rb; r.err == nil {
		t.Error("b's campaign succeeded after its context was done, while a leads")
	}

	// Closing the membership ends the term too, and no one leads.
	a.Close()
	if !received(la.Lost(), 30*time.Second) {
		t.Fatal("a's Lost open after its membership closed")
	}
	if n, err := cl.s.Leader(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("Leader after the leader left: got %+v, %v; want ErrNotFound", n, err)
	}
}

// A leader's writes are fenced by its term: once its election key is
// gone from etcd (its lease expired while it was cut off, say), a write
// it makes before it notices is refused and changes nothing, and the
// next leader's writes stand.
func TestLeaderWritesAreFenced(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	join := func(id string) (*Store, *Membership) {
		c := dial(t, cl.e.Endpoints)
		s := NewStore(c)
		t.Cleanup(func() { s.Close(); c.Close() })
		m, err := s.JoinNimbus(ctx, Nimbus{ID: id}, testTTL)
		if err != nil {
			t.Fatal(err)
		}
		return s, m
	}
	sa, a := join("a")
	sb, b := join("b")
	la, err := sa.Campaign(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	topo := Topology{ID: "t-1", Name: "t"}
	if err := cl.s.CreateTopology(ctx, topo); err != nil {
		t.Fatal(err)
	}
	if err := la.PutAssignment(ctx, Assignment{Topology: "t-1", Version: 1}); err != nil {
		t.Fatalf("the leader's write: %v", err)
	}
	// What the expiry of a's lease does in etcd, before a can notice.
	if _, err := cl.c.Delete(ctx, la.e.Key()); err != nil {
		t.Fatal(err)
	}
	version := func() int64 {
		t.Helper()
		as, err := cl.s.Assignments(ctx)
		if err != nil || len(as) != 1 {
			t.Fatalf("assignments: %+v, %v; want one", as, err)
		}
		return as[0].Version
	}
	if err := la.PutAssignment(ctx, Assignment{Topology: "t-1", Version: 2}); !errors.Is(err, ErrNotLeader) {
		t.Errorf("a's put after its term ended: %v, want ErrNotLeader", err)
	}
	if v := version(); v != 1 {
		t.Errorf("after a's refused put the assignment has version %d, want 1", v)
	}
	lb, err := sb.Campaign(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Resign(ctx)
	if err := lb.PutAssignment(ctx, Assignment{Topology: "t-1", Version: 3}); err != nil {
		t.Fatalf("the new leader's write: %v", err)
	}
	if err := la.DeleteAssignment(ctx, "t-1"); !errors.Is(err, ErrNotLeader) {
		t.Errorf("a's delete of the assignment: %v, want ErrNotLeader", err)
	}
	if err := la.DeleteTopology(ctx, "t-1"); !errors.Is(err, ErrNotLeader) {
		t.Errorf("a's delete of the topology: %v, want ErrNotLeader", err)
	}
	read, err := cl.s.Topology(ctx, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	killed := read
	killed.Status = StatusKilled
	if err := la.UpdateTopology(ctx, killed); !errors.Is(err, ErrNotLeader) {
		t.Errorf("a's update of the topology: %v, want ErrNotLeader", err)
	}
	if err := la.CreateTopology(ctx, Topology{ID: "t-2", Name: "t2"}); !errors.Is(err, ErrNotLeader) {
		t.Errorf("a's create of a topology: %v, want ErrNotLeader", err)
	}
	if err := la.Write(ctx, TopologyWrite{ID: "t-1", Name: "t", Rev: read.Rev, Remove: true}); !errors.Is(err, ErrNotLeader) {
		t.Errorf("a's removal of the topology: %v, want ErrNotLeader", err)
	}
	if v := version(); v != 3 {
		t.Errorf("the assignment has version %d after a's refused writes, want b's 3", v)
	}
	// b's writes hold only at the revisions they were decided on.
	if err := lb.UpdateTopology(ctx, killed); err != nil {
		t.Fatalf("b's update of the topology: %v", err)
	}
	rebalancing := read
	rebalancing.Status = StatusRebalancing
	if err := lb.UpdateTopology(ctx, rebalancing); !errors.Is(err, ErrChanged) {
		t.Errorf("b's second update decided on the same read: %v, want ErrChanged", err)
	}
	if got, _ := cl.s.Topology(ctx, "t-1"); got.Status != StatusKilled {
		t.Errorf("after the refused update the status is %q, want KILLED", got.Status)
	}
	as, _ := cl.s.Assignments(ctx)
	if err := lb.Write(ctx, TopologyWrite{ID: "t-1", Name: "t", Rev: read.Rev, AssignmentRev: as[0].Rev,
		Assignment: &Assignment{Topology: "t-1", Version: 4}}); !errors.Is(err, ErrChanged) {
		t.Errorf("b's assignment decided on the topology's old record: %v, want ErrChanged", err)
	}
	if v := version(); v != 3 {
		t.Errorf("the assignment has version %d after b's refused write, want 3", v)
	}
	if err := lb.CreateTopology(ctx, Topology{ID: "t-2", Name: "t2"}); err != nil {
		t.Errorf("b's create of a topology: %v", err)
	}
	if _, err := cl.s.Topology(ctx, "t-1"); err != nil {
		t.Errorf("the topology after a's refused delete: %v", err)
	}
	if err := lb.DeleteTopology(ctx, "t-1"); err != nil {
		t.Errorf("b's delete of the topology: %v", err)
	}
	if ts, err := cl.s.Topologies(ctx); err != nil || len(ts) != 1 || ts[0].ID != "t-2" {
		t.Errorf("topologies after b's delete: %+v, %v; want t-2 only", ts, err)
	}
}
