package coord

import (
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/testutil"
)

// Status's raft index and revision move with a write, and stand still
// while a membership's lease is kept alive: keep-alives are not writes.
func TestStatusMovesOnWritesNotOnKeepAlives(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	idx0, rev0, err := Status(ctx, cl.c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := cl.s.JoinSupervisor(ctx, Supervisor{ID: "s1", Host: "127.0.0.1", Ports: []int{6700}}, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	idx1, rev1, err := Status(ctx, cl.c)
	if err != nil {
		t.Fatal(err)
	}
	// A lease grant and a transaction putting the key.
	if idx1 < idx0+2 || rev1 != rev0+1 {
		t.Fatalf("after a join: raft index %d → %d, revision %d → %d; want the index up by ≥ 2 and the revision by 1",
			idx0, idx1, rev0, rev1)
	}
	start := m.keepAlives.Load()
	testutil.Eventually(t, 30*time.Second, "3 keep-alives answered", func() bool { return m.keepAlives.Load() >= start+3 })
	idx2, rev2, err := Status(ctx, cl.c)
	if err != nil {
		t.Fatal(err)
	}
	if idx2 != idx1 || rev2 != rev1 {
		t.Errorf("over 3 keep-alives: raft index %d → %d, revision %d → %d; want both unchanged", idx1, idx2, rev1, rev2)
	}
}

// An abandoned membership keeps its key until the lease's TTL runs out,
// as a killed process does, and then loses it.
func TestMembershipAbandonLeavesTheLeaseToExpire(t *testing.T) {
	cl := newCluster(t)
	ctx := testutil.Context(t)
	m, err := cl.s.JoinSupervisor(ctx, Supervisor{ID: "s1", Host: "127.0.0.1", Ports: []int{6700}}, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	key := SupervisorsPrefix + "s1"
	m.Abandon()
	if leaseOf(t, cl.c, key) == 0 {
		t.Fatal("the key is gone as soon as Abandon returned: the lease was revoked, want it left to expire")
	}
	testutil.Eventually(t, 30*time.Second, "the abandoned lease expired", func() bool { return leaseOf(t, cl.c, key) == 0 })
	m.Close() // does nothing more, and does not block
	m.Abandon()
}
