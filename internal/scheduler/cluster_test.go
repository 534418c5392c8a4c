package scheduler

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/testutil"
)

// sup is a supervisor with ports 6700, 6701, … .
func sup(id string, ports int) Supervisor {
	s := Supervisor{ID: id, Host: id + ".example"}
	for i := range ports {
		s.Ports = append(s.Ports, 6700+i)
	}
	return s
}

// flat is the plan of one spout with execs executors.
func flat(t testing.TB, execs int) plan.Plan {
	p, err := plan.New(plan.Topology{Components: []plan.Component{
		{ID: "s", Spout: true, Tasks: execs, Parallelism: execs},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func at(s string, port int) Placement { return Placement{s, port} }

// asCurrent is the assignment in force once r is applied.
func asCurrent(r Result) Current { return Current{Workers: r.Workers, Executors: r.Executors} }

func scheduled(t *testing.T, res map[string]Result, id string) Result {
	t.Helper()
	r, ok := res[id]
	if !ok {
		t.Fatalf("no result for %s", id)
	}
	if r.Pending != "" {
		t.Fatalf("%s is pending: %s", id, r.Pending)
	}
	return r
}

func TestWorkerCount(t *testing.T) {
	tests := []struct {
		name           string
		execs, workers int
		want           int
	}{
		{"as asked", 8, 4, 4},
		{"no worker with nothing to run", 3, 5, 3},
		{"one executor each", 3, 3, 3},
		{"at least one", 2, 0, 1},
		{"negative asks one", 2, -3, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := flat(t, tc.execs)
			if got := WorkerCount(p, tc.workers); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
			// Every one of the workers runs something.
			a, _ := Even(p, slots(WorkerCount(p, tc.workers)))
			for w := range a.Slots {
				if len(a.On(w)) == 0 {
					t.Errorf("worker %d of %d runs nothing", w, len(a.Slots))
				}
			}
		})
	}
}

// TestScheduleSpread pins the placement of fresh topologies: round-robin
// over the supervisors, the emptiest first, lowest port first.
func TestScheduleSpread(t *testing.T) {
	tests := []struct {
		name    string
		live    []Supervisor
		workers int
		want    []Placement
	}{
		{"two rounds over three", []Supervisor{sup("c", 4), sup("a", 4), sup("b", 4)}, 6,
			[]Placement{at("a", 6700), at("b", 6700), at("c", 6700), at("a", 6701), at("b", 6701), at("c", 6701)}},
		{"emptiest first", []Supervisor{sup("a", 1), sup("b", 3)}, 2,
			[]Placement{at("b", 6700), at("a", 6700)}},
		{"then the rest where room is", []Supervisor{sup("a", 1), sup("b", 3)}, 4,
			[]Placement{at("b", 6700), at("a", 6700), at("b", 6701), at("b", 6702)}},
		{"one machine", []Supervisor{sup("a", 4)}, 3,
			[]Placement{at("a", 6700), at("a", 6701), at("a", 6702)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := flat(t, 8)
			res := Schedule(tc.live, []Request{{Topology: "t", Plan: p, Workers: tc.workers}}, nil)
			r := scheduled(t, res, "t")
			if !slices.Equal(r.Workers, tc.want) {
				t.Errorf("workers: got %v, want %v", r.Workers, tc.want)
			}
			want, _ := Even(p, slots(tc.workers))
			if !slices.Equal(r.Executors, want.Executors) {
				t.Errorf("executors: got %v, want Even's %v", r.Executors, want.Executors)
			}
		})
	}
}

// TestScheduleLostSupervisor: when a supervisor goes, its workers move to
// the emptiest supervisors and no other worker moves; with the same
// input again, nothing moves at all.
func TestScheduleLostSupervisor(t *testing.T) {
	live := []Supervisor{sup("a", 4), sup("b", 4), sup("c", 4)}
	reqs := []Request{
		{Topology: "x", Plan: flat(t, 6), Workers: 3},
		{Topology: "y", Plan: flat(t, 6), Workers: 4},
	}
	first := Schedule(live, reqs, nil)
	cur := map[string]Current{"x": asCurrent(scheduled(t, first, "x")), "y": asCurrent(scheduled(t, first, "y"))}
	// x: a0 b0 c0; y: a1 b1 c1 a2.
	if again := Schedule(live, reqs, cur); !reflect.DeepEqual(again, first) {
		t.Fatalf("nothing changed, yet the result did:\n got %v\nwant %v", again, first)
	}
	// Adding a supervisor moves nothing.
	grown := append(slices.Clone(live), sup("d", 4))
	if again := Schedule(grown, reqs, cur); !reflect.DeepEqual(again, first) {
		t.Fatalf("a supervisor added moved workers:\n got %v\nwant %v", again, first)
	}
	// b lost: x's worker 1 and y's worker 1 move, to d (empty) first.
	lost := []Supervisor{live[0], live[2], sup("d", 2)}
	res := Schedule(lost, reqs, cur)
	x, y := scheduled(t, res, "x"), scheduled(t, res, "y")
	if want := []Placement{at("a", 6700), at("d", 6700), at("c", 6700)}; !slices.Equal(x.Workers, want) {
		t.Errorf("x: got %v, want %v", x.Workers, want)
	}
	// y has a and c already (a twice): its moved worker goes to d, the
	// supervisor with fewest of y's workers.
	if want := []Placement{at("a", 6701), at("d", 6701), at("c", 6701), at("a", 6702)}; !slices.Equal(y.Workers, want) {
		t.Errorf("y: got %v, want %v", y.Workers, want)
	}
}

// TestScheduleRebalance: a new worker count reschedules the topology from
// scratch, on its own previous slots where the spread allows, and leaves
// the others alone.
func TestScheduleRebalance(t *testing.T) {
	live := []Supervisor{sup("a", 2), sup("b", 2), sup("c", 2)}
	cur := map[string]Current{
		"x": {Workers: []Placement{at("a", 6701), at("b", 6701), at("c", 6701), at("a", 6700)}, Executors: evenExecutors(flat(t, 8), 4)},
		"y": {Workers: []Placement{at("b", 6700)}, Executors: []int{0, 0}},
	}
	reqs := []Request{
		{Topology: "x", Plan: flat(t, 8), Workers: 2},
		{Topology: "y", Plan: flat(t, 2), Workers: 1},
		{Topology: "z", Plan: flat(t, 2), Workers: 2},
	}
	res := Schedule(live, reqs, cur)
	// x keeps two of its own slots on different supervisors: a:6700 (a
	// and c tie on the most free slots, its own counted; a's lowest), then
	// c:6701 (c has more free slots than b).
	if got, want := scheduled(t, res, "x").Workers, []Placement{at("a", 6700), at("c", 6701)}; !slices.Equal(got, want) {
		t.Errorf("x: got %v, want %v", got, want)
	}
	if got, want := scheduled(t, res, "y").Workers, cur["y"].Workers; !slices.Equal(got, want) {
		t.Errorf("y moved: got %v, want %v", got, want)
	}
	// z, after x, gets the slots x gave up, one per supervisor.
	if got, want := scheduled(t, res, "z").Workers, []Placement{at("a", 6701), at("b", 6701)}; !slices.Equal(got, want) {
		t.Errorf("z: got %v, want %v", got, want)
	}
}

// TestSchedulePending: a topology that does not fit takes no slot and
// says why, with the numbers.
func TestSchedulePending(t *testing.T) {
	p := flat(t, 12)
	full := Current{Workers: []Placement{at("a", 6700), at("a", 6701), at("a", 6702), at("a", 6703),
		at("b", 6700), at("b", 6701), at("b", 6702), at("b", 6703), at("c", 6700), at("c", 6701)}, Executors: evenExecutors(p, 10)}
	tests := []struct {
		name    string
		live    []Supervisor
		reqs    []Request
		current map[string]Current
		id      string
		want    string
	}{
		{"not enough free slots",
			[]Supervisor{sup("a", 4), sup("b", 4), sup("c", 4)},
			[]Request{{Topology: "x", Plan: p, Workers: 10}, {Topology: "y", Plan: p, Workers: 4}},
			map[string]Current{"x": full}, "y",
			"needs 4 worker slots, 2 free on 1 supervisor (3 supervisors, 12 slots, 10 used by other topologies)"},
		{"no supervisor",
			nil, []Request{{Topology: "x", Plan: p, Workers: 2}}, nil, "x",
			"needs 2 worker slots and no supervisor is alive"},
		{"lost a worker, no room to move it",
			[]Supervisor{sup("a", 2)},
			[]Request{{Topology: "x", Plan: p, Workers: 3}},
			map[string]Current{"x": {Workers: []Placement{at("a", 6700), at("gone", 6700), at("a", 6701)}, Executors: evenExecutors(p, 3)}}, "x",
			"needs 1 more worker slot for its 3 workers, 0 free on 0 supervisors (1 supervisor, 2 slots, 0 used by other topologies, 2 by its own running workers)"},
		{"slots kept for isolation",
			[]Supervisor{sup("a", 4), sup("b", 4)},
			[]Request{{Topology: "x", Plan: p, Workers: 5}, {Topology: "i", Plan: p, Workers: 1, Machines: 1}},
			nil, "x",
			"needs 5 worker slots, 4 free on 1 supervisor (2 supervisors, 8 slots, 1 used by other topologies, 3 unused on supervisors kept for isolated topologies)"},
		{"isolation, too few machines",
			[]Supervisor{sup("a", 4), sup("b", 4)},
			[]Request{{Topology: "i", Plan: p, Workers: 2, Machines: 1}, {Topology: "j", Plan: p, Workers: 2, Machines: 2}},
			nil, "j",
			"isolation.scheduler.machines gives it 2 machines, 1 is free (2 supervisors with slots, 1 kept for other isolated topologies)"},
		{"isolation, more machines than workers",
			[]Supervisor{sup("a", 4), sup("b", 4), sup("c", 4)},
			[]Request{{Topology: "i", Plan: p, Workers: 2, Machines: 2}, {Topology: "j", Plan: p, Workers: 2, Machines: 5}},
			nil, "j",
			"isolation.scheduler.machines gives it 5 machines (2 for its 2 workers), 1 is free (3 supervisors with slots, 2 kept for other isolated topologies)"},
		{"isolation, machines too small",
			[]Supervisor{sup("a", 2), sup("b", 2), sup("c", 1)},
			[]Request{{Topology: "i", Plan: p, Workers: 5, Machines: 2}},
			nil, "i",
			"needs 5 worker slots on 2 machines of its own (isolation.scheduler.machines), and the 2 free machines with the most slots have 4 slots"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Schedule(tc.live, tc.reqs, tc.current)
			r := res[tc.id]
			if r.Pending != tc.want {
				t.Errorf("pending:\n got %q\nwant %q", r.Pending, tc.want)
			}
			if r.Workers != nil || r.Executors != nil {
				t.Errorf("a pending topology got workers %v, executors %v", r.Workers, r.Executors)
			}
		})
	}
}

// TestSchedulePendingKeepsItsSlots: a pending topology's running workers
// keep their slots; a topology after it does not take them, but gets a
// free slot elsewhere.
func TestSchedulePendingKeepsItsSlots(t *testing.T) {
	p := flat(t, 4)
	cur := map[string]Current{"x": {Workers: []Placement{at("a", 6700), at("gone", 6700), at("a", 6701), at("gone", 6701)}, Executors: evenExecutors(p, 4)}}
	live := []Supervisor{sup("a", 2), sup("b", 1)}
	reqs := []Request{{Topology: "x", Plan: p, Workers: 4}, {Topology: "y", Plan: p, Workers: 2}}
	res := Schedule(live, reqs, cur)
	if want := "needs 2 more worker slots for its 4 workers, 1 free on 1 supervisor (2 supervisors, 3 slots, 0 used by other topologies, 2 by its own running workers)"; res["x"].Pending != want {
		t.Fatalf("x: got %+v, want pending %q", res["x"], want)
	}
	if want := "needs 2 worker slots, 1 free on 1 supervisor (2 supervisors, 3 slots, 2 used by other topologies)"; res["y"].Pending != want {
		t.Errorf("y: got %+v, want pending %q: x's running workers hold a's slots", res["y"], want)
	}
	reqs[1].Workers = 1
	res = Schedule(live, reqs, cur)
	if got, want := scheduled(t, res, "y").Workers, []Placement{at("b", 6700)}; !slices.Equal(got, want) {
		t.Errorf("y: got %v, want %v", got, want)
	}
	// With room, x keeps its two live workers and moves the others, one
	// on each supervisor with none of its workers.
	res = Schedule(append(live, sup("c", 1)), reqs[:1], cur)
	if got, want := scheduled(t, res, "x").Workers, []Placement{at("a", 6700), at("b", 6700), at("a", 6701), at("c", 6700)}; !slices.Equal(got, want) {
		t.Errorf("x: got %v, want %v", got, want)
	}
}

// TestScheduleIsolation: an isolated topology gets whole supervisors,
// those with the fewest shared workers to move; the shared workers there
// move, the others stay; and it is served first whatever the order.
func TestScheduleIsolation(t *testing.T) {
	live := []Supervisor{sup("a", 4), sup("b", 4), sup("c", 4), sup("d", 4)}
	shared := flat(t, 8)
	cur := map[string]Current{"s": {Workers: []Placement{at("a", 6700), at("b", 6700), at("c", 6700), at("a", 6701), at("b", 6701)}, Executors: evenExecutors(shared, 5)}}
	reqs := []Request{
		{Topology: "s", Plan: shared, Workers: 5},
		{Topology: "i", Plan: flat(t, 8), Workers: 4, Machines: 2},
	}
	res := Schedule(live, reqs, cur)
	// d (no worker) then c (one worker of s to move).
	i := scheduled(t, res, "i")
	if want := []Placement{at("c", 6700), at("d", 6700), at("c", 6701), at("d", 6701)}; !slices.Equal(i.Workers, want) {
		t.Errorf("i: got %v, want %v", i.Workers, want)
	}
	s := scheduled(t, res, "s")
	// s's worker 2 leaves c, for the supervisor with fewest s workers.
	if want := []Placement{at("a", 6700), at("b", 6700), at("a", 6702), at("a", 6701), at("b", 6701)}; !slices.Equal(s.Workers, want) {
		t.Errorf("s: got %v, want %v", s.Workers, want)
	}
	// Same again, with i's machines in force and a new empty supervisor:
	// nothing moves, and i keeps c.
	cur["i"], cur["s"] = asCurrent(i), asCurrent(s)
	again := Schedule(append(slices.Clone(live), sup("e", 4)), reqs, cur)
	if !reflect.DeepEqual(again, res) {
		t.Errorf("nothing lost, yet workers moved:\n got %v\nwant %v", again, res)
	}
	// c lost: i takes e, not a or b, where s runs.
	again = Schedule([]Supervisor{live[0], live[1], live[3], sup("e", 4)}, reqs, cur)
	if want := []Placement{at("e", 6700), at("d", 6700), at("e", 6701), at("d", 6701)}; !slices.Equal(scheduled(t, again, "i").Workers, want) {
		t.Errorf("i after c lost: got %v, want %v", again["i"].Workers, want)
	}
	if !slices.Equal(scheduled(t, again, "s").Workers, s.Workers) {
		t.Errorf("s moved though it lost nothing: got %v, want %v", again["s"].Workers, s.Workers)
	}
}

// TestScheduleIsolationPendingHolds: an isolated topology that lost a
// machine and finds no other keeps the one it runs on: no new worker of
// another topology goes there.
func TestScheduleIsolationPendingHolds(t *testing.T) {
	p := flat(t, 4)
	cur := map[string]Current{
		"i": {Workers: []Placement{at("a", 6700), at("gone", 6700)}, Executors: evenExecutors(p, 2)},
		"j": {Workers: []Placement{at("b", 6700)}, Executors: evenExecutors(p, 1)},
		"s": {Workers: []Placement{at("a", 6701)}, Executors: evenExecutors(p, 1)},
	}
	live := []Supervisor{sup("a", 4), sup("b", 1)}
	reqs := []Request{
		{Topology: "s", Plan: p, Workers: 1},
		{Topology: "t", Plan: p, Workers: 1},
		{Topology: "i", Plan: p, Workers: 2, Machines: 2},
		{Topology: "j", Plan: p, Workers: 1, Machines: 1},
	}
	res := Schedule(live, reqs, cur)
	// b is j's, which runs there: i finds only a, its own.
	if want := "isolation.scheduler.machines gives it 2 machines, 1 is free (2 supervisors with slots, 1 kept for other isolated topologies)"; res["i"].Pending != want {
		t.Errorf("i: got %q, want %q", res["i"].Pending, want)
	}
	if got, want := scheduled(t, res, "j").Workers, cur["j"].Workers; !slices.Equal(got, want) {
		t.Errorf("j: got %v, want %v", got, want)
	}
	// s keeps its worker on a; t gets no new one there.
	if got, want := scheduled(t, res, "s").Workers, cur["s"].Workers; !slices.Equal(got, want) {
		t.Errorf("s: got %v, want %v", got, want)
	}
	if want := "needs 1 worker slot, 0 free on 0 supervisors (2 supervisors, 5 slots, 3 used by other topologies, 2 unused on supervisors kept for isolated topologies)"; res["t"].Pending != want {
		t.Errorf("t: got %q, want %q", res["t"].Pending, want)
	}
}

// TestScheduleBadInput: duplicates and nonsense are ignored, not
// trusted, and CheckSupervisors names them.
func TestScheduleBadInput(t *testing.T) {
	live := []Supervisor{
		{ID: "a", Ports: []int{6701, 6700, 6701, 0, 70000}},
		{ID: "a", Ports: []int{1, 2, 3}},
		{Host: "nameless", Ports: []int{6700}},
	}
	err := CheckSupervisors(live)
	for _, want := range []string{`supervisor "a" lists port 6701 twice`, `supervisor "a" has port 0, outside 1–65535`,
		`port 70000`, `supervisors 0 and 1 have the same id "a"`, `supervisor 2 (host "nameless") has no id`} {
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckSupervisors: got %v, want ErrInvalid saying %q", err, want)
		}
	}
	if err := CheckSupervisors([]Supervisor{sup("a", 2), sup("b", 2)}); err != nil {
		t.Errorf("CheckSupervisors on good supervisors: %v", err)
	}

	p := flat(t, 4)
	res := Schedule(live, []Request{{Topology: "x", Plan: p, Workers: 3}}, nil)
	if want := "needs 3 worker slots, 2 free on 1 supervisor (1 supervisor, 2 slots, 0 used by other topologies)"; res["x"].Pending != want {
		t.Errorf("got %q, want %q", res["x"].Pending, want)
	}

	// A Current that does not fit the plan is scheduled afresh; a slot
	// named twice keeps the first worker.
	good := []Supervisor{sup("a", 2), sup("b", 2)}
	for name, cur := range map[string]Current{
		"executor on no worker": {Workers: []Placement{at("b", 6701), at("a", 6701)}, Executors: []int{0, 1, 2, 1}},
		"too many executors":    {Workers: []Placement{at("b", 6701), at("a", 6701)}, Executors: []int{0, 1, 0, 1, 0}},
		"other worker count":    {Workers: []Placement{at("b", 6701)}, Executors: []int{0, 0, 0, 0}},
	} {
		res := Schedule(good, []Request{{Topology: "x", Plan: p, Workers: 2}}, map[string]Current{"x": cur})
		// Afresh, on its own slots where it can: the spread puts one on
		// each supervisor, so b:6701 and a:6701 (or a:6700 when a had none).
		x := scheduled(t, res, "x")
		if len(x.Workers) != 2 || x.Workers[0].Supervisor == x.Workers[1].Supervisor {
			t.Errorf("%s: got %v, want 2 workers on 2 supervisors", name, x.Workers)
		}
		if !slices.Equal(x.Executors, evenExecutors(p, 2)) {
			t.Errorf("%s: executors %v, want Even's", name, x.Executors)
		}
	}
	res = Schedule(good, []Request{{Topology: "x", Plan: p, Workers: 2}, {Topology: "x", Plan: p, Workers: 1}},
		map[string]Current{"x": {Workers: []Placement{at("b", 6701), at("b", 6701)}, Executors: []int{0, 1, 0, 1}}})
	if got, want := scheduled(t, res, "x").Workers, []Placement{at("b", 6701), at("a", 6700)}; !slices.Equal(got, want) {
		t.Errorf("slot twice: got %v, want %v", got, want)
	}
}

// world is a cluster that events change, as nimbus sees it: the live
// supervisors, the requests, and the assignments in force (a pending
// topology's previous one stays in force: its workers still run).
type world struct {
	r        *rand.Rand
	live     []Supervisor
	reqs     []Request
	cur      map[string]Current
	res      map[string]Result
	sups, ts int
}

func newWorld(t testing.TB, r *rand.Rand) *world {
	w := &world{r: r, cur: map[string]Current{}}
	for range 1 + r.IntN(5) {
		w.addSupervisor()
	}
	for range r.IntN(4) {
		w.addTopology(t)
	}
	return w
}

func (w *world) addSupervisor() {
	s := sup(fmt.Sprintf("s%02d", w.sups), 1+w.r.IntN(4))
	w.sups++
	// Supervisors arrive in any order.
	i := w.r.IntN(len(w.live) + 1)
	w.live = slices.Insert(w.live, i, s)
}

func (w *world) request(t testing.TB, id string) Request {
	req := Request{Topology: id, Plan: flat(t, 1+w.r.IntN(10)), Workers: 1 + w.r.IntN(6)}
	if w.r.IntN(4) == 0 {
		req.Machines = 1 + w.r.IntN(2)
	}
	return req
}

func (w *world) addTopology(t testing.TB) {
	w.reqs = append(w.reqs, w.request(t, fmt.Sprintf("t%02d", w.ts)))
	w.ts++
}

// step applies a random event and schedules; it returns the event and
// the supervisor lost, if any.
func (w *world) step(t testing.TB) (event, lost string) {
	switch k := w.r.IntN(6); {
	case k == 0 && len(w.live) < 10:
		w.addSupervisor()
		event = "supervisor added"
	case k <= 1 && len(w.live) > 0:
		i := w.r.IntN(len(w.live))
		lost = w.live[i].ID
		w.live = slices.Delete(w.live, i, i+1)
		event = "supervisor " + lost + " lost"
	case k <= 2 && len(w.reqs) < 7:
		w.addTopology(t)
		event = "topology added"
	case k <= 3 && len(w.reqs) > 0:
		i := w.r.IntN(len(w.reqs))
		event = "topology " + w.reqs[i].Topology + " removed"
		delete(w.cur, w.reqs[i].Topology)
		w.reqs = slices.Delete(w.reqs, i, i+1)
	case len(w.reqs) > 0:
		i := w.r.IntN(len(w.reqs))
		old := w.reqs[i]
		w.reqs[i] = w.request(t, old.Topology)
		w.reqs[i].Machines = old.Machines
		if w.r.IntN(2) == 0 {
			w.reqs[i].Plan = old.Plan
		}
		event = "topology " + old.Topology + " rebalanced"
	default:
		event = "nothing"
	}
	w.res = Schedule(w.live, w.reqs, w.cur)
	return event, lost
}

// apply puts the scheduled results in force. A pending topology's
// assignment stays, less the workers whose slot another topology now
// uses (their supervisor stops them): they are left on no slot.
func (w *world) apply() {
	used := map[Placement]bool{}
	for _, r := range w.res {
		for _, p := range r.Workers {
			used[p] = true
		}
	}
	for id, r := range w.res {
		if r.Pending == "" {
			w.cur[id] = asCurrent(r)
			continue
		}
		if cur, ok := w.cur[id]; ok {
			cur.Workers = slices.Clone(cur.Workers)
			for i, p := range cur.Workers {
				if used[p] {
					cur.Workers[i] = Placement{}
				}
			}
			w.cur[id] = cur
		}
	}
}

// check asserts every property of the world's result against the
// assignments that were in force (the world before apply).
func (w *world) check(t *testing.T, ctx string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s\nlive %v\nreqs %v\ncurrent %v\nresult %v", ctx, fmt.Sprintf(format, args...), w.live, reqSummary(w.reqs), w.cur, w.res)
	}
	ports := map[Placement]bool{}
	for _, s := range w.live {
		for _, p := range s.Ports {
			ports[Placement{s.ID, p}] = true
		}
	}
	if len(w.res) != len(w.reqs) {
		fail("%d results for %d requests", len(w.res), len(w.reqs))
	}
	user := map[Placement]string{} // slot → topology whose result uses it
	isoOf := map[string]string{}   // supervisor → scheduled isolated topology
	heldBy := map[string]string{}  // supervisor → pending isolated topology running there
	for _, req := range w.reqs {
		r, ok := w.res[req.Topology]
		if !ok {
			fail("no result for %s", req.Topology)
		}
		if r.Pending != "" {
			if r.Workers != nil || r.Executors != nil {
				fail("%s is pending (%s) yet has workers %v", req.Topology, r.Pending, r.Workers)
			}
			if req.Machines > 0 {
				for _, p := range w.cur[req.Topology].Workers {
					if ports[p] {
						heldBy[p.Supervisor] = req.Topology
					}
				}
			}
			continue
		}
		n := WorkerCount(req.Plan, req.Workers)
		if len(r.Workers) != n {
			fail("%s has %d workers, want %d", req.Topology, len(r.Workers), n)
		}
		// Every executor placed exactly once, by Even's rule.
		even, _ := Even(req.Plan, slots(n))
		if !slices.Equal(r.Executors, even.Executors) {
			fail("%s: executors %v, want Even's %v", req.Topology, r.Executors, even.Executors)
		}
		for _, p := range r.Workers {
			if !ports[p] {
				fail("%s has a worker on %v, not a live slot", req.Topology, p)
			}
			if other, dup := user[p]; dup {
				fail("slot %v is used by %s and %s", p, other, req.Topology)
			}
			user[p] = req.Topology
			if req.Machines > 0 {
				isoOf[p.Supervisor] = req.Topology
			}
		}
		if req.Machines > 0 {
			if got, want := len(supervisorsOf(r.Workers)), min(req.Machines, n); got != want {
				fail("isolated %s is on %d supervisors, want %d", req.Topology, got, want)
			}
		}
	}
	// Isolation: an isolated topology's supervisors hold only its
	// workers; a pending one's take no new worker.
	for p, u := range user {
		if iso, ok := isoOf[p.Supervisor]; ok && iso != u {
			fail("%s has a worker on %v, on supervisor %s of isolated %s", u, p, p.Supervisor, iso)
		}
		if h, ok := heldBy[p.Supervisor]; ok && h != u {
			if !slices.Contains(w.cur[u].Workers, p) {
				fail("%s got a new worker on %v, on supervisor %s still running pending isolated %s", u, p, p.Supervisor, h)
			}
		}
	}
	// Minimal movement, and a pending topology's running workers keep
	// their slots: a worker of an assignment in force whose slot is live
	// and not taken by isolation stays where it is.
	for _, req := range w.reqs {
		cur, ok := w.cur[req.Topology]
		if !ok {
			continue
		}
		n := WorkerCount(req.Plan, req.Workers)
		r := w.res[req.Topology]
		same := len(cur.Workers) == n && len(cur.Executors) == len(req.Plan.Executors)
		// gone: the worker's slot is dead or on another's isolated supervisor.
		gone := func(p Placement) bool {
			iso, ok := isoOf[p.Supervisor]
			return !ports[p] || ok && iso != req.Topology
		}
		moved := slices.ContainsFunc(cur.Workers, gone)
		mine := supervisorsOf(r.Workers)
		for i, p := range cur.Workers {
			switch {
			case gone(p):
			case r.Pending != "":
				if u, used := user[p]; used {
					fail("pending %s's running worker %d on %v lost its slot to %s", req.Topology, i, p, u)
				}
			case req.Machines > 0 && moved && !mine[p.Supervisor]:
				// An isolated topology that lost a machine may have to
				// trade one it keeps for a larger one to fit.
			case same && r.Workers[i] != p:
				fail("%s's worker %d moved from live slot %v to %v", req.Topology, i, p, r.Workers[i])
			}
		}
		if same && !moved && r.Pending != "" {
			fail("%s lost nothing, yet is pending: %s", req.Topology, r.Pending)
		}
	}
	// Spread: a supervisor that got a new worker of a topology has at most
	// one more of its workers than any other supervisor open to it that
	// has a slot no one used or held.
	held := map[Placement]bool{}
	for _, req := range w.reqs {
		for _, p := range w.cur[req.Topology].Workers {
			held[p] = true
		}
	}
	for _, req := range w.reqs {
		r := w.res[req.Topology]
		if r.Pending != "" {
			continue
		}
		count := map[string]int{}
		for _, p := range r.Workers {
			count[p.Supervisor]++
		}
		for i, p := range r.Workers {
			if slices.Contains(w.cur[req.Topology].Workers, p) {
				continue // kept, not placed
			}
			for _, s := range w.live {
				open := isoOf[s.ID] == req.Topology || (req.Machines == 0 && isoOf[s.ID] == "" && heldBy[s.ID] == "")
				if !open || count[s.ID] >= count[p.Supervisor]-1 {
					continue
				}
				for _, port := range s.Ports {
					q := Placement{s.ID, port}
					if user[q] == "" && !held[q] {
						fail("%s's worker %d went to %s (%d of its workers), while %s (%d) had slot %v free",
							req.Topology, i, p.Supervisor, count[p.Supervisor], s.ID, count[s.ID], q)
					}
				}
			}
		}
	}
	// Determinism: the supervisors' order does not matter, nor does a
	// second run.
	shuffled := slices.Clone(w.live)
	w.r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if again := Schedule(shuffled, w.reqs, w.cur); !reflect.DeepEqual(again, w.res) {
		fail("the same input in another order gives %v", again)
	}
}

func supervisorsOf(ps []Placement) map[string]bool {
	m := map[string]bool{}
	for _, p := range ps {
		m[p.Supervisor] = true
	}
	return m
}

func reqSummary(reqs []Request) string {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "[%s: %d executors, %d workers, %d machines] ", r.Topology, len(r.Plan.Executors), r.Workers, r.Machines)
	}
	return b.String()
}

// TestScheduleRandom runs random sequences of events (supervisors added
// and lost, topologies added, removed and rebalanced) and checks after
// each that every executor is placed once, no slot is used twice,
// isolation holds, workers spread, and that only workers whose slot went
// (lost, or taken by isolation) move.
func TestScheduleRandom(t *testing.T) {
	seed := testutil.Seed(t)
	r := rand.New(rand.NewPCG(seed, 2))
	for run := range 500 {
		w := newWorld(t, r)
		w.res = Schedule(w.live, w.reqs, w.cur)
		w.check(t, fmt.Sprintf("run %d, start", run))
		w.apply()
		for step := range 30 {
			event, _ := w.step(t)
			w.check(t, fmt.Sprintf("run %d, step %d (%s)", run, step, event))
			w.apply()
		}
	}
}

// schedulesJSON is what Schedule gives along a random sequence of events
// drawn from seed.
func schedulesJSON(t testing.TB, seed uint64, steps int) []map[string]Result {
	r := rand.New(rand.NewPCG(seed, 3))
	w := newWorld(t, r)
	var out []map[string]Result
	for range steps {
		w.step(t)
		out = append(out, w.res)
		w.apply()
	}
	return out
}

// BenchmarkSchedule: gale bench coordination's case, 1,000 supervisors of
// 5 slots and a topology of 1,000 workers, afresh and with the
// assignment in force after one supervisor is lost.
func BenchmarkSchedule(b *testing.B) {
	var live []Supervisor
	for i := range 1000 {
		live = append(live, sup(fmt.Sprintf("s%04d", i), 5))
	}
	reqs := []Request{{Topology: "big", Plan: flat(b, 2000), Workers: 1000}}
	first := Schedule(live, reqs, nil)["big"]
	cur := map[string]Current{"big": asCurrent(first)}
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Schedule(live, reqs, nil)
		}
	})
	b.Run("supervisor lost", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Schedule(live[1:], reqs, cur)
		}
	})
}
