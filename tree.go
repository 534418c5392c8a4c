package gale

import (
	"errors"
	"fmt"
)

// A tree's root id says where its ledger is. Each spout task keeps the XOR
// of the trees it emitted in its table of trees in flight (pendingMap), so
// the root names the spout task and the slot of the tree's entry there,
// with random bits that tell the tree from earlier ones in the same slot:
//
//	bit  63     doneBit (a tuple's own state, never part of the id)
//	bits 42–62  tag: random, drawn at emit
//	bits 22–41  the spout task id
//	bits  0–21  the slot in that task's table
//
// A bolt acks, fails or resets a tree by sending (root, value) to the spout
// executor of the root's task; the spout finds the entry by slot and checks
// the whole root there. A message for a tree that is gone (timed out,
// failed, replayed) finds its slot free or holding a tree with another
// root, and is dropped; one in 2^21 of those stale messages would match a
// newer tree's tag, and at worst fails that tree or keeps it from
// completing, so that it is replayed: at-least-once holds either way.
const (
	treeSlotBits = 22
	treeTaskBits = 20
	treeTagBits  = 63 - treeSlotBits - treeTaskBits

	// maxTreesPerTask is the most trees a spout task has in flight.
	maxTreesPerTask = 1 << treeSlotBits
	// maxTreeTask is the highest task id a spout may have with acking on.
	maxTreeTask = 1<<treeTaskBits - 1
)

// makeRoot returns the root of the tree in slot of task, with tag's low
// treeTagBits bits. Task ids start at 1, so a root is never 0.
func makeRoot(task int32, slot uint32, tag uint64) uint64 {
	return tag<<(treeSlotBits+treeTaskBits)&^doneBit | uint64(task)<<treeSlotBits | uint64(slot)
}

// rootTask is the spout task of root's tree.
func rootTask(root uint64) int32 {
	return int32(root >> treeSlotBits & maxTreeTask)
}

// rootSlot is the slot of root's tree in its spout task's table.
func rootSlot(root uint64) uint32 {
	return uint32(root & (maxTreesPerTask - 1))
}

// treeExec returns the executor of root's spout task, or false if root
// names no spout task of this topology (a hostile or broken peer's tuple).
func (rt *runtime) treeExec(root uint64) (int, bool) {
	task := int(rootTask(root))
	if task >= len(rt.taskExec) {
		return 0, false
	}
	exec := rt.taskExec[task]
	if exec < 0 || !rt.execs[exec].isSpout {
		return 0, false
	}
	return exec, true
}

// AckerComponent is the component id of Storm's acker system bolt. Gale
// has no acker bolt: each spout task keeps the XOR ledger of its own
// trees, so acking scales with the spouts and a tree's acks go to the
// worker of its spout and nowhere else. No component has this id; it stays
// reserved, as every id starting "__" is.
const AckerComponent = "__acker"

// errTooManyTrees refuses a spout's emit when its task already has
// maxTreesPerTask trees in flight.
var errTooManyTrees = errors.New(fmt.Sprintf("gale: the spout task has %d tuple trees in flight, the most Gale tracks per task: "+
	"emit fewer tuples with message ids per NextTuple call, or set topology.max.spout.pending", maxTreesPerTask))
