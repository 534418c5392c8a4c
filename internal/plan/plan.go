// Package plan numbers a topology's tasks, executors and streams. The
// plan is what every process of a topology must agree on: a task id or a
// stream id on the wire means the same thing in each of them, and the
// scheduler (internal/scheduler) places the plan's executors on workers.
//
// New is a pure function of its input: no clock, no randomness, no
// goroutines, and the order of the input's components does not matter.
// Any process that computes the plan of the same Topology gets the same
// Plan, field for field.
package plan

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
)

// ErrInvalid is wrapped by every error New returns.
var ErrInvalid = errors.New("plan: invalid topology")

// Topology is what the plan is computed from: the components with their
// effective numbers (config applied). Acking needs no executors of its
// own: each spout task keeps its trees.
type Topology struct {
	Components []Component `json:"components"`
}

// Component is one spout or bolt.
type Component struct {
	ID    string `json:"id"`
	Spout bool   `json:"spout,omitempty"`
	// Tasks is the number of tasks declared, Parallelism the executors.
	Tasks       int `json:"tasks"`
	Parallelism int `json:"parallelism"`
	// MaxTaskParallelism caps the tasks (topology.max.task.parallelism,
	// as it applies to this component); 0 means no cap.
	MaxTaskParallelism int `json:"max_task_parallelism,omitempty"`
	// Streams are the ids of the declared output streams, in declaration
	// order.
	Streams []string `json:"streams"`
	// Inputs are the streams a bolt subscribes to.
	Inputs []Input `json:"inputs,omitempty"`
}

// Input is a subscription to another component's stream.
type Input struct {
	Component string `json:"component"`
	Stream    string `json:"stream"`
	// Grouping is how the stream's tuples are spread over the bolt's
	// tasks, by Storm's names (shuffle, fields, all, global, none,
	// direct, local-or-shuffle, custom); Fields are a fields grouping's
	// fields. They describe the topology for its users (the UI, `gale
	// list`); the plan's numbering does not depend on them, and empty
	// means not known.
	Grouping string   `json:"grouping,omitempty"`
	Fields   []string `json:"fields,omitempty"`
}

// Kind is what an executor runs.
type Kind uint8

const (
	Spout Kind = iota + 1
	Bolt
)

func (k Kind) String() string {
	switch k {
	case Spout:
		return "spout"
	case Bolt:
		return "bolt"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText writes the kind by name, so that a plan's JSON reads.
func (k Kind) MarshalText() ([]byte, error) {
	if k < Spout || k > Bolt {
		return nil, fmt.Errorf("plan: unknown executor kind %d", k)
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a kind written by MarshalText.
func (k *Kind) UnmarshalText(b []byte) error {
	for _, c := range []Kind{Spout, Bolt} {
		if string(b) == c.String() {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("plan: unknown executor kind %q (want spout or bolt)", b)
}

// Plan is a topology's numbering.
//
// Task ids run from 1 to Tasks, component by component in id order (as
// Storm numbers them). Executors are numbered the same way: each
// component's tasks are split into min(parallelism, tasks) contiguous
// ranges, one executor each. Streams are numbered from 0, component by component in id
// order, each component's in declaration order.
type Plan struct {
	Components []ComponentPlan `json:"components"` // in id order
	Executors  []Executor      `json:"executors"`  // by executor index
	Streams    []Stream        `json:"streams"`    // by stream id
	Tasks      int             `json:"tasks"`      // the highest task id
}

// ComponentPlan is one component's share of the numbering.
type ComponentPlan struct {
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// FirstTask and Tasks: its task ids are FirstTask … FirstTask+Tasks-1.
	FirstTask int `json:"first_task"`
	Tasks     int `json:"tasks"`
	// FirstExecutor and Executors: its executors' indexes.
	FirstExecutor int `json:"first_executor"`
	Executors     int `json:"executors"`
}

// Executor is one executor: a component's contiguous range of tasks.
type Executor struct {
	Kind      Kind   `json:"kind"`
	Component string `json:"component,omitempty"`
	FirstTask int    `json:"first_task,omitempty"`
	Tasks     int    `json:"tasks,omitempty"`
}

func (e Executor) String() string {
	switch {
	case e.Tasks == 1:
		return fmt.Sprintf("%s %q, task %d", e.Kind, e.Component, e.FirstTask)
	}
	return fmt.Sprintf("%s %q, tasks %d–%d", e.Kind, e.Component, e.FirstTask, e.FirstTask+e.Tasks-1)
}

// Stream is one declared stream; its id is its index in Plan.Streams.
type Stream struct {
	Component string `json:"component"`
	Stream    string `json:"stream"`
}

// New computes the plan of t. It returns an error wrapping ErrInvalid,
// naming the component at fault, for input no topology builder accepts.
func New(t Topology) (Plan, error) {
	if err := validate(t); err != nil {
		return Plan{}, err
	}
	comps := slices.Clone(t.Components)
	slices.SortFunc(comps, func(a, b Component) int { return cmp.Compare(a.ID, b.ID) })
	var p Plan
	for _, c := range comps {
		kind := Bolt
		if c.Spout {
			kind = Spout
		}
		tasks := c.Tasks
		if c.MaxTaskParallelism > 0 {
			tasks = min(tasks, c.MaxTaskParallelism)
		}
		cp := ComponentPlan{ID: c.ID, Kind: kind, FirstTask: p.Tasks + 1, Tasks: tasks,
			FirstExecutor: len(p.Executors), Executors: min(c.Parallelism, tasks)}
		for e := range cp.Executors {
			lo := e * tasks / cp.Executors
			hi := (e + 1) * tasks / cp.Executors
			p.Executors = append(p.Executors, Executor{Kind: kind, Component: c.ID, FirstTask: cp.FirstTask + lo, Tasks: hi - lo})
		}
		for _, s := range c.Streams {
			p.Streams = append(p.Streams, Stream{Component: c.ID, Stream: s})
		}
		p.Tasks += tasks
		p.Components = append(p.Components, cp)
	}
	return p, nil
}

func validate(t Topology) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	streams := make(map[string]map[string]bool, len(t.Components))
	for _, c := range t.Components {
		switch {
		case c.ID == "":
			return bad("a component has an empty id")
		case streams[c.ID] != nil:
			return bad("two components have the id %q", c.ID)
		case c.Tasks < 1:
			return bad("component %q: %d tasks, want ≥ 1", c.ID, c.Tasks)
		case c.Parallelism < 1:
			return bad("component %q: parallelism %d, want ≥ 1", c.ID, c.Parallelism)
		case c.MaxTaskParallelism < 0:
			return bad("component %q: max task parallelism %d, want ≥ 1 (0: no cap)", c.ID, c.MaxTaskParallelism)
		case c.Spout && len(c.Inputs) > 0:
			return bad("spout %q has inputs; only bolts subscribe to streams", c.ID)
		}
		ss := make(map[string]bool, len(c.Streams))
		for _, s := range c.Streams {
			if s == "" || ss[s] {
				return bad("component %q: stream id %q is empty or declared twice", c.ID, s)
			}
			ss[s] = true
		}
		streams[c.ID] = ss
	}
	for _, c := range t.Components {
		for _, in := range c.Inputs {
			switch ss := streams[in.Component]; {
			case ss == nil:
				return bad("bolt %q subscribes to component %q, which the topology does not have", c.ID, in.Component)
			case !ss[in.Stream]:
				return bad("bolt %q subscribes to stream %q of %q, which does not declare it", c.ID, in.Stream, in.Component)
			}
		}
	}
	return nil
}

// Component returns the numbering of the component with the given id.
func (p Plan) Component(id string) (ComponentPlan, bool) {
	i, ok := slices.BinarySearchFunc(p.Components, id, func(c ComponentPlan, id string) int { return cmp.Compare(c.ID, id) })
	if !ok {
		return ComponentPlan{}, false
	}
	return p.Components[i], true
}

// TaskExecutors maps each task id to its executor's index; index 0, which
// is no task, holds -1.
func (p Plan) TaskExecutors() []int {
	te := make([]int, p.Tasks+1)
	te[0] = -1
	for i, e := range p.Executors {
		for t := e.FirstTask; t < e.FirstTask+e.Tasks; t++ {
			te[t] = i
		}
	}
	return te
}

// Fingerprint summarises the plan: two plans with the same fingerprint
// number tasks, executors and streams alike (barring a 64-bit hash
// collision). It is the same in every process.
func (p Plan) Fingerprint() string {
	h := fnv.New64a()
	b, _ := json.Marshal(p) // a Plan always marshals: plain fields and valid kinds
	h.Write(b)
	return strconv.FormatUint(h.Sum64(), 16)
}
