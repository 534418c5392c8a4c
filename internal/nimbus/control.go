package nimbus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gale-stream/gale"
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
	eff, err := gale.ResolveConfig(n.cfg.Cluster, t.Config)
	if err != nil {
		return 0, status.Errorf(codes.FailedPrecondition, "nimbus: topology %q: %v", t.Name, err)
	}
	return time.Duration(intKey(eff, gale.TopologyMessageTimeoutSecs)) * time.Second, nil
}

// Kill deactivates the topology and, after the wait, removes it: its
// record, name and assignment, and its artifact once no topology uses it.
// The kill and its deadline are recorded in the topology's record before
// Kill returns, so that a leader that takes over finishes it; with a wait
// of 0 Kill returns once everything is removed.
func (a *api) Kill(ctx context.Context, req *nimbuspb.KillRequest) (*nimbuspb.KillResponse, error) {
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	n := a.n
	if err := n.mustLead(ctx); err != nil {
		return nil, err
	}
	t, err := n.byName(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	if t.Status == coord.StatusKilled {
		return nil, status.Errorf(codes.FailedPrecondition, "nimbus: topology %q is being killed already; it goes at %s",
			t.Name, t.Deadline.Format(time.RFC3339))
	}
	wait, err := n.waitSecs(t, req.GetWaitSecs())
	if err != nil {
		return nil, err
	}
	t.Status = coord.StatusKilled
	t.Rebalance = nil
	t.Deadline = time.Now().Add(wait)
	if err := n.store.UpdateTopology(ctx, t); err != nil {
		return nil, storeError(err)
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
	t, err := n.byName(ctx, name)
	if err != nil {
		return err
	}
	want := coord.StatusInactive
	if active {
		want = coord.StatusActive
	}
	switch t.Status {
	case coord.StatusKilled:
		return status.Errorf(codes.FailedPrecondition, "nimbus: topology %q is being killed", t.Name)
	case coord.StatusRebalancing:
		// It resumes in the state asked for once rebalanced.
		if t.Rebalance == nil {
			t.Rebalance = &coord.Rebalance{}
		}
		t.Rebalance.Resume = want
	case want:
		return nil
	default:
		t.Status = want
	}
	if err := n.store.UpdateTopology(ctx, t); err != nil {
		return storeError(err)
	}
	n.log.Info("topology status", "topology", t.Name, "status", want)
	return storeError(n.reconcileNow(ctx))
}

// Rebalance deactivates the topology, waits, then reschedules it with
// the new worker count and executors and reactivates it if it was
// active. Like Kill, it is recorded with its deadline before it returns,
// and with a wait of 0 it returns once rescheduled.
func (a *api) Rebalance(ctx context.Context, req *nimbuspb.RebalanceRequest) (*nimbuspb.RebalanceResponse, error) {
	ctx, cancel := a.callCtx(ctx)
	defer cancel()
	n := a.n
	if err := n.mustLead(ctx); err != nil {
		return nil, err
	}
	t, err := n.byName(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	switch t.Status {
	case coord.StatusKilled:
		return nil, status.Errorf(codes.FailedPrecondition, "nimbus: topology %q is being killed", t.Name)
	case coord.StatusRebalancing:
		return nil, status.Errorf(codes.FailedPrecondition, "nimbus: topology %q is being rebalanced already; it is done at %s",
			t.Name, t.Deadline.Format(time.RFC3339))
	}
	r := coord.Rebalance{Workers: t.Workers, Parallelism: maps.Clone(t.Parallelism), Resume: t.Status}
	if w := req.GetNumWorkers(); w < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "nimbus: rebalance %q: -n must be ≥ 1 workers (0 keeps %d), got %d", t.Name, t.Workers, w)
	} else if w > 0 {
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
	d, err := t.Definition.WithParallelism(r.Parallelism)
	if err == nil {
		_, err = plan.New(d)
	}
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "nimbus: rebalance %q: -e %v", t.Name, err)
	}
	wait, err := n.waitSecs(t, req.GetWaitSecs())
	if err != nil {
		return nil, err
	}
	t.Status = coord.StatusRebalancing
	t.Rebalance = &r
	t.Deadline = time.Now().Add(wait)
	if err := n.store.UpdateTopology(ctx, t); err != nil {
		return nil, storeError(err)
	}
	n.log.Info("rebalancing topology", "topology", t.Name, "workers", r.Workers, "parallelism", r.Parallelism, "wait", wait)
	if err := n.reconcileNow(ctx); err != nil {
		return nil, storeError(err)
	}
	return &nimbuspb.RebalanceResponse{}, nil
}

// finishRebalance applies t's rebalance, due now: the new workers and
// executors, the status it resumes in. With topology.acker.executors
// unset (one acker per worker) the ackers follow the workers.
func (n *Nimbus) finishRebalance(t coord.Topology) (coord.Topology, error) {
	r := t.Rebalance
	if r == nil {
		r = &coord.Rebalance{Workers: t.Workers, Parallelism: t.Parallelism, Resume: coord.StatusActive}
	}
	eff, err := gale.ResolveConfig(n.cfg.Cluster, t.Config)
	if err != nil {
		return t, fmt.Errorf("topology %q: %w", t.Name, err)
	}
	if _, set := eff.Int(gale.TopologyAckerExecutors); !set {
		t.Definition.Ackers = r.Workers
	}
	t.Workers = r.Workers
	t.Parallelism = r.Parallelism
	t.Status = r.Resume
	if t.Status != coord.StatusInactive {
		t.Status = coord.StatusActive
	}
	t.Rebalance = nil
	t.Deadline = time.Time{}
	return t, nil
}

// errNotLeader ends a reconciliation on a nimbus that no longer leads.
var errNotLeader = errors.New("nimbus: no longer the leader")
