package nimbus

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/plan"
)

// The step's tests need no etcd and no clock: a State is built in
// memory, Step decides, and applyDecision plays the writes back onto the
// State as etcd would, revisions included.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var stepCfg = StepConfig{Limits: limits{tasks: 1000, executors: 100}}

// record is a topology record as read from etcd: ACTIVE, with the word
// count's definition, at revision rev.
func record(id string, workers int, at time.Duration, rev int64) coord.Topology {
	return coord.Topology{ID: id, Name: "name-" + id, Definition: topology(), Workers: workers, Factory: "wordcount",
		Artifact: coord.Artifact{SHA256: "sha-" + id}, Status: coord.StatusActive, Secret: "s-" + id,
		SubmittedAt: t0.Add(at), Rev: rev}
}

func sup(id string, ports ...int) coord.Supervisor {
	return coord.Supervisor{ID: id, Host: "host-" + id, Ports: ports}
}

// applyDecision is what etcd does with d's writes: the State after them,
// with every record written at a new revision from *rev.
func applyDecision(t *testing.T, s State, d Decision, rev *int64) State {
	t.Helper()
	out := State{Supervisors: s.Supervisors}
	ts := map[string]coord.Topology{}
	for _, tp := range s.Topologies {
		ts[tp.ID] = tp
	}
	as := map[string]coord.Assignment{}
	for _, a := range s.Assignments {
		as[a.Topology] = a
	}
	for _, w := range d.Writes {
		if tp, ok := ts[w.ID]; ok != (w.Rev != 0) || tp.Rev != w.Rev {
			t.Fatalf("write %+v decided on revision %d; the record is at %d", w.TopologyWrite, w.Rev, tp.Rev)
		}
		*rev++
		switch {
		case w.Remove:
			delete(ts, w.ID)
			delete(as, w.ID)
			continue
		case w.Topology != nil:
			tp := *w.Topology
			tp.Rev = *rev
			ts[w.ID] = tp
		}
		if w.Assignment != nil || w.DeleteAssignment {
			if as[w.ID].Rev != w.AssignmentRev {
				t.Fatalf("write %+v decided on assignment revision %d; it is at %d", w.TopologyWrite, w.AssignmentRev, as[w.ID].Rev)
			}
		}
		switch {
		case w.Assignment != nil:
			a := *w.Assignment
			a.Rev = *rev
			as[w.ID] = a
		case w.DeleteAssignment:
			delete(as, w.ID)
		}
	}
	for _, tp := range ts {
		out.Topologies = append(out.Topologies, tp)
	}
	for _, a := range as {
		out.Assignments = append(out.Assignments, a)
	}
	slices.SortFunc(out.Topologies, func(a, b coord.Topology) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(out.Assignments, func(a, b coord.Assignment) int { return strings.Compare(a.Topology, b.Topology) })
	return out
}

// settle steps and applies until a step writes nothing, and returns the
// State then.
func settle(t *testing.T, s State, now time.Time, rev *int64) State {
	t.Helper()
	for range 5 {
		d := Step(s, now, stepCfg)
		if len(d.Writes) == 0 {
			return s
		}
		s = applyDecision(t, s, d, rev)
	}
	t.Fatalf("no steady state after 5 steps: %+v", s)
	return s
}

func assignmentOf(s State, id string) (coord.Assignment, bool) {
	i := slices.IndexFunc(s.Assignments, func(a coord.Assignment) bool { return a.Topology == id })
	if i < 0 {
		return coord.Assignment{}, false
	}
	return s.Assignments[i], true
}

func supervisorsOf(a coord.Assignment) []string {
	var out []string
	for _, w := range a.Workers {
		out = append(out, w.Supervisor)
	}
	return out
}

func TestStepSchedulesAndThenWritesNothing(t *testing.T) {
	rev := int64(10)
	s := State{
		Topologies:  []coord.Topology{record("b", 2, time.Second, 2), record("a", 1, 0, 1)},
		Supervisors: []coord.Supervisor{sup("s1", 6700, 6701), sup("s2", 6700)},
	}
	d := Step(s, t0, stepCfg)
	if len(d.Writes) != 2 || d.Writes[0].ID != "a" || d.Writes[1].ID != "b" {
		t.Fatalf("writes %+v, want a's assignment then b's (submission order)", d.Writes)
	}
	for _, w := range d.Writes {
		if w.Assignment == nil || w.Assignment.Version != 1 || !w.Assignment.Active || w.Topology != nil {
			t.Errorf("write %+v: want an active assignment at version 1 and no record change", w.TopologyWrite)
		}
		if w.AssignmentRev != 0 || w.Rev == 0 {
			t.Errorf("write %+v: want it conditioned on the record's revision and on no assignment", w.TopologyWrite)
		}
	}
	if len(d.Pending) != 0 || !d.Next.IsZero() {
		t.Errorf("pending %v, next %v; want none", d.Pending, d.Next)
	}
	s = applyDecision(t, s, d, &rev)
	// Unchanged, a step writes nothing: a steady cluster makes no etcd
	// writes.
	if d := Step(s, t0.Add(time.Hour), stepCfg); len(d.Writes) != 0 {
		t.Errorf("a second step on the state it made writes %+v, want nothing", d.Writes)
	}
}

func TestStepDoesNotModifyItsArguments(t *testing.T) {
	rev := int64(10)
	s := State{
		Topologies:  []coord.Topology{record("b", 2, time.Second, 2), record("a", 1, 0, 1)},
		Supervisors: []coord.Supervisor{sup("s1", 6700, 6701), sup("s2", 6700)},
	}
	s = settle(t, s, t0, &rev)
	s.Topologies[0].Status = coord.StatusRebalancing
	s.Topologies[0].Rebalance = &coord.Rebalance{Workers: 3, Resume: coord.StatusActive}
	s.Topologies[1].Status = coord.StatusKilled
	s.Topologies[0].Deadline, s.Topologies[1].Deadline = t0, t0
	before := State{
		Topologies:  slices.Clone(s.Topologies),
		Assignments: slices.Clone(s.Assignments),
		Supervisors: slices.Clone(s.Supervisors),
	}
	a := Step(s, t0, stepCfg)
	if !reflect.DeepEqual(s, before) {
		t.Errorf("Step changed its state:\n got %+v\nwant %+v", s, before)
	}
	if b := Step(s, t0, stepCfg); !reflect.DeepEqual(a, b) {
		t.Errorf("two steps on the same state differ:\n%+v\n%+v", a, b)
	}
}

func TestStepKillsAndRebalancesWhenDue(t *testing.T) {
	base := func(t *testing.T) (State, *int64) {
		rev := int64(10)
		s := State{
			Topologies:  []coord.Topology{record("a", 1, 0, 1), record("b", 1, time.Second, 2)},
			Supervisors: []coord.Supervisor{sup("s1", 6700, 6701, 6702, 6703)},
		}
		return settle(t, s, t0, &rev), &rev
	}
	t.Run("a kill in its wait deactivates in place", func(t *testing.T) {
		s, _ := base(t)
		old, _ := assignmentOf(s, "a")
		s.Topologies[0].Status, s.Topologies[0].Deadline = coord.StatusKilled, t0.Add(30*time.Second)
		d := Step(s, t0.Add(29*time.Second), stepCfg)
		if !d.Next.Equal(t0.Add(30 * time.Second)) {
			t.Errorf("next %v, want the kill's deadline", d.Next)
		}
		if len(d.Writes) != 1 || d.Writes[0].Remove || d.Writes[0].Assignment == nil {
			t.Fatalf("writes %+v, want a's assignment only", d.Writes)
		}
		a := d.Writes[0].Assignment
		if a.Active || !slices.Equal(a.Workers, old.Workers) || !slices.Equal(a.Executors, old.Executors) || a.Version != old.Version+1 {
			t.Errorf("in the kill's wait: %s, want %s deactivated in place at the next version", describe(*a), describe(old))
		}
	})
	t.Run("a due kill removes the topology and frees its artifact", func(t *testing.T) {
		s, rev := base(t)
		s.Topologies[0].Status, s.Topologies[0].Deadline = coord.StatusKilled, t0.Add(30*time.Second)
		d := Step(s, t0.Add(30*time.Second), stepCfg)
		if len(d.Writes) != 1 || !d.Writes[0].Remove || d.Writes[0].ID != "a" || d.Writes[0].Rev != s.Topologies[0].Rev {
			t.Fatalf("writes %+v, want a's removal at its revision", d.Writes)
		}
		if d.Unused["a"] != "sha-a" {
			t.Errorf("unused %v, want a's artifact", d.Unused)
		}
		s = applyDecision(t, s, d, rev)
		if len(s.Topologies) != 1 || len(s.Assignments) != 1 {
			t.Errorf("after the removal: %+v", s)
		}
	})
	t.Run("a due kill keeps an artifact another topology uses", func(t *testing.T) {
		s, _ := base(t)
		s.Topologies[1].Artifact = s.Topologies[0].Artifact
		s.Topologies[0].Status, s.Topologies[0].Deadline = coord.StatusKilled, t0
		if d := Step(s, t0, stepCfg); len(d.Unused) != 0 {
			t.Errorf("unused %v, want none: b runs the artifact", d.Unused)
		}
	})
	t.Run("a rebalance in its wait deactivates in place", func(t *testing.T) {
		s, _ := base(t)
		s.Topologies[1].Status, s.Topologies[1].Deadline = coord.StatusRebalancing, t0.Add(10*time.Second)
		s.Topologies[1].Rebalance = &coord.Rebalance{Workers: 3, Resume: coord.StatusActive}
		d := Step(s, t0.Add(9*time.Second), stepCfg)
		if len(d.Writes) != 1 || d.Writes[0].Topology != nil || d.Writes[0].Assignment == nil || d.Writes[0].Assignment.Active {
			t.Fatalf("writes %+v, want b's assignment deactivated and no record change", d.Writes)
		}
		if len(d.Writes[0].Assignment.Workers) != 1 || !d.Next.Equal(t0.Add(10*time.Second)) {
			t.Errorf("in the wait: %s, next %v; want 1 worker until the deadline", describe(*d.Writes[0].Assignment), d.Next)
		}
	})
	t.Run("a due rebalance writes the record and the new assignment at once", func(t *testing.T) {
		s, rev := base(t)
		s.Topologies[1].Status, s.Topologies[1].Deadline = coord.StatusRebalancing, t0.Add(10*time.Second)
		s.Topologies[1].Rebalance = &coord.Rebalance{Workers: 3, Parallelism: map[string]int{"count": 4}, Resume: coord.StatusInactive}
		d := Step(s, t0.Add(10*time.Second), stepCfg)
		if len(d.Writes) != 1 || d.Writes[0].ID != "b" {
			t.Fatalf("writes %+v, want b's", d.Writes)
		}
		w := d.Writes[0]
		if w.Topology == nil || w.Assignment == nil {
			t.Fatalf("write %+v: want the record and the assignment in one", w.TopologyWrite)
		}
		tp := w.Topology
		if tp.Status != coord.StatusInactive || tp.Workers != 3 || tp.Parallelism["count"] != 4 || tp.Rebalance != nil ||
			!tp.Deadline.IsZero() || !reflect.DeepEqual(tp.Definition, topology()) {
			t.Errorf("rebalanced record %+v: want INACTIVE, 3 workers, count=4, the submitted definition, no deadline", tp)
		}
		if a := w.Assignment; a.Active || len(a.Workers) != 3 || a.Parallelism["count"] != 4 {
			t.Errorf("rebalanced assignment %s, want 3 inactive workers", describe(*a))
		}
		s = applyDecision(t, s, d, rev)
		if d := Step(s, t0.Add(time.Hour), stepCfg); len(d.Writes) != 0 {
			t.Errorf("after the rebalance a step writes %+v, want nothing", d.Writes)
		}
	})
	// Acking on or off (topology.acker.executors) changes nothing of a
	// rebalance: there are no acker executors to follow the workers.
	for _, ackers := range []int{0, 1} {
		t.Run("topology.acker.executors="+strconv.Itoa(ackers)+" rebalances the same", func(t *testing.T) {
			s, _ := base(t)
			s.Topologies[1].Config = map[string]any{gale.TopologyAckerExecutors: ackers}
			s.Topologies[1].Status, s.Topologies[1].Deadline = coord.StatusRebalancing, t0
			s.Topologies[1].Rebalance = &coord.Rebalance{Workers: 3, Resume: coord.StatusActive}
			d := Step(s, t0, stepCfg)
			if len(d.Writes) != 1 || d.Writes[0].Topology == nil || d.Writes[0].Assignment == nil {
				t.Fatalf("writes %+v, want b rebalanced", d.Writes)
			}
			if tp := d.Writes[0].Topology; tp.Status != coord.StatusActive || tp.Workers != 3 || !reflect.DeepEqual(tp.Definition, topology()) {
				t.Errorf("rebalanced record %+v: want ACTIVE, 3 workers, the submitted definition", tp)
			}
			p, _ := plan.New(topology())
			if a := d.Writes[0].Assignment; !a.Active || len(a.Workers) != 3 || len(a.Executors) != len(p.Executors) {
				t.Errorf("rebalanced assignment %s, want 3 active workers and %d executors", describe(*a), len(p.Executors))
			}
		})
	}
}

func TestStepFollowsTheSupervisors(t *testing.T) {
	rev := int64(10)
	s := State{
		Topologies:  []coord.Topology{record("a", 2, 0, 1)},
		Supervisors: []coord.Supervisor{sup("s1", 6700), sup("s2", 6700)},
	}
	s = settle(t, s, t0, &rev)
	a, _ := assignmentOf(s, "a")
	if got := supervisorsOf(a); !slices.Equal(got, []string{"s1", "s2"}) && !slices.Equal(got, []string{"s2", "s1"}) {
		t.Fatalf("a runs on %v, want s1 and s2", got)
	}

	// s2 is lost: a's worker there moves to s3, the one on s1 stays.
	s.Supervisors = []coord.Supervisor{sup("s1", 6700), sup("s3", 6700)}
	d := Step(s, t0, stepCfg)
	if len(d.Writes) != 1 || d.Writes[0].Assignment == nil || d.Writes[0].AssignmentRev != a.Rev {
		t.Fatalf("writes %+v, want a's assignment, decided on its revision %d", d.Writes, a.Rev)
	}
	moved := d.Writes[0].Assignment
	for i, w := range moved.Workers {
		if w.Supervisor == "s2" || (a.Workers[i].Supervisor == "s1" && w != a.Workers[i]) {
			t.Errorf("after s2 is lost: %s, want the s1 worker kept and the s2 one on s3", describe(*moved))
		}
	}
	if moved.Version != a.Version+1 || moved.Workers[slices.IndexFunc(moved.Workers, func(w coord.Slot) bool { return w.Supervisor == "s3" })].Host != "host-s3" {
		t.Errorf("moved assignment %s: want the next version and s3's host", describe(*moved))
	}
	s = applyDecision(t, s, d, &rev)

	// Every supervisor is lost: a is pending and keeps its assignment
	// (its workers may still run); a supervisor that joins takes it.
	s.Supervisors = nil
	d = Step(s, t0, stepCfg)
	if len(d.Writes) != 0 || !strings.Contains(d.Pending["a"], "slot") {
		t.Errorf("no supervisors: writes %+v, pending %q; want none and a pending reason about slots", d.Writes, d.Pending["a"])
	}
	s.Supervisors = []coord.Supervisor{sup("s4", 6700, 6701)}
	d = Step(s, t0, stepCfg)
	if len(d.Writes) != 1 || d.Writes[0].Assignment == nil || !slices.Equal(supervisorsOf(*d.Writes[0].Assignment), []string{"s4", "s4"}) {
		t.Errorf("s4 joins: writes %+v, want a on s4's two slots", d.Writes)
	}
	if len(d.Pending) != 0 {
		t.Errorf("s4 joins: pending %v, want none", d.Pending)
	}
}

func TestStepWithdrawsTheAssignmentOfATopologyThatIsGone(t *testing.T) {
	s := State{
		Assignments: []coord.Assignment{{Topology: "gone", Name: "name-gone", Version: 3, Rev: 7,
			Workers: []coord.Slot{{Supervisor: "s1", Port: 6700}}, Executors: []int{0}}},
		Topologies:  []coord.Topology{record("a", 1, 0, 1)},
		Supervisors: []coord.Supervisor{sup("s1", 6700)},
	}
	d := Step(s, t0, stepCfg)
	if len(d.Writes) != 2 {
		t.Fatalf("writes %+v, want the orphan's removal and a's assignment", d.Writes)
	}
	if w := d.Writes[0]; w.ID != "gone" || !w.DeleteAssignment || w.Rev != 0 || w.AssignmentRev != 7 {
		t.Errorf("first write %+v, want the removal of gone's assignment at revision 7, with no record", w.TopologyWrite)
	}
	// The orphan's slot is free for a in the same step.
	if a := d.Writes[1].Assignment; a == nil || a.Workers[0] != (coord.Slot{Supervisor: "s1", Host: "host-s1", Port: 6700}) {
		t.Errorf("second write %+v, want a on s1:6700", d.Writes[1].TopologyWrite)
	}
}

func TestStepRefusesToPlanATopologyOverTheBounds(t *testing.T) {
	big := record("big", 1, 0, 1)
	big.Definition = plan.Topology{Components: []plan.Component{
		{ID: "s", Spout: true, Tasks: 20_000_000, Parallelism: 20_000_000, Streams: []string{"default"}}}}
	s := State{
		Topologies:  []coord.Topology{big, record("a", 1, time.Second, 2)},
		Supervisors: []coord.Supervisor{sup("s1", 6700, 6701)},
	}
	d := Step(s, t0, stepCfg)
	if why := d.Pending["big"]; !strings.Contains(why, "20000000 tasks") || !strings.Contains(why, config.NimbusTasksPerTopology) {
		t.Errorf("pending %q, want the tasks and the key named", why)
	}
	if len(d.Writes) != 1 || d.Writes[0].ID != "a" {
		t.Errorf("writes %+v, want a's assignment only", d.Writes)
	}
}
