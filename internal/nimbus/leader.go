package nimbus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/scheduler"
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
			due.Reset(max(time.Until(next), 0))
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

// reconcile brings etcd in line with the topologies' records: it finishes
// the kills and rebalances whose wait is over, schedules every topology
// over the live supervisors in submission order, and writes the
// assignments that changed, each with its Version bumped. A topology in
// a kill's or a rebalance's wait keeps its workers where they are,
// deactivated, and its slots stay its own. It returns the earliest
// deadline still to come.
func (n *Nimbus) reconcile(ctx context.Context) (next time.Time, err error) {
	n.reconcileMu.Lock()
	defer n.reconcileMu.Unlock()
	n.mu.Lock()
	l := n.mu.leader
	n.mu.Unlock()
	if l == nil {
		return time.Time{}, errNotLeader
	}
	// Reads from the store; writes through the term, which etcd refuses
	// once it has ended, even before this nimbus notices.
	s := n.store
	ts, err := s.Topologies(ctx)
	if err != nil {
		return next, err
	}
	bySubmission(ts)
	asgList, err := s.Assignments(ctx)
	if err != nil {
		return next, err
	}
	asgs := make(map[string]coord.Assignment, len(asgList))
	for _, a := range asgList {
		asgs[a.Topology] = a
	}
	supList, err := s.Supervisors(ctx)
	if err != nil {
		return next, err
	}

	now := time.Now()
	live := ts[:0:0]
	for _, t := range ts {
		due := !t.Deadline.IsZero() && !now.Before(t.Deadline)
		switch {
		case t.Status == coord.StatusKilled && due:
			if err := n.remove(ctx, l, t, ts); err != nil {
				return next, err
			}
			delete(asgs, t.ID)
			continue
		case t.Status == coord.StatusRebalancing && due:
			done, err := n.finishRebalance(t)
			if err != nil {
				// It stays as it is, deactivated, and says why.
				n.log.Error("rebalance", "topology", t.Name, "err", err)
				break
			}
			if err := s.UpdateTopology(ctx, done); err != nil {
				return next, err
			}
			t = done
			n.log.Info("rebalanced topology", "topology", t.Name, "workers", t.Workers, "parallelism", t.Parallelism, "status", t.Status)
		case !t.Deadline.IsZero() && (next.IsZero() || t.Deadline.Before(next)):
			next = t.Deadline
		}
		live = append(live, t)
	}

	reqs := make([]scheduler.Request, 0, len(live))
	pending := make(map[string]string)
	for _, t := range live {
		d, err := effectiveDefinition(t)
		var p plan.Plan
		if err == nil {
			p, err = plan.New(d)
		}
		if err != nil {
			pending[t.ID] = fmt.Sprintf("its definition does not plan: %v", err)
			continue
		}
		reqs = append(reqs, scheduler.Request{Topology: t.ID, Plan: p, Workers: t.Workers, Machines: n.isolation[t.Name]})
	}
	supervisors := make([]scheduler.Supervisor, 0, len(supList))
	for _, sp := range supList {
		supervisors = append(supervisors, scheduler.Supervisor{ID: sp.ID, Host: sp.Host, Ports: slices.Clone(sp.Ports)})
	}
	hosts := make(map[string]string, len(supList))
	for _, sp := range supList {
		hosts[sp.ID] = sp.Host
	}
	current := make(map[string]scheduler.Current, len(asgs))
	for id, a := range asgs {
		c := scheduler.Current{Executors: slices.Clone(a.Executors)}
		for _, w := range a.Workers {
			c.Workers = append(c.Workers, scheduler.Placement{Supervisor: w.Supervisor, Port: w.Port})
		}
		current[id] = c
	}
	results := scheduler.Schedule(supervisors, reqs, current)
	// taken: the slots the schedule gives each topology.
	taken := make(map[scheduler.Placement]string)
	for id, r := range results {
		for _, w := range r.Workers {
			taken[w] = id
		}
	}

	for _, t := range live {
		old, had := asgs[t.ID]
		want := coord.Assignment{
			Topology: t.ID, Name: t.Name,
			Active:   t.Status == coord.StatusActive,
			Artifact: t.Artifact, Factory: t.Factory, Params: t.Params, Config: t.Config, Secret: t.Secret,
			Parallelism: t.Parallelism,
		}
		r, ok := results[t.ID]
		frozen := t.Status == coord.StatusKilled || t.Status == coord.StatusRebalancing
		switch {
		case frozen || (ok && r.Pending != ""):
			// Keep the workers where they are: a topology being killed or
			// rebalanced waits deactivated, and one that cannot be
			// scheduled keeps what still runs, unless a slot of it went
			// to another topology (a supervisor now dedicated to an
			// isolated one): then it runs nowhere rather than in part.
			if ok && r.Pending != "" {
				pending[t.ID] = r.Pending
			}
			if !had {
				continue
			}
			if !frozen && slices.ContainsFunc(old.Workers, func(w coord.Slot) bool {
				other, ok := taken[scheduler.Placement{Supervisor: w.Supervisor, Port: w.Port}]
				return ok && other != t.ID
			}) {
				if err := l.DeleteAssignment(ctx, t.ID); err != nil {
					return next, err
				}
				n.log.Warn("withdrew the assignment of a pending topology whose slots another took", "topology", t.Name, "pending", r.Pending)
				continue
			}
			want.Workers, want.Executors, want.Parallelism = old.Workers, old.Executors, old.Parallelism
		case !ok:
			continue // not planned: pending says why
		default:
			want.Executors = r.Executors
			for _, pl := range r.Workers {
				want.Workers = append(want.Workers, coord.Slot{Supervisor: pl.Supervisor, Host: hosts[pl.Supervisor], Port: pl.Port})
			}
		}
		if had && sameAssignment(old, want) {
			continue
		}
		want.Version = old.Version + 1
		if err := l.PutAssignment(ctx, want); err != nil {
			return next, err
		}
		n.log.Info("assigned", "topology", t.Name, "version", want.Version, "workers", len(want.Workers), "active", want.Active)
	}
	for id := range asgs {
		if !slices.ContainsFunc(live, func(t coord.Topology) bool { return t.ID == id }) {
			if err := l.DeleteAssignment(ctx, id); err != nil {
				return next, err
			}
		}
	}
	n.mu.Lock()
	n.mu.pending = pending
	n.mu.Unlock()
	return next, nil
}

// remove deletes a killed topology whose wait is over, and its artifact
// if no other topology of all uses it.
func (n *Nimbus) remove(ctx context.Context, l *coord.Leadership, t coord.Topology, all []coord.Topology) error {
	if err := l.DeleteTopology(ctx, t.ID); err != nil {
		return err
	}
	n.log.Info("killed topology", "topology", t.Name, "id", t.ID)
	n.windows.forget(t.ID)
	sha := t.Artifact.SHA256
	if slices.ContainsFunc(all, func(o coord.Topology) bool { return o.ID != t.ID && o.Artifact.SHA256 == sha }) || n.uploading(sha) {
		return nil
	}
	n.drop(ctx, sha)
	return nil
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
