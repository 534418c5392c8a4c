package gale

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/gale-stream/gale/internal/fieldhash"
	"github.com/gale-stream/gale/internal/xrand"
)

// outStream is one emitting task's view of one of its output streams: the
// stream's metadata and, for each subscribing bolt, how to pick tasks.
type outStream struct {
	info   *streamInfo
	subs   []*router
	arity  int  // len(info.fields), kept here for the emit check
	direct bool // info.direct
	custom bool // some subscriber uses a custom grouping
	remote bool // some subscriber task runs in another worker
	oneSub bool // one subscriber, by a built-in grouping other than direct, and not a direct stream: emitOne's case

	// With topology.stats.enabled: the tuples emitted on the stream and
	// the copies sent to another worker, kept by the emitting task's
	// goroutine and published for the stats reader.
	emitted, transferred       int64
	pubEmitted, pubTransferred atomic.Int64

	_ [48]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

// router picks the consumer tasks of one subscription for one emitting
// task. It belongs to the emitting task's goroutine.
type router struct {
	consumer string
	kind     groupingKind
	tasks    []int // consumer task ids, ascending
	fieldIdx []int // fields and partial key groupings: positions of the grouping fields
	field0   int   // the position when there is exactly one, else -1
	next     int   // shuffle: round-robin position
	custom   CustomGrouping
	// Partial key grouping: the tuples this emitting task has sent to
	// each of tasks, as Storm's PartialKeyGrouping counts its load.
	sent []int64
}

func newRouter(rt *runtime, sub *subscription, emitterTask int, rng *xrand.Source) *router {
	r := &router{consumer: sub.consumer.id, kind: kindOf(sub.grouping.Type), fieldIdx: sub.fieldIdx, field0: -1}
	if len(r.fieldIdx) == 1 {
		r.field0 = r.fieldIdx[0]
	}
	for i := 0; i < sub.consumer.numTasks; i++ {
		r.tasks = append(r.tasks, sub.consumer.firstTask+i)
	}
	if sub.grouping.Type == GroupingLocalOrShuffle && rt.asg != nil {
		// Prefer the consumer's tasks in this worker, if it has any.
		var local []int
		for _, t := range r.tasks {
			if rt.local(rt.taskExec[t]) {
				local = append(local, t)
			}
		}
		if len(local) > 0 {
			r.tasks = local
		}
	}
	if len(r.tasks) > 0 {
		r.next = rng.Intn(len(r.tasks))
	}
	r.tasks = lineClone(r.tasks)
	if r.kind == kindPartialKey {
		r.sent = lineSlice[int64](len(r.tasks))
	}
	if r.kind == kindCustom {
		r.custom = rt.topo.customs[sub.grouping.Custom]()
		r.custom.Prepare(sub.consumer.id, sub.stream, slices.Clone(r.tasks))
	}
	return r
}

// choose appends the chosen consumer tasks to dst for the built-in
// groupings (custom ones go through chooseCustom, so that vals, often the
// caller's variadic slice, never escapes). direct is the task named by
// EmitDirect, or -1.
func (r *router) choose(dst []int, vals []any, direct int) []int {
	switch r.kind {
	case kindShuffle:
		// Local-or-shuffle is a shuffle over the local tasks (newRouter).
		t := r.tasks[r.next]
		r.next++
		if r.next == len(r.tasks) {
			r.next = 0
		}
		return append(dst, t)
	case kindFields:
		if len(r.tasks) == 1 {
			// One task gets every key: no need to hash (fieldhash.Add
			// takes any value, so skipping it cannot hide an error).
			return append(dst, r.tasks[0])
		}
		return append(dst, r.tasks[fieldhash.Bucket(r.hash(vals), len(r.tasks))])
	case kindPartialKey:
		if len(r.tasks) == 1 {
			r.sent[0]++
			return append(dst, r.tasks[0])
		}
		// Storm's PartialKeyGrouping: two hashes of the key name two
		// candidate tasks, and the tuple goes to the one this task has
		// sent fewer tuples to (the first on a tie).
		h := r.hash(vals)
		a, b := fieldhash.Bucket(h, len(r.tasks)), fieldhash.Bucket(fieldhash.Second(h), len(r.tasks))
		if r.sent[a] > r.sent[b] {
			a = b
		}
		r.sent[a]++
		return append(dst, r.tasks[a])
	case kindAll:
		return append(dst, r.tasks...)
	case kindGlobal:
		return append(dst, r.tasks[0])
	case kindDirect:
		if direct >= 0 {
			if _, ok := slices.BinarySearch(r.tasks, direct); ok {
				dst = append(dst, direct)
			}
		}
	}
	return dst
}

// hash hashes the grouping fields of vals, for the fields and partial key
// groupings.
func (r *router) hash(vals []any) uint64 {
	if r.field0 >= 0 {
		if s, ok := vals[r.field0].(string); ok {
			return fieldhash.String(s)
		}
		return fieldhash.Add(fieldhash.Seed, vals[r.field0])
	}
	h := fieldhash.Seed
	for _, i := range r.fieldIdx {
		h = fieldhash.Add(h, vals[i])
	}
	return h
}

// chooseCustom asks a custom grouping and checks its answer.
func (r *router) chooseCustom(dst []int, vals []any, emitter int) ([]int, error) {
	for _, t := range r.custom.ChooseTasks(emitter, vals) {
		if _, ok := slices.BinarySearch(r.tasks, t); !ok {
			return dst, fmt.Errorf("%w: custom grouping to %q chose task %d, which is not one of its tasks %v", ErrGrouping, r.consumer, t, r.tasks)
		}
		dst = append(dst, t)
	}
	return dst, nil
}

type groupingKind uint8

const (
	kindShuffle groupingKind = iota // shuffle, none, local-or-shuffle
	kindFields
	kindAll
	kindGlobal
	kindDirect
	kindCustom
	kindPartialKey
)

func kindOf(t string) groupingKind {
	switch t {
	case GroupingFields:
		return kindFields
	case GroupingAll:
		return kindAll
	case GroupingGlobal:
		return kindGlobal
	case GroupingDirect:
		return kindDirect
	case GroupingCustom:
		return kindCustom
	case GroupingPartialKey:
		return kindPartialKey
	}
	return kindShuffle
}
