package nimbus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/gale-stream/gale/internal/coord"
)

// elect campaigns for leadership whenever this nimbus holds every
// artifact of every topology, and leads while it is leader. It returns
// when ctx is done, resigning if it leads.
func (n *Nimbus) elect(ctx context.Context) {
	for ctx.Err() == nil {
		if missing, err := n.missing(ctx); err != nil || len(missing) > 0 {
			// The replication loop pokes synced when it stores one.
			select {
			case <-ctx.Done():
				return
			case <-n.synced:
			case <-time.After(n.monitor):
			}
			continue
		}
		n.log.Debug("campaigning")
		l, err := n.store.Campaign(ctx, n.member)
		if err != nil {
			if ctx.Err() == nil {
				n.log.Warn("campaign for leadership", "err", err)
				sleepCtx(ctx, time.Second)
			}
			continue
		}
		// What this nimbus held when it campaigned may not be all there
		// is now: a leader without a topology's artifact could not give
		// it to the supervisors (Storm's "leader without the code").
		missing, err := n.missing(ctx)
		if err == nil && len(missing) > 0 {
			for _, m := range missing {
				n.log.Error("elected without a topology's artifact; resigning so that a nimbus that holds it leads",
					"topology", m.Name, "id", m.ID, "sha256", m.Artifact.SHA256)
			}
		}
		if err != nil || len(missing) > 0 {
			n.resign(l)
			continue
		}
		if !n.lead(ctx, l) {
			n.resign(l)
		}
	}
}

func (n *Nimbus) resign(l *coord.Leadership) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Resign(ctx); err != nil {
		n.log.Warn("resign the leadership", "err", err)
	}
}

// missing returns the topologies whose artifact this nimbus does not hold.
func (n *Nimbus) missing(ctx context.Context) ([]coord.Topology, error) {
	ts, err := n.store.Topologies(ctx)
	if err != nil {
		return nil, err
	}
	var out []coord.Topology
	for _, t := range ts {
		if !n.blobs.Has(t.Artifact.SHA256) {
			out = append(out, t)
		}
	}
	return out, nil
}

// lead is the leader's loop: it reconciles on every change of the
// supervisors, topologies or assignments, every nimbus.monitor.freq.secs,
// when a kill's or rebalance's wait ends, and when a call asks. It
// returns when ctx is done or the leadership is lost, and reports which.
// A lost leadership also cancels the reconcile in progress: one blocked
// on an etcd that does not answer would otherwise keep this nimbus
// leading, taking reports and calls, long after its lease has expired
// and another may lead.
func (n *Nimbus) lead(ctx context.Context, l *coord.Leadership) (lost bool) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-l.Lost():
			cancel()
		case <-ctx.Done():
		}
	})
	defer func() {
		cancel()
		wg.Wait()
	}()
	n.mu.Lock()
	n.mu.leader = l
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.mu.leader = nil
		n.mu.pending = make(map[string]string)
		n.mu.Unlock()
	}()
	n.log.Info("leading")
	n.dropOrphans(ctx)

	sups := n.store.Changes(ctx, coord.SupervisorsPrefix)
	topos := n.store.Changes(ctx, coord.TopologiesPrefix)
	asgs := n.store.Changes(ctx, coord.AssignmentsPrefix)
	tick := time.NewTicker(n.monitor)
	defer tick.Stop()
	due := time.NewTimer(time.Hour)
	defer due.Stop()
	for {
		select {
		case <-ctx.Done():
			return n.lostLeadership(l)
		case <-l.Lost():
			return n.lostLeadership(l)
		case _, ok := <-sups:
			if !ok { // ctx is done
				return n.lostLeadership(l)
			}
		case _, ok := <-topos:
			if !ok { // ctx is done
				return n.lostLeadership(l)
			}
		case _, ok := <-asgs:
			if !ok { // ctx is done
				return n.lostLeadership(l)
			}
		case <-tick.C:
		case <-due.C:
		case <-n.kick:
		}
		next, err := n.reconcile(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return n.lostLeadership(l)
			}
			n.log.Warn("reconcile", "err", err)
			continue
		}
		if !next.IsZero() {
			due.Reset(max(next.Sub(n.cfg.Now()), 0))
		}
	}
}

// lostLeadership says whether l has ended (and logs it); false means
// the nimbus is stopping.
func (n *Nimbus) lostLeadership(l *coord.Leadership) bool {
	select {
	case <-l.Lost():
		n.log.Warn("leadership lost")
		return true
	default:
		return false
	}
}

// reconcileNow reconciles at once, for a call that answers with the
// outcome.
func (n *Nimbus) reconcileNow(ctx context.Context) error {
	_, err := n.reconcile(ctx)
	return err
}

// maxConflicts bounds the steps a reconciliation retries when a record
// it decided on changed before its write landed.
const maxConflicts = 100

// reconcile brings etcd in line with the topologies' records: it reads
// them, decides with Step at Config.Now, and applies the decision's
// writes, each one transaction on the revisions read and through the
// term's fence. When a record changed between the read and a write (a
// call's write landed), it reads and decides again. A write that fails
// on its own (an assignment too large for etcd) leaves only its topology
// unscheduled, saying why; the others are scheduled all the same. It
// returns the earliest deadline still to come.
func (n *Nimbus) reconcile(ctx context.Context) (next time.Time, err error) {
	n.reconcileMu.Lock()
	defer n.reconcileMu.Unlock()
	n.mu.Lock()
	l := n.mu.leader
	n.mu.Unlock()
	if l == nil {
		return time.Time{}, errNotLeader
	}
	for conflicts := 0; ; conflicts++ {
		st, err := n.readState(ctx)
		if err != nil {
			return next, err
		}
		d := Step(st, n.cfg.Now(), n.step)
		err = n.apply(ctx, l, d)
		if errors.Is(err, errConflict) && conflicts < maxConflicts {
			continue
		}
		return d.Next, err
	}
}

// errConflict says a write was refused because a record changed after
// the step read it.
var errConflict = errors.New("nimbus: a record changed under the reconciliation")

// readState reads what a step decides on, as of one revision.
func (n *Nimbus) readState(ctx context.Context) (State, error) {
	var st State
	var err error
	st.Topologies, st.Assignments, st.Supervisors, err = n.store.Snapshot(ctx)
	return st, err
}

// apply makes d's writes through l, in order, and records the pending
// reasons. It stops at the first write refused on a changed record
// (errConflict) or a lost term, and at a failed removal, whose slots the
// later writes may reuse; the failure of a topology's own write is that
// topology's pending reason, and the others go on.
func (n *Nimbus) apply(ctx context.Context, l *coord.Leadership, d Decision) error {
	pending := d.Pending
	for _, w := range d.Writes {
		err := l.Write(ctx, w.TopologyWrite)
		switch {
		case err == nil:
			n.logWrite(w)
			if w.Remove {
				n.windows.forget(w.ID)
				if sha, ok := d.Unused[w.ID]; ok && !n.uploading(sha) {
					n.drop(ctx, sha)
				}
			}
			continue
		case errors.Is(err, coord.ErrChanged), errors.Is(err, coord.ErrNotFound):
			return fmt.Errorf("%w: %w", errConflict, err)
		case errors.Is(err, coord.ErrNotLeader), ctx.Err() != nil, w.Remove, w.Assignment == nil:
			return err
		}
		// This topology's assignment cannot be written (too large for
		// etcd, say): it alone runs nowhere, and says why.
		pending[w.ID] = fmt.Sprintf("its assignment of %d executors could not be written to etcd: %v; "+
			"lower its parallelism (gale rebalance -e) or kill it", len(w.Assignment.Executors), err)
		if w.Contested {
			// Its slots went to others: it must not keep them.
			wd := coord.TopologyWrite{ID: w.ID, Name: w.Name, Rev: w.Rev, AssignmentRev: w.AssignmentRev, DeleteAssignment: true}
			if err := l.Write(ctx, wd); err != nil {
				if errors.Is(err, coord.ErrChanged) || errors.Is(err, coord.ErrNotFound) {
					return fmt.Errorf("%w: %w", errConflict, err)
				}
				return err
			}
		}
	}
	n.mu.Lock()
	last := n.mu.pending
	n.mu.pending = pending
	n.mu.Unlock()
	for id, why := range pending {
		if last[id] != why {
			n.log.Warn("topology not scheduled", "id", id, "reason", why)
		}
	}
	return nil
}

// logWrite logs a write that landed.
func (n *Nimbus) logWrite(w Write) {
	switch {
	case w.Remove:
		n.log.Info("killed topology", "topology", w.Name, "id", w.ID)
		return
	case w.Topology != nil:
		t := w.Topology
		n.log.Info("rebalanced topology", "topology", t.Name, "workers", t.Workers, "parallelism", t.Parallelism, "status", t.Status)
	}
	switch a := w.Assignment; {
	case a != nil:
		n.log.Info("assigned", "topology", w.Name, "version", a.Version, "workers", len(a.Workers), "active", a.Active)
	case w.DeleteAssignment && w.Rev != 0:
		n.log.Warn("withdrew the assignment of a pending topology whose slots another took", "topology", w.Name)
	case w.DeleteAssignment:
		n.log.Info("withdrew the assignment of a topology that is gone", "topology", w.Name, "id", w.ID)
	}
}

// sameAssignment reports whether a and b differ in nothing but Version.
func sameAssignment(a, b coord.Assignment) bool {
	return a.Topology == b.Topology && a.Name == b.Name && a.Active == b.Active &&
		slices.Equal(a.Workers, b.Workers) && slices.Equal(a.Executors, b.Executors) &&
		maps.Equal(a.Parallelism, b.Parallelism) && a.Artifact == b.Artifact &&
		a.Factory == b.Factory && maps.Equal(a.Params, b.Params) && a.Secret == b.Secret &&
		sameConfig(a.Config, b.Config)
}

// sameConfig compares two config layers as JSON, which is how etcd keeps
// them.
func sameConfig(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// dropOrphans deletes the artifacts no topology uses and no submission is
// storing: those of submissions a nimbus died in the middle of.
func (n *Nimbus) dropOrphans(ctx context.Context) {
	ts, err := n.store.Topologies(ctx)
	if err != nil {
		return // the next leader tries again
	}
	stored, err := n.blobs.List()
	if err != nil {
		n.log.Warn("list the artifacts", "err", err)
		return
	}
	for _, sha := range stored {
		if !slices.ContainsFunc(ts, func(t coord.Topology) bool { return t.Artifact.SHA256 == sha }) && !n.uploading(sha) {
			n.drop(ctx, sha)
		}
	}
}
