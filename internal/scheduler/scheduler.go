// Package scheduler places a plan's executors (internal/plan) on worker
// slots. An Assignment is the result: which worker runs each executor,
// and where each worker listens. It is pure data: the workers of a
// topology are given one and route by it, so that they never compute
// placement themselves, and its Fingerprint lets two workers check that
// they hold the same one.
//
// Schedule (cluster.go) is the cluster scheduler nimbus runs: it places
// whole topologies' workers on the live supervisors' slots, with Even's
// executor map, isolation.scheduler.machines, a reason for every topology
// it cannot place, and as little movement as it can.
//
// Everything here is a pure function of its arguments: no clock, no
// randomness, no goroutines.
package scheduler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/gale-stream/gale/internal/plan"
)

var (
	// ErrNoSlots is wrapped by the error for scheduling onto no slots.
	ErrNoSlots = errors.New("scheduler: no free slots")
	// ErrInvalid is wrapped by every error about a bad slot list or
	// assignment.
	ErrInvalid = errors.New("scheduler: invalid assignment")
)

// Slot is a place a worker can run: one worker process.
type Slot struct {
	// ID names the slot; unique among the slots of an assignment.
	ID string `json:"id"`
	// Addr is where the worker in the slot accepts its peers (host:port).
	Addr string `json:"addr"`
}

// Assignment places every executor of a plan on one of its slots. The
// workers are the slots, by index.
type Assignment struct {
	Slots []Slot `json:"slots"`
	// Executors maps each executor index of the plan to the index in
	// Slots of the worker that runs it.
	Executors []int `json:"executors"`
}

// Even places executors round-robin: the components' executors in
// executor order (task order), executor i on slot i mod n, as Storm's
// even scheduler does.
func Even(p plan.Plan, slots []Slot) (Assignment, error) {
	if len(slots) == 0 {
		return Assignment{}, fmt.Errorf("%w: the plan's %d executors need at least one worker slot", ErrNoSlots, len(p.Executors))
	}
	if err := checkSlots(slots); err != nil {
		return Assignment{}, err
	}
	return Assignment{Slots: append([]Slot(nil), slots...), Executors: evenExecutors(p, len(slots))}, nil
}

// evenExecutors is Even's executor → worker map for n ≥ 1 workers.
func evenExecutors(p plan.Plan, n int) []int {
	execs := make([]int, len(p.Executors))
	for i := range p.Executors {
		execs[i] = i % n
	}
	return execs
}

func checkSlots(slots []Slot) error {
	seen := make(map[string]int, len(slots))
	for i, s := range slots {
		if s.ID == "" {
			return fmt.Errorf("%w: slot %d has an empty id", ErrInvalid, i)
		}
		if j, dup := seen[s.ID]; dup {
			return fmt.Errorf("%w: slots %d and %d have the same id %q", ErrInvalid, j, i, s.ID)
		}
		seen[s.ID] = i
	}
	return nil
}

// Validate checks that a places each of p's executors on exactly one of
// its slots. The error names the first executor at fault.
func (a Assignment) Validate(p plan.Plan) error {
	if len(a.Slots) == 0 {
		return fmt.Errorf("%w: it lists no worker slots", ErrInvalid)
	}
	if err := checkSlots(a.Slots); err != nil {
		return err
	}
	if len(a.Executors) != len(p.Executors) {
		return fmt.Errorf("%w: it places %d executors, the plan has %d: was it made for another topology or configuration?",
			ErrInvalid, len(a.Executors), len(p.Executors))
	}
	for i, w := range a.Executors {
		if w < 0 || w >= len(a.Slots) {
			return fmt.Errorf("%w: executor %d (%s) is placed on worker %d, which is not one of the %d workers (0–%d)",
				ErrInvalid, i, p.Executors[i], w, len(a.Slots), len(a.Slots)-1)
		}
	}
	return nil
}

// On returns the indexes of the executors worker w runs, in order.
func (a Assignment) On(w int) []int {
	var es []int
	for i, x := range a.Executors {
		if x == w {
			es = append(es, i)
		}
	}
	return es
}

// Fingerprint summarises the assignment: the slots (ids and addresses,
// in order) and where each executor runs. Equal assignments have equal
// fingerprints in every process; two that differ anywhere differ in
// fingerprint, barring a 64-bit hash collision.
func (a Assignment) Fingerprint() string {
	h := fnv.New64a()
	var buf []byte
	str := func(s string) {
		buf = binary.AppendUvarint(buf[:0], uint64(len(s)))
		h.Write(buf)
		h.Write([]byte(s))
	}
	num := func(n int) {
		buf = binary.AppendVarint(buf[:0], int64(n))
		h.Write(buf)
	}
	num(len(a.Slots))
	for _, s := range a.Slots {
		str(s.ID)
		str(s.Addr)
	}
	num(len(a.Executors))
	for _, w := range a.Executors {
		num(w)
	}
	return strconv.FormatUint(h.Sum64(), 16)
}
