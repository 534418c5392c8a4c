package gale

import (
	"fmt"
	"slices"

	"github.com/gale-stream/gale/internal/fieldhash"
	"github.com/gale-stream/gale/internal/xrand"
)

// outStream is one emitting task's view of one of its output streams: the
// stream's metadata and, for each subscribing bolt, how to pick tasks.
type outStream struct {
	info *streamInfo
	subs []*router
}

// router picks the consumer tasks of one subscription for one emitting
// task. It belongs to the emitting task's goroutine.
type router struct {
	consumer string
	kind     string
	tasks    []int32 // consumer task ids, ascending
	fieldIdx []int   // fields grouping: positions of the grouping fields
	next     int     // shuffle: round-robin position
	custom   CustomGrouping
	ints     []int // scratch for custom groupings
}

func newRouter(rt *runtime, sub *subscription, emitterTask int, rng *xrand.Source) *router {
	r := &router{consumer: sub.consumer.id, kind: sub.grouping.Type, fieldIdx: sub.fieldIdx}
	for i := 0; i < sub.consumer.numTasks; i++ {
		r.tasks = append(r.tasks, int32(sub.consumer.firstTask+i))
	}
	if len(r.tasks) > 0 {
		r.next = rng.Intn(len(r.tasks))
	}
	if r.kind == GroupingCustom {
		r.custom = rt.topo.customs[sub.grouping.Custom]()
		ints := make([]int, len(r.tasks))
		for i, t := range r.tasks {
			ints[i] = int(t)
		}
		r.custom.Prepare(sub.consumer.id, sub.stream, ints)
	}
	return r
}

// choose appends the chosen consumer tasks to dst. direct is the task named
// by EmitDirect, or -1.
func (r *router) choose(dst []int32, vals []any, emitter int, direct int32) ([]int32, error) {
	switch r.kind {
	case GroupingShuffle, GroupingNone, GroupingLocalOrShuffle:
		// In one process every task is local, so local-or-shuffle is a
		// shuffle; across workers the transport narrows the choice.
		t := r.tasks[r.next]
		r.next++
		if r.next == len(r.tasks) {
			r.next = 0
		}
		return append(dst, t), nil
	case GroupingFields:
		h := fieldhash.Seed
		for _, i := range r.fieldIdx {
			h = fieldhash.Add(h, vals[i])
		}
		return append(dst, r.tasks[fieldhash.Bucket(h, len(r.tasks))]), nil
	case GroupingAll:
		return append(dst, r.tasks...), nil
	case GroupingGlobal:
		return append(dst, r.tasks[0]), nil
	case GroupingDirect:
		if direct >= 0 {
			if _, ok := slices.BinarySearch(r.tasks, direct); ok {
				dst = append(dst, direct)
			}
		}
		return dst, nil
	case GroupingCustom:
		chosen := r.custom.ChooseTasks(emitter, vals)
		for _, t := range chosen {
			if _, ok := slices.BinarySearch(r.tasks, int32(t)); !ok {
				return dst, fmt.Errorf("gale: custom grouping to %q chose task %d, which is not one of its tasks %v", r.consumer, t, r.tasks)
			}
			dst = append(dst, int32(t))
		}
		return dst, nil
	}
	return dst, nil
}
