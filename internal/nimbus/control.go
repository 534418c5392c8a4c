package nimbus

import (
	"context"
	"errors"
	"maps"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/plan"
)

// mustLead refuses a mutating call on a standby, naming the leader.
func (n *Nimbus) mustLead(ctx context.Context) error {
	if n.IsLeader() {
		return nil
	}
	leader := "not elected yet (no nimbus holds every artifact, or the election is in progress)"
	if l, err := n.store.Leader(ctx); err == nil {
		leader = l.Addr + " (" + l.ID + ")"
	}
	return status.Errorf(codes.FailedPrecondition, "nimbus %s is a standby; the leader is %s", n.id, leader)
}

// waitSecs is a call's wait: its wait_secs, or topology.message.timeout.secs
// when that is < 0.
func (n *Nimbus) waitSecs(t coord.Topology, req int32) (time.Duration, error) {
	if req >= 0 {
		return time.Duration(req) * time.Second, nil
	}
	eff, err := config.Resolve(n.cfg.Cluster, t.Config)
	if err != nil {
		return 0, status.Errorf(codes.FailedPrecondition, "nimbus: topology %q: %v", t.Name, err)
	}
	return time.Duration(intKey(eff, gale.TopologyMessageTimeoutSecs)) * time.Second, nil
}

// update is a call's write of a topology's record: it reads the record
// of the topology named name, lets change check it and change it, and
// writes it through the term's fence at the revision read. When the
// record changed in between (another call's write, the leader's loop),
// it reads it again and checks again, so that a check never holds on a
// record that is no longer there: a Kill that lands after a Rebalance
// read the topology makes the Rebalance see the kill, and be refused.
// change returns false to write nothing.
func (n *Nimbus) update(ctx context.Context, name string, change func(t *coord.Topology) (bool, error)) (coord.Topology, error) {
	for {
		n.mu.Lock()
		l := n.mu.leader
		n.mu.Unlock()
		if l == nil {
			return coord.Topology{}, n.mustLead(ctx)
		}
		t, err := n.byName(ctx, name)
		if err != nil {
			return t, err
		}
		if write, err := change(&t); err != nil || !write {
			return t, err
		}
		err = l.UpdateTopology(ctx, t)
		switch {
		case err == nil:
			return t, nil
		case errors.Is(err, coord.ErrChanged), errors.Is(err, coord.ErrNotFound):
			continue // read it again: byName says if it is gone
		case errors.Is(err, coord.ErrNotLeader):
			return t, status.Errorf(codes.FailedPrecondition,
				"nimbus %s lost the leadership before the change of topology %q was written; nothing was changed, send it again (to the new leader)", n.id, t.Name)
		}
		return t, storeError(err)
	}
}

// Kill deactivates the topology and, after the wait, removes it: its
// record, name and assignment, and its artifact once no topology uses it.
// The kill and its deadline are recorded in the topology's record before
// Kill returns, so that a leader that takes over finishes it; with a wait
// of 0 Kill returns once everything is removed. A kill overrides a
// rebalance in progress.
func (a *api) Kill(ctx context.Context, req *nimbuspb.KillRequest) (*nimbuspb.KillResponse, error) {
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	n := a.n
	if err := n.mustLead(ctx); err != nil {
		return nil, err
	}
	var wait time.Duration
	t, err := n.update(ctx, req.GetName(), func(t *coord.Topology) (bool, error) {
		if t.Status == coord.StatusKilled {
			return false, status.Errorf(codes.FailedPrecondition, "nimbus: topology %q is being killed already; it goes at %s",
				t.Name, t.Deadline.Format(time.RFC3339))
		}
		var err error
		if wait, err = n.waitSecs(*t, req.GetWaitSecs()); err != nil {
			return false, err
		}
		t.Status = coord.StatusKilled
		t.Rebalance = nil
		t.Deadline = n.cfg.Now().Add(wait)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	n.log.Info("killing topology", "topology", t.Name, "id", t.ID, "wait", wait)
	if err := n.reconcileNow(ctx); err != nil {
		return nil, storeError(err)
	}
	return &nimbuspb.KillResponse{}, nil
}

// Activate runs an inactive topology's spouts again.
func (a *api) Activate(ctx context.Context, req *nimbuspb.ActivateRequest) (*nimbuspb.ActivateResponse, error) {
	if err := a.setActive(ctx, req.GetName(), true); err != nil {
		return nil, err
	}
	return &nimbuspb.ActivateResponse{}, nil
}

// Deactivate stops an active topology's spouts; its trees in flight
// complete.
func (a *api) Deactivate(ctx context.Context, req *nimbuspb.DeactivateRequest) (*nimbuspb.DeactivateResponse, error) {
	if err := a.setActive(ctx, req.GetName(), false); err != nil {
		return nil, err
	}
	return &nimbuspb.DeactivateResponse{}, nil
}

func (a *api) setActive(ctx context.Context, name string, active bool) error {
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	n := a.n
	if err := n.mustLead(ctx); err != nil {
		return err
	}
	want := coord.StatusInactive
	if active {
		want = coord.StatusActive
	}
	changed := false
	t, err := n.update(ctx, name, func(t *coord.Topology) (bool, error) {
		switch t.Status {
		case coord.StatusKilled:
			return false, status.Errorf(codes.FailedPrecondition, "nimbus: topology %q is being killed; it goes at %s",
				t.Name, t.Deadline.Format(time.RFC3339))
		case coord.StatusRebalancing:
			// It resumes in the state asked for once rebalanced.
			if t.Rebalance == nil {
				t.Rebalance = &coord.Rebalance{Workers: t.Workers, Parallelism: t.Parallelism}
			}
			t.Rebalance.Resume = want
		case want:
			return false, nil
		default:
			t.Status = want
		}
		changed = true
		return true, nil
	})
	if err != nil || !changed {
		return err
	}
	n.log.Info("topology status", "topology", t.Name, "status", want)
	return storeError(n.reconcileNow(ctx))
}

// Rebalance deactivates the topology, waits, then reschedules it with
// the new worker count and executors and reactivates it if it was
// active. Like Kill, it is recorded with its deadline before it returns,
// and with a wait of 0 it returns once rescheduled. A topology being
// killed is not rebalanced.
func (a *api) Rebalance(ctx context.Context, req *nimbuspb.RebalanceRequest) (*nimbuspb.RebalanceResponse, error) {
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	n := a.n
	if err := n.mustLead(ctx); err != nil {
		return nil, err
	}
	if w := req.GetNumWorkers(); w < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "nimbus: rebalance %q: -n must be ≥ 1 workers (0 keeps the current count), got %d", req.GetName(), w)
	}
	var wait time.Duration
	t, err := n.update(ctx, req.GetName(), func(t *coord.Topology) (bool, error) {
		switch t.Status {
		case coord.StatusKilled:
			return false, status.Errorf(codes.FailedPrecondition, "nimbus: topology %q is being killed (it goes at %s); it cannot be rebalanced",
				t.Name, t.Deadline.Format(time.RFC3339))
		case coord.StatusRebalancing:
			return false, status.Errorf(codes.FailedPrecondition, "nimbus: topology %q is being rebalanced already; it is done at %s",
				t.Name, t.Deadline.Format(time.RFC3339))
		}
		r := coord.Rebalance{Workers: t.Workers, Parallelism: maps.Clone(t.Parallelism), Resume: t.Status}
		if w := req.GetNumWorkers(); w > 0 {
			r.Workers = int(w)
		}
		if len(req.GetExecutors()) > 0 {
			if r.Parallelism == nil {
				r.Parallelism = make(map[string]int)
			}
			for c, e := range req.GetExecutors() {
				r.Parallelism[c] = int(e)
			}
		}
		if _, err := t.Definition.WithParallelism(r.Parallelism); err != nil {
			return false, status.Errorf(codes.InvalidArgument, "nimbus: rebalance %q: -e %v", t.Name, err)
		}
		// What it becomes, bounded before it is planned.
		after := *t
		after.Rebalance = &r
		done, err := finishRebalance(n.cfg.Cluster, after)
		var d plan.Topology
		if err == nil {
			d, err = effectiveDefinition(done)
		}
		if err == nil {
			err = n.step.Limits.check(d)
		}
		if err == nil {
			_, err = plan.New(d)
		}
		if err != nil {
			return false, status.Errorf(codes.InvalidArgument, "nimbus: rebalance %q to %d workers and executors %v: %v", t.Name, r.Workers, r.Parallelism, err)
		}
		if wait, err = n.waitSecs(*t, req.GetWaitSecs()); err != nil {
			return false, err
		}
		t.Status = coord.StatusRebalancing
		t.Rebalance = &r
		t.Deadline = n.cfg.Now().Add(wait)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	n.log.Info("rebalancing topology", "topology", t.Name, "workers", t.Rebalance.Workers, "parallelism", t.Rebalance.Parallelism, "wait", wait)
	if err := n.reconcileNow(ctx); err != nil {
		return nil, storeError(err)
	}
	return &nimbuspb.RebalanceResponse{}, nil
}

// errNotLeader ends a reconciliation on a nimbus that no longer leads.
var errNotLeader = errors.New("nimbus: no longer the leader")
