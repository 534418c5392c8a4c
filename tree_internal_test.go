package gale

import (
	"errors"
	"testing"

	"github.com/gale-stream/gale/internal/worker"
)

// TestRootNamesItsSpoutTask: a root carries its spout task and slot, every
// bit of the tag survives, and nothing spills into doneBit.
func TestRootNamesItsSpoutTask(t *testing.T) {
	for _, c := range []struct {
		task int32
		slot uint32
		tag  uint64
	}{{1, 0, 0}, {7, 12345, 0xdeadbeef}, {maxTreeTask, maxTreesPerTask - 1, 1<<64 - 1}} {
		root := makeRoot(c.task, c.slot, c.tag)
		if root == 0 || root&doneBit != 0 {
			t.Fatalf("makeRoot(%d, %d, %#x) = %#x: want non-zero with doneBit clear", c.task, c.slot, c.tag, root)
		}
		if rootTask(root) != c.task || rootSlot(root) != c.slot {
			t.Errorf("root %#x: task %d slot %d, want %d and %d", root, rootTask(root), rootSlot(root), c.task, c.slot)
		}
		if got, want := root>>(treeSlotBits+treeTaskBits), c.tag&(1<<treeTagBits-1); got != want {
			t.Errorf("root %#x: tag %#x, want %#x", root, got, want)
		}
	}
}

// TestTreesGoToTheirSpoutsWorker: in a worker of several, the trees a
// spout task emits name its own executor, and a bolt's acks reach it
// there; a root that names a bolt task or no task is refused, by the
// runtime and by the wire decoder.
func TestTreesGoToTheirSpoutsWorker(t *testing.T) {
	tb := NewTopologyBuilder()
	tb.SetSpout("s", func() Spout { return &benchSpout{} }, 2)
	tb.SetBolt("b", func() Bolt { return &benchBolt{} }, 2).ShuffleGrouping("s")
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	for w := range 2 {
		asg := &worker.Assignment{Worker: w, Workers: []string{"127.0.0.1:1", "127.0.0.1:2"}}
		rt, err := newRuntimeWith("roots", topo, nil, RunOptions{}, asg)
		if err != nil {
			t.Fatal(err)
		}
		if len(rt.spoutExecs) != 1 {
			t.Fatalf("worker %d runs %d spout executors, want 1", w, len(rt.spoutExecs))
		}
		x := rt.spoutExecs[0]
		task := x.tasks[0]
		x.now = 1
		for i := range 100 {
			if _, err := task.emit(DefaultStream, i, -1, []any{i}); err != nil {
				t.Fatal(err)
			}
		}
		if task.pending.len() != 100 {
			t.Fatalf("worker %d: %d trees pending, want 100", w, task.pending.len())
		}
		// Every tuple's root names this executor; acking each tuple
		// (what the bolt sends) completes every tree.
		var acks []ackMsg
		for _, b := range x.out.data {
			if b == nil {
				continue
			}
			for _, tp := range b.tuples {
				if exec, ok := rt.treeExec(tp.treeRoot()); !ok || exec != x.idx {
					t.Fatalf("worker %d: root %#x goes to executor %d (%t), want spout executor %d", w, tp.treeRoot(), exec, ok, x.idx)
				}
				acks = append(acks, ackMsg{kind: msgAck, root: tp.treeRoot(), val: tp.edge})
			}
		}
		ab := rt.getAckBatch()
		ab.msgs = append(ab.msgs, acks...)
		if err := rt.checkAcks(x.idx, ab); err != nil {
			t.Fatalf("worker %d: checkAcks: %v", w, err)
		}
		rt.inflight.Add(int64(len(ab.msgs)))
		x.handleCtl(ab)
		if task.pending.len() != 0 || x.acked != 100 {
			t.Errorf("worker %d: %d pending and %d acked after the acks, want 0 and 100", w, task.pending.len(), x.acked)
		}
		// Roots that name a bolt's task, task 0 or no task at all.
		boltTask := int32(rt.comps["b"].firstTask)
		for _, root := range []uint64{makeRoot(boltTask, 0, 1), makeRoot(0, 3, 1), makeRoot(maxTreeTask, 3, 1)} {
			if exec, ok := rt.treeExec(root); ok {
				t.Errorf("root %#x of task %d went to executor %d, want refused", root, rootTask(root), exec)
			}
			bad := rt.getAckBatch()
			bad.msgs = append(bad.msgs, ackMsg{kind: msgAck, root: root, val: 1})
			if err := rt.checkAcks(x.idx, bad); !errors.Is(err, errWire) {
				t.Errorf("checkAcks of root %#x: %v, want errWire", root, err)
			}
		}
		// A tree message for the other spout executor's task is refused too.
		sc := rt.comps["s"]
		for other := sc.firstTask; other < sc.firstTask+sc.numTasks; other++ {
			if rt.taskExec[other] == x.idx {
				continue
			}
			bad := rt.getAckBatch()
			bad.msgs = append(bad.msgs, ackMsg{kind: msgAck, root: makeRoot(int32(other), 0, 1), val: 1})
			if err := rt.checkAcks(x.idx, bad); !errors.Is(err, errWire) {
				t.Errorf("checkAcks of another executor's tree: %v, want errWire", err)
			}
		}
	}
}

// TestTooManyTreesRefused: a task with maxTreesPerTask trees in flight
// refuses another tracked emit with an error, and emits nothing.
func TestTooManyTreesRefused(t *testing.T) {
	// A full table: every slot taken, none free (the entries are left
	// zero so that the pages are never touched).
	p := newPendingMap()
	p.slots = make([]pendingEntry, maxTreesPerTask)
	if _, ok := p.next(); ok {
		t.Fatal("next found a slot in a full table")
	}
	rt := wireRuntime(t)
	task := rt.spoutExecs[0].tasks[0]
	task.pending = p
	if _, err := task.emit(DefaultStream, "id", -1, []any{"v"}); !errors.Is(err, errTooManyTrees) {
		t.Fatalf("emit into a full table: %v, want errTooManyTrees", err)
	}
	if task.emits != 0 {
		t.Errorf("%d emits counted, want 0", task.emits)
	}
}
