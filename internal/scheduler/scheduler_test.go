package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/testutil"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func mustPlan(t *testing.T, top plan.Topology) plan.Plan {
	t.Helper()
	p, err := plan.New(top)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func slots(n int) []Slot {
	var ss []Slot
	for i := range n {
		ss = append(ss, Slot{ID: strconv.Itoa(i), Addr: fmt.Sprintf("127.0.0.1:%d", 7000+i)})
	}
	return ss
}

// wordCount is the plan of a spout (2), split (3) and count (2);
// executors in id order: count 0–1, sentences 2–3, split 4–6.
func wordCount(t *testing.T) plan.Plan {
	return mustPlan(t, plan.Topology{Components: []plan.Component{
		{ID: "sentences", Spout: true, Tasks: 2, Parallelism: 2, Streams: []string{"default"}},
		{ID: "split", Tasks: 3, Parallelism: 3, Streams: []string{"default"}, Inputs: []plan.Input{{Component: "sentences", Stream: "default"}}},
		{ID: "count", Tasks: 2, Parallelism: 2, Inputs: []plan.Input{{Component: "split", Stream: "default"}}},
	}})
}

// TestEven pins the even placement: executor i on worker i mod n.
func TestEven(t *testing.T) {
	tests := []struct {
		name  string
		slots int
		want  []int
	}{
		{"one worker", 1, []int{0, 0, 0, 0, 0, 0, 0}},
		{"two workers", 2, []int{0, 1, 0, 1, 0, 1, 0}},
		{"three workers", 3, []int{0, 1, 2, 0, 1, 2, 0}},
		{"one executor each", 7, []int{0, 1, 2, 3, 4, 5, 6}},
		{"more workers than executors", 9, []int{0, 1, 2, 3, 4, 5, 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := wordCount(t)
			a, err := Even(p, slots(tc.slots))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Executors, tc.want) {
				t.Errorf("got %v, want %v", a.Executors, tc.want)
			}
			if err := a.Validate(p); err != nil {
				t.Errorf("Even's own assignment does not validate: %v", err)
			}
		})
	}
}

func TestEvenRejectsSlots(t *testing.T) {
	p := wordCount(t)
	if _, err := Even(p, nil); !errors.Is(err, ErrNoSlots) || !strings.Contains(err.Error(), "7 executors") {
		t.Errorf("no slots: got %v, want ErrNoSlots naming the 7 executors", err)
	}
	if _, err := Even(p, []Slot{{ID: "a"}, {ID: "b"}, {ID: "a"}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `slots 0 and 2 have the same id "a"`) {
		t.Errorf("duplicate slot: got %v", err)
	}
	if _, err := Even(p, []Slot{{ID: "a"}, {}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "slot 1 has an empty id") {
		t.Errorf("empty slot id: got %v", err)
	}
}

func TestValidate(t *testing.T) {
	p := wordCount(t)
	ok := []int{1, 0, 1, 0, 1, 0, 1}
	tests := []struct {
		name  string
		slots []Slot
		execs []int
		want  string // "" for valid
	}{
		{"reversed", slots(2), ok, ""},
		{"all on one worker", slots(2), []int{1, 1, 1, 1, 1, 1, 1}, ""},
		{"no slots", nil, ok, "no worker slots"},
		{"too few executors", slots(2), ok[:6], "places 6 executors, the plan has 7"},
		{"too many executors", slots(2), append(slices.Clone(ok), 0), "places 8 executors, the plan has 7"},
		{"nil map", slots(2), nil, "places 0 executors"},
		{"worker out of range", slots(2), []int{1, 0, 1, 0, 2, 0, 1}, `executor 4 (bolt "split", task 5) is placed on worker 2, which is not one of the 2 workers (0–1)`},
		{"negative worker", slots(2), []int{1, 0, -1, 0, 1, 0, 1}, `executor 2 (spout "sentences", task 3) is placed on worker -1`},
		{"duplicate slots", []Slot{{ID: "x"}, {ID: "x"}}, ok, `same id "x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Assignment{Slots: tc.slots, Executors: tc.execs}.Validate(p)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tc.want == "":
			case !errors.Is(err, ErrInvalid):
				t.Fatalf("got %v, want an error wrapping ErrInvalid", err)
			case !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestOn(t *testing.T) {
	a := Assignment{Slots: slots(3), Executors: []int{2, 0, 2, 1, 2}}
	for w, want := range [][]int{{1}, {3}, {0, 2, 4}} {
		if got := a.On(w); !slices.Equal(got, want) {
			t.Errorf("On(%d): got %v, want %v", w, got, want)
		}
	}
}

// TestFingerprintPinned: the fingerprint goes into every worker's hello,
// so it must be the same in every process and every build; this value
// pins its encoding.
func TestFingerprintPinned(t *testing.T) {
	a := Assignment{Slots: slots(2), Executors: []int{0, 1, 0, 1, 0, 1, 0, 0, 1}}
	if got, want := a.Fingerprint(), "8d19b685be352105"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestFingerprintSees: any change to the slots or the map changes the
// fingerprint, and equal assignments have equal ones.
func TestFingerprintSees(t *testing.T) {
	base := Assignment{Slots: slots(3), Executors: []int{0, 1, 2, 0, 1, 2, 0}}
	same := Assignment{Slots: slots(3), Executors: slices.Clone(base.Executors)}
	if base.Fingerprint() != same.Fingerprint() {
		t.Fatalf("equal assignments differ in fingerprint")
	}
	changes := map[string]func(a *Assignment){
		"an executor moved":   func(a *Assignment) { a.Executors[4] = 0 },
		"an executor more":    func(a *Assignment) { a.Executors = append(a.Executors, 0) },
		"a slot's address":    func(a *Assignment) { a.Slots[1].Addr = "127.0.0.1:1" },
		"a slot's id":         func(a *Assignment) { a.Slots[2].ID = "z" },
		"a slot more":         func(a *Assignment) { a.Slots = append(a.Slots, Slot{ID: "3"}) },
		"two slots swapped":   func(a *Assignment) { a.Slots[0], a.Slots[1] = a.Slots[1], a.Slots[0] },
		"id and address join": func(a *Assignment) { a.Slots[0] = Slot{ID: "0127.0.0.1:7000"} },
	}
	for name, change := range changes {
		a := Assignment{Slots: slots(3), Executors: slices.Clone(base.Executors)}
		change(&a)
		if a.Fingerprint() == base.Fingerprint() {
			t.Errorf("%s: the fingerprint did not change", name)
		}
	}
}

// randomPlan is the plan of a random valid topology.
func randomPlan(t *testing.T, r *rand.Rand) plan.Plan {
	var top plan.Topology
	for i := range 1 + r.IntN(6) {
		top.Components = append(top.Components, plan.Component{ID: fmt.Sprintf("c%d", i), Spout: i == 0,
			Tasks: 1 + r.IntN(10), Parallelism: 1 + r.IntN(10)})
	}
	return mustPlan(t, top)
}

// TestEvenRandom: on random plans and slot counts, the even scheduler
// places every executor exactly once on an existing slot, executor i on
// slot i mod n, so that no worker has two more executors than another,
// is deterministic, and its result validates.
func TestEvenRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	for i := range 500 {
		p := randomPlan(t, r)
		n := 1 + r.IntN(8)
		a, err := Even(p, slots(n))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if err := a.Validate(p); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		perWorker := make([]int, n)
		placed := make([]int, len(p.Executors))
		for w := range n {
			for _, x := range a.On(w) {
				placed[x]++
				perWorker[w]++
				if x%n != w {
					t.Fatalf("case %d: executor %d on worker %d of %d, want %d", i, x, w, n, x%n)
				}
			}
		}
		for x, c := range placed {
			if c != 1 {
				t.Fatalf("case %d: executor %d placed %d times", i, x, c)
			}
		}
		if slices.Max(perWorker)-slices.Min(perWorker) > 1 {
			t.Fatalf("case %d: unbalanced: executors per worker %v", i, perWorker)
		}
		b, _ := Even(p, slots(n))
		if !slices.Equal(a.Executors, b.Executors) || a.Fingerprint() != b.Fingerprint() {
			t.Fatalf("case %d: two runs differ: %v vs %v", i, a.Executors, b.Executors)
		}
		// A random corruption is caught, naming the executor.
		if len(a.Executors) > 0 {
			x := r.IntN(len(a.Executors))
			a.Executors[x] = n + r.IntN(3)
			if err := a.Validate(p); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("executor %d ", x)) {
				t.Fatalf("case %d: executor %d on worker %d: got %v", i, x, a.Executors[x], err)
			}
		}
	}
}

type result struct {
	Assignment  Assignment `json:"assignment"`
	Fingerprint string     `json:"fingerprint"`
}

// assignmentsJSON is the even assignments, with their fingerprints, of
// count random plans drawn from seed, and Schedule's results along a
// random sequence of cluster events drawn from it.
func assignmentsJSON(t *testing.T, seed uint64, count int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	var rs []result
	for range count {
		p := randomPlan(t, r)
		a, err := Even(p, slots(1+r.IntN(8)))
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, result{a, a.Fingerprint()})
	}
	b, err := json.Marshal(struct {
		Even     []result
		Schedule []map[string]Result
	}{rs, schedulesJSON(t, seed, 100)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAssignmentsInChild runs only in the child process of
// TestSameInAnotherProcess.
func TestAssignmentsInChild(t *testing.T) {
	testutil.ComputeInChild(t, func(t *testing.T, seed uint64) []byte { return assignmentsJSON(t, seed, 200) })
}

// TestSameInAnotherProcess: this test binary, run again as another
// process, computes the same assignments and fingerprints, and the same
// cluster schedules (Schedule), and an
// assignment read back from JSON has the fingerprint it was written with.
func TestSameInAnotherProcess(t *testing.T) {
	testutil.SameInAnotherProcess(t, "TestAssignmentsInChild", func(t *testing.T, seed uint64) []byte { return assignmentsJSON(t, seed, 200) })
}
