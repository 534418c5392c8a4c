package gale

import (
	"fmt"
	"sort"

	"github.com/gale-stream/gale/internal/config"
)

// A worker's memory budget (worker.heap.memory.mb) bounds two things the
// parallelism multiplies: what every executor and task costs by merely
// existing (queues, outbox tables, pending maps, tuple slabs, goroutines),
// checked when the topology starts, and the trees the automatic in-flight
// limit lets the worker's spout tasks have, shared by all of them. See
// docs/architecture.md, "Memory of a worker".

// memBudget is one worker's share of its memory budget.
type memBudget struct {
	heapBytes int64
	// trees is the most trees the automatic in-flight limit lets this
	// worker's spout tasks have in flight, together.
	trees int
	// spoutTasks is the number of spout tasks in this worker.
	spoutTasks int
}

// Estimated costs. They are deliberately round: the check refuses a
// parallelism that could not fit, it does not account every byte.
const (
	// treeBytes is what a tree in flight costs: its pending entry (the
	// XOR ledger's too), its message id, and a few tuples of it in queues.
	treeBytes = 1 << 10
	// execBytes is an executor's own cost besides its tables: a goroutine
	// stack and its bookkeeping.
	execBytes = 9 << 10
	// taskBytes is a task's: its tuple slab (slabSize tuples of 64 bytes),
	// context, logger, emitter and component instance.
	taskBytes = slabSize*64 + 2<<10
	// spoutTaskBytes is what a spout task adds: its pending table.
	spoutTaskBytes = pendingBuckets * 256
	// treeShare is the part of the heap budget the automatic in-flight
	// limit may fill with trees (1/treeShare).
	treeShare = 4
	// fixedShare is the part of the heap budget executors and tasks may
	// take by existing (1/fixedShare); the rest is for the data.
	fixedShare = 2
)

// compCount is how many of a component's tasks and executors run in this
// worker.
type compCount struct {
	c            *compInfo
	tasks, execs int
}

// checkBudget counts this worker's executors and tasks (the slots and
// placement must be made), refuses a parallelism whose fixed costs do not
// fit in the worker's heap budget, and sets rt.mem.
func (rt *runtime) checkBudget() error {
	mb, _ := rt.conf.Int(config.WorkerHeapMemoryMB)
	rt.mem.heapBytes = int64(mb) << 20
	var counts []compCount
	for _, c := range rt.comps {
		cc := compCount{c: c}
		last := -1
		for t := c.firstTask; t < c.firstTask+c.numTasks; t++ {
			if e := rt.taskExec[t]; rt.local(e) {
				cc.tasks++
				if e != last {
					cc.execs++
					last = e
				}
			}
		}
		counts = append(counts, cc)
		if c.isSpout {
			rt.mem.spoutTasks += cc.tasks
		}
	}
	sort.Slice(counts, func(i, j int) bool { return counts[i].c.id < counts[j].c.id })
	total := rt.fixedBytes(counts)
	if limit := rt.mem.heapBytes / fixedShare; total > limit {
		// Name the component that costs the most, and how many of its
		// tasks would fit with the others as they are.
		worst, worstBytes := 0, int64(-1)
		for i := range counts {
			if b := rt.fixedBytes(counts[i : i+1]); b > worstBytes {
				worst, worstBytes = i, b
			}
		}
		cc := counts[worst]
		fit := sort.Search(cc.tasks+1, func(n int) bool {
			trial := append([]compCount(nil), counts...)
			trial[worst] = compCount{c: cc.c, tasks: n, execs: min(n, cc.execs)}
			return rt.fixedBytes(trial) > limit
		}) - 1
		kind := "bolt"
		if cc.c.isSpout {
			kind = "spout"
		}
		return fmt.Errorf("%w: %s %s: %d tasks in one worker need ~%d MiB of the worker's %d MiB (%s), more than the 1/%d of it executors and tasks may take; at most %d fit: lower its parallelism or add workers",
			ErrInvalidTopology, kind, cc.c.id, cc.tasks, (total+(1<<20)-1)>>20, mb, config.WorkerHeapMemoryMB, fixedShare, max(fit, 0))
	}
	rt.mem.trees = int(rt.mem.heapBytes / treeShare / treeBytes)
	rt.setFeedbackBudget()
	return nil
}

// fixedBytes estimates what the executors and tasks in counts cost by
// existing. A component's outbox has a slot per task of its consumers and,
// for a bolt with acking on, per spout executor upstream; a spout's queue
// of tree messages is treeQueueCap batches long.
func (rt *runtime) fixedBytes(counts []compCount) int64 {
	queue := int64(execBytes) + 8*int64(rt.queueCap)
	// A spout's executors in the whole topology; the trial counts of
	// checkBudget change this worker's share only.
	spoutExecs := func(sp *compInfo) int64 {
		n := int64(rt.taskExec[sp.firstTask+sp.numTasks-1] - rt.taskExec[sp.firstTask] + 1)
		for _, cc := range counts {
			if cc.c == sp {
				n += int64(cc.execs - rt.localExecs(sp))
			}
		}
		return n
	}
	var n int64
	for _, cc := range counts {
		exec := queue
		task := int64(taskBytes)
		for _, subs := range cc.c.subs {
			for _, s := range subs {
				exec += 8 * int64(s.consumer.numTasks)    // outbox slots (at most)
				task += 64 + 8*int64(s.consumer.numTasks) // a router
			}
		}
		if cc.c.isSpout {
			exec += 8 * int64(rt.treeQueueCap(cc.c)-rt.queueCap)
			task += spoutTaskBytes
			if rt.acking {
				task += treeBytes // at least one tree in flight
			}
		} else if rt.acking {
			for _, sp := range rt.spoutsUpstream(cc.c) {
				exec += 8 * spoutExecs(sp) // outbox slots
			}
		}
		n += int64(cc.execs)*exec + int64(cc.tasks)*task
	}
	return n
}

// localTasks and localExecs count c's tasks and executors in this worker.
func (rt *runtime) localTasks(c *compInfo) int {
	n := 0
	for t := c.firstTask; t < c.firstTask+c.numTasks; t++ {
		if rt.local(rt.taskExec[t]) {
			n++
		}
	}
	return n
}

func (rt *runtime) localExecs(c *compInfo) int {
	n, last := 0, -1
	for t := c.firstTask; t < c.firstTask+c.numTasks; t++ {
		if e := rt.taskExec[t]; rt.local(e) && e != last {
			n++
			last = e
		}
	}
	return n
}

// autoBounds returns the least and the most trees per task the automatic
// in-flight limit sets for a spout task of this worker: the worker's
// floor (autoPendingFloor) and its tree budget, shared by its spout tasks.
func (rt *runtime) autoBounds() (floor, most int) {
	n := max(rt.mem.spoutTasks, 1)
	most = max(1, rt.mem.trees/n)
	floor = min(most, max(1, autoPendingFloor/n))
	return floor, most
}

// setFeedbackBudget sets what this worker's feedback queues may hold (see
// feedbackBudget), if the topology has cycles: its bolts' input queues,
// and the trees topology.max.spout.pending admits in the whole topology
// (their tuples may come round through this worker); the automatic limits
// add theirs as they change (spoutExec.setAutoLimit).
func (rt *runtime) setFeedbackBudget() {
	if len(rt.feedback) == 0 {
		return
	}
	recv, _ := rt.conf.Int(TopologyExecutorReceiveBufferSize)
	bolts := 0
	for _, c := range rt.comps {
		if !c.isSpout {
			bolts += rt.localExecs(c)
		}
	}
	rt.fbBudget.floor = int64(recv) * int64(bolts+2)
	rt.fbBudget.workers = 1
	if rt.asg != nil {
		rt.fbBudget.workers = int64(len(rt.asg.Workers))
	}
	rt.fbBudget.gate = int64(recv)
	if !rt.acking {
		return
	}
	for _, c := range rt.comps {
		if mp, _ := c.conf.Int(TopologyMaxSpoutPending); c.isSpout && mp > 0 {
			rt.fbBudget.fixed += int64(mp * c.numTasks)
		}
	}
}
