package nimbus

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// TestConcurrentKillAndRebalanceNeverUndoTheKill sends a Kill with a 30 s
// wait and a Rebalance with a 1 s wait at once, 100 times: whichever
// writes first, a Kill that returned OK stays a kill. The record is
// KILLED when both have returned, still KILLED past the rebalance's 1 s,
// and gone past the kill's 30 s. A Rebalance that loses the race is
// refused, saying the topology is being killed.
func TestConcurrentKillAndRebalanceNeverUndoTheKill(t *testing.T) {
	cl := newCluster(t)
	cl.supervisor("s1", 6700, 6701, 6702, 6703)
	clock := galetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	nd := cl.startNimbus("n1", "", func(c *Config) { c.Now = clock.Now })
	nd.leads()
	ctx := t.Context() // no deadline: 100 trials take what the machine gives them
	statusOf := func(id string) string {
		tp, err := cl.store.Topology(ctx, id)
		if errors.Is(err, coord.ErrNotFound) {
			return "gone"
		}
		if err != nil {
			t.Fatal(err)
		}
		return tp.Status
	}
	var rebalanced, refused int
	for i := range 100 {
		name := fmt.Sprintf("wc-%d", i)
		id := nd.mustSubmit(newSubmission(name, 1, uint64(i))).GetId()
		var wg sync.WaitGroup
		var killErr, rebErr error
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			_, killErr = nd.api.Kill(ctx, &nimbuspb.KillRequest{Name: name, WaitSecs: 30})
		})
		wg.Go(func() {
			<-start
			_, rebErr = nd.api.Rebalance(ctx, &nimbuspb.RebalanceRequest{Name: name, WaitSecs: 1, NumWorkers: 2})
		})
		close(start)
		wg.Wait()
		if killErr != nil {
			t.Fatalf("trial %d: Kill: %v", i, killErr)
		}
		switch {
		case rebErr == nil:
			rebalanced++
		case status.Code(rebErr) == codes.FailedPrecondition:
			wantCode(t, rebErr, codes.FailedPrecondition, fmt.Sprintf("%q is being killed", name))
			refused++
		default:
			t.Fatalf("trial %d: Rebalance: %v", i, rebErr)
		}
		if got := statusOf(id); got != coord.StatusKilled {
			t.Fatalf("trial %d: after a Kill and a Rebalance both returned (rebalance: %v), the record is %s, want KILLED", i, rebErr, got)
		}
		clock.Advance(2 * time.Second) // past the rebalance's wait
		if err := nd.n.reconcileNow(ctx); err != nil {
			t.Fatal(err)
		}
		if got := statusOf(id); got != coord.StatusKilled {
			t.Fatalf("trial %d: past the rebalance's wait, the killed topology is %s, want KILLED", i, got)
		}
		if a, ok := cl.assignment(id); ok && a.Active {
			t.Fatalf("trial %d: the killed topology's assignment is active: %s", i, describe(a))
		}
		clock.Advance(30 * time.Second) // past the kill's wait
		if err := nd.n.reconcileNow(ctx); err != nil {
			t.Fatal(err)
		}
		if got := statusOf(id); got != "gone" {
			t.Fatalf("trial %d: past the kill's wait, the topology is %s, want it removed", i, got)
		}
	}
	t.Logf("of 100 trials, the rebalance went first and was overtaken by the kill in %d, and was refused in %d", rebalanced, refused)
}
