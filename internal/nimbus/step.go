package nimbus

import (
	"fmt"
	"slices"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/scheduler"
)

// State is what the leader reads from etcd before a step: every
// topology and assignment, at the revisions read, and the live
// supervisors.
type State struct {
	Topologies  []coord.Topology
	Assignments []coord.Assignment
	Supervisors []coord.Supervisor
}

// StepConfig is the cluster configuration a step decides by.
type StepConfig struct {
	// Cluster is the cluster layer under every topology's config.
	Cluster gale.Config
	// Isolation is isolation.scheduler.machines: topology name → the
	// machines it gets to itself.
	Isolation map[string]int
	// Limits bound what one topology may plan.
	Limits limits
}

// Decision is the outcome of a step: the writes that bring etcd in line
// with the topologies' records, each one transaction on the revisions
// the step read (coord.TopologyWrite).
type Decision struct {
	// Writes are in the order to apply them: the removals of the killed
	// topologies whose wait is over and of the assignments of topologies
	// that are gone, which free slots, then each live topology's record
	// and assignment, in submission order.
	Writes []Write
	// Pending holds, by topology id, why a topology runs nowhere, or not
	// as its record says.
	Pending map[string]string
	// Next is the earliest kill or rebalance deadline still to come;
	// zero for none.
	Next time.Time
	// Unused holds, by the id of a topology removed, the artifact
	// (SHA-256) that no topology uses once it is gone.
	Unused map[string]string
}

// Write is one topology's write, with what the step knows of it.
type Write struct {
	coord.TopologyWrite
	// Contested says the topology's current assignment has a slot the
	// schedule gives to another topology: should the new assignment fail
	// to be written, the current one must be withdrawn rather than left
	// to share a slot.
	Contested bool
}

// Step decides, from the records read and the time now, what the leader
// writes: it removes the killed topologies whose wait is over, applies
// the rebalances whose wait is over, schedules every other topology over
// the live supervisors in submission order, and puts the assignments that
// changed, each with its Version bumped, and only those. A topology in a
// kill's or a rebalance's wait keeps its workers where they are,
// deactivated, and its slots stay its own.
//
// Step is a pure function of its arguments: no clock, no I/O, the same
// inputs give the same decision, and it does not modify its arguments.
func Step(s State, now time.Time, cfg StepConfig) Decision {
	d := Decision{Pending: make(map[string]string), Unused: make(map[string]string)}
	ts := slices.Clone(s.Topologies)
	bySubmission(ts)
	asgs := make(map[string]coord.Assignment, len(s.Assignments))
	for _, a := range s.Assignments {
		asgs[a.Topology] = a
	}

	// The due kills and rebalances.
	type entry struct {
		t       coord.Topology // as it is after this step
		updated bool           // t differs from the record read
	}
	live := make([]entry, 0, len(ts))
	var removed []coord.Topology
	for _, t := range ts {
		due := !t.Deadline.IsZero() && !now.Before(t.Deadline)
		switch {
		case t.Status == coord.StatusKilled && due:
			d.Writes = append(d.Writes, Write{TopologyWrite: coord.TopologyWrite{ID: t.ID, Name: t.Name, Rev: t.Rev, Remove: true}})
			removed = append(removed, t)
			continue
		case t.Status == coord.StatusRebalancing && due:
			done, err := finishRebalance(cfg.Cluster, t)
			if err != nil {
				// It stays as it is, deactivated, and says why.
				d.Pending[t.ID] = fmt.Sprintf("its rebalance cannot be applied: %v", err)
				break
			}
			live = append(live, entry{t: done, updated: true})
			continue
		case !t.Deadline.IsZero() && (d.Next.IsZero() || t.Deadline.Before(d.Next)):
			d.Next = t.Deadline
		}
		live = append(live, entry{t: t})
	}
	isLive := make(map[string]bool, len(live))
	for _, e := range live {
		isLive[e.t.ID] = true
	}
	for _, a := range s.Assignments {
		if !isLive[a.Topology] && !slices.ContainsFunc(removed, func(t coord.Topology) bool { return t.ID == a.Topology }) {
			// Its topology is gone: Rev 0 says it must still be.
			d.Writes = append(d.Writes, Write{TopologyWrite: coord.TopologyWrite{ID: a.Topology, Name: a.Name,
				AssignmentRev: a.Rev, DeleteAssignment: true}})
		}
	}
	for _, t := range removed {
		sha := t.Artifact.SHA256
		if !slices.ContainsFunc(live, func(e entry) bool { return e.t.Artifact.SHA256 == sha }) {
			d.Unused[t.ID] = sha
		}
	}

	// The schedule.
	reqs := make([]scheduler.Request, 0, len(live))
	for _, e := range live {
		t := e.t
		def, err := effectiveDefinition(t)
		if err == nil {
			// Bounded before it is planned: a record over the bounds (one
			// stored before they were set) never gets a plan's memory.
			err = cfg.Limits.check(def)
		}
		var p plan.Plan
		if err == nil {
			p, err = plan.New(def)
		}
		if err != nil {
			d.Pending[t.ID] = fmt.Sprintf("its definition does not plan: %v", err)
			continue
		}
		reqs = append(reqs, scheduler.Request{Topology: t.ID, Plan: p, Workers: t.Workers, Machines: cfg.Isolation[t.Name]})
	}
	supervisors := make([]scheduler.Supervisor, 0, len(s.Supervisors))
	hosts := make(map[string]string, len(s.Supervisors))
	for _, sp := range s.Supervisors {
		supervisors = append(supervisors, scheduler.Supervisor{ID: sp.ID, Host: sp.Host, Ports: slices.Clone(sp.Ports)})
		hosts[sp.ID] = sp.Host
	}
	current := make(map[string]scheduler.Current, len(live))
	for _, e := range live {
		a, ok := asgs[e.t.ID]
		if !ok {
			continue
		}
		c := scheduler.Current{Executors: slices.Clone(a.Executors)}
		for _, w := range a.Workers {
			c.Workers = append(c.Workers, scheduler.Placement{Supervisor: w.Supervisor, Port: w.Port})
		}
		current[e.t.ID] = c
	}
	results := scheduler.Schedule(supervisors, reqs, current)
	// taken: the slots the schedule gives each topology.
	taken := make(map[scheduler.Placement]string)
	for id, r := range results {
		for _, w := range r.Workers {
			taken[w] = id
		}
	}
	contested := func(id string, old coord.Assignment) bool {
		return slices.ContainsFunc(old.Workers, func(w coord.Slot) bool {
			other, ok := taken[scheduler.Placement{Supervisor: w.Supervisor, Port: w.Port}]
			return ok && other != id
		})
	}

	for _, e := range live {
		t := e.t
		old, had := asgs[t.ID]
		w := Write{TopologyWrite: coord.TopologyWrite{ID: t.ID, Name: t.Name, Rev: t.Rev, AssignmentRev: old.Rev}}
		if e.updated {
			rec := t
			w.Topology = &rec
		}
		want := coord.Assignment{
			Topology: t.ID, Name: t.Name,
			Active:   t.Status == coord.StatusActive,
			Artifact: t.Artifact, Factory: t.Factory, Params: t.Params, Config: t.Config, Secret: t.Secret,
			Parallelism: t.Parallelism,
		}
		r, ok := results[t.ID]
		frozen := t.Status == coord.StatusKilled || t.Status == coord.StatusRebalancing
		put := true
		switch {
		case frozen || (ok && r.Pending != ""):
			// Keep the workers where they are: a topology being killed or
			// rebalanced waits deactivated, and one that cannot be
			// scheduled keeps what still runs, unless a slot of it went
			// to another topology (a supervisor now dedicated to an
			// isolated one): then it runs nowhere rather than in part.
			if ok && r.Pending != "" {
				d.Pending[t.ID] = r.Pending
			}
			switch {
			case !had:
				put = false
			case !frozen && contested(t.ID, old):
				put = false
				w.DeleteAssignment = true
			default:
				want.Workers, want.Executors, want.Parallelism = old.Workers, old.Executors, old.Parallelism
			}
		case !ok:
			put = false // not planned: Pending says why
		default:
			want.Executors = r.Executors
			for _, pl := range r.Workers {
				want.Workers = append(want.Workers, coord.Slot{Supervisor: pl.Supervisor, Host: hosts[pl.Supervisor], Port: pl.Port})
			}
		}
		if put && !(had && sameAssignment(old, want)) {
			want.Version = old.Version + 1
			w.Assignment = &want
			w.Contested = had && contested(t.ID, old)
		}
		if w.Topology != nil || w.Assignment != nil || w.DeleteAssignment {
			d.Writes = append(d.Writes, w)
		}
	}
	return d
}

// finishRebalance applies t's rebalance, due now: the new workers and
// executors, the status it resumes in.
func finishRebalance(cluster gale.Config, t coord.Topology) (coord.Topology, error) {
	r := t.Rebalance
	if r == nil {
		r = &coord.Rebalance{Workers: t.Workers, Parallelism: t.Parallelism, Resume: coord.StatusActive}
	}
	if _, err := config.Resolve(cluster, t.Config); err != nil {
		return t, fmt.Errorf("topology %q: %w", t.Name, err)
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
