package acker

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// step is one call on a Ledger and what it must return.
type step struct {
	op         string // "init", "ack", "fail", "touch", "rotate"
	root, val  uint64
	task       int32
	reason     any
	want       Outcome
	wantTask   int32 // init: ignored; ack, fail: task returned with Complete/Failed; touch: task
	wantReason any   // init: reason returned with Failed
	wantOK     bool  // touch
	wantLen    int   // Len() after the step
}

func TestLedgerSteps(t *testing.T) {
	const r, r2 = 0xA1, 0xB2
	tests := []struct {
		name  string
		steps []step
	}{
		{"ack before init completes at init", []step{
			{op: "ack", root: r, val: 0x0F, want: Pending, wantLen: 1},
			{op: "ack", root: r, val: 0xF0, want: Pending, wantLen: 1},
			{op: "init", root: r, val: 0xFF, task: 5, want: Complete, wantLen: 0},
		}},
		{"init then acks complete at last ack", []step{
			{op: "init", root: r, val: 0x3, task: 9, want: Pending, wantLen: 1},
			{op: "ack", root: r, val: 0x1, want: Pending, wantLen: 1},
			{op: "ack", root: r, val: 0x2, want: Complete, wantTask: 9, wantLen: 0},
		}},
		{"fail before init reports the reason at init", []step{
			{op: "fail", root: r, reason: "boom", want: Pending, wantLen: 1},
			{op: "ack", root: r, val: 0x7, want: Pending, wantLen: 1},
			{op: "fail", root: r, reason: "second", want: Pending, wantLen: 1},
			{op: "init", root: r, val: 0x7, task: 3, want: Failed, wantReason: "boom", wantLen: 0},
		}},
		{"no completion without init", []step{
			{op: "ack", root: r, val: 0x5, want: Pending, wantLen: 1},
			{op: "ack", root: r, val: 0x5, want: Pending, wantLen: 1},
			{op: "init", root: r, val: 0x9, task: 1, want: Pending, wantLen: 1},
			{op: "ack", root: r, val: 0x9, want: Complete, wantTask: 1, wantLen: 0},
		}},
		{"fail before init keeps its reason across a rotation", []step{
			{op: "fail", root: r, reason: "boom", want: Pending, wantLen: 1},
			{op: "rotate", wantLen: 1},
			{op: "init", root: r, val: 0x7, task: 3, want: Failed, wantReason: "boom", wantLen: 0},
		}},
		{"fail after init reports the task", []step{
			{op: "init", root: r, val: 0x7, task: 4, want: Pending, wantLen: 1},
			{op: "fail", root: r, reason: "x", want: Failed, wantTask: 4, wantLen: 0},
			{op: "ack", root: r, val: 0x7, want: Pending, wantLen: 1}, // late ack: never completes
			{op: "rotate", wantLen: 1},
			{op: "rotate", wantLen: 0},
		}},
		{"failed tree never reported twice", []step{
			{op: "init", root: r, val: 0x7, task: 4, want: Pending, wantLen: 1},
			{op: "fail", root: r, reason: "x", want: Failed, wantTask: 4, wantLen: 0},
			{op: "fail", root: r, reason: "y", want: Pending, wantLen: 1},
			{op: "ack", root: r, val: 0x7, want: Pending, wantLen: 1},
		}},
		{"touch unknown root", []step{
			{op: "touch", root: r, wantOK: false, wantLen: 0},
		}},
		{"touch before init knows no task", []step{
			{op: "ack", root: r, val: 1, want: Pending, wantLen: 1},
			{op: "touch", root: r, wantOK: false, wantLen: 1},
		}},
		{"touch returns the spout task", []step{
			{op: "init", root: r, val: 1, task: 12, want: Pending, wantLen: 1},
			{op: "touch", root: r, wantTask: 12, wantOK: true, wantLen: 1},
		}},
		{"untouched tree dropped after two rotations", []step{
			{op: "init", root: r, val: 1, task: 2, want: Pending, wantLen: 1},
			{op: "rotate", wantLen: 1},
			{op: "rotate", wantLen: 0},
			{op: "touch", root: r, wantOK: false, wantLen: 0},
		}},
		{"touch keeps a tree across rotations", []step{
			{op: "init", root: r, val: 1, task: 2, want: Pending, wantLen: 1},
			{op: "init", root: r2, val: 1, task: 2, want: Pending, wantLen: 2},
			{op: "rotate", wantLen: 2},
			{op: "touch", root: r, wantTask: 2, wantOK: true, wantLen: 2},
			{op: "rotate", wantLen: 1}, // r2 dropped, r kept
			{op: "touch", root: r, wantTask: 2, wantOK: true, wantLen: 1},
			{op: "rotate", wantLen: 1},
			{op: "ack", root: r, val: 1, want: Complete, wantTask: 2, wantLen: 0},
		}},
		{"an ack keeps a tree across rotations", []step{
			{op: "init", root: r, val: 3, task: 6, want: Pending, wantLen: 1},
			{op: "rotate", wantLen: 1},
			{op: "ack", root: r, val: 1, want: Pending, wantLen: 1},
			{op: "rotate", wantLen: 1},
			{op: "ack", root: r, val: 2, want: Complete, wantTask: 6, wantLen: 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := New()
			for i, s := range tc.steps {
				where := fmt.Sprintf("step %d (%s %#x)", i, s.op, s.root)
				switch s.op {
				case "init":
					got, reason := l.Init(s.root, s.val, spoutOf(s.task))
					if got != s.want || reason != s.wantReason {
						t.Fatalf("%s: got (%v, %v), want (%v, %v)", where, got, reason, s.want, s.wantReason)
					}
				case "ack":
					got, to := l.Ack(s.root, s.val)
					task := to.Task
					if got != s.want || (got == Complete && to != spoutOf(s.wantTask)) {
						t.Fatalf("%s: got (%v, task %d), want (%v, task %d)", where, got, task, s.want, s.wantTask)
					}
				case "fail":
					got, to := l.Fail(s.root, s.reason)
					task := to.Task
					if got != s.want || (got == Failed && to != spoutOf(s.wantTask)) {
						t.Fatalf("%s: got (%v, task %d), want (%v, task %d)", where, got, task, s.want, s.wantTask)
					}
				case "touch":
					to, ok := l.Touch(s.root)
					task := to.Task
					if ok != s.wantOK || (ok && to != spoutOf(s.wantTask)) {
						t.Fatalf("%s: got (task %d, %t), want (task %d, %t)", where, task, ok, s.wantTask, s.wantOK)
					}
				case "rotate":
					l.Rotate()
				default:
					t.Fatalf("bad op %q", s.op)
				}
				if got := l.Len(); got != s.wantLen {
					t.Fatalf("%s: Len() = %d, want %d", where, got, s.wantLen)
				}
			}
		})
	}
}

// TestLedgerForgetsFailReasons checks that a fail whose init never comes
// does not leak its reason once the entry is rotated out.
func TestLedgerForgetsFailReasons(t *testing.T) {
	l := New()
	for r := uint64(1); r <= 10; r++ {
		l.Fail(r, fmt.Sprint("reason ", r))
	}
	l.Rotate()
	l.Rotate()
	if l.Len() != 0 || len(l.reasons) != 0 {
		t.Fatalf("after two rotations: Len() = %d, %d reasons kept; want 0 and 0", l.Len(), len(l.reasons))
	}
}

// Property test: random tuple trees built with Storm's edge-id scheme,
// their acker messages delivered in random order.

type modelNode struct {
	edges  map[uint64]uint64 // root → XOR of the edge ids this tuple got for that root
	ackVal uint64            // XOR of the edge ids of tuples anchored on it
}

type modelTree struct {
	root    uint64
	task    int32
	initXor uint64
}

type modelMsg struct {
	op     string // init, ack, fail
	root   uint64
	val    uint64
	task   int32
	reason any
}

type event struct {
	out    Outcome
	at     int // delivery index
	task   int32
	reason any
	fromOp string
}

// spoutOf is the spout a test's task stands for: its slot is derived from
// the task, so that a mixed-up slot shows.
func spoutOf(task int32) Spout { return Spout{Task: task, Slot: uint32(task)*7 + 3} }

func nonZero(rng *rand.Rand) uint64 {
	for {
		if v := rng.Uint64(); v != 0 {
			return v
		}
	}
}

func TestLedgerRandomTrees(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	const iterations = 400
	for it := 0; it < iterations; it++ {
		// Build a forest: 1-4 trees, fan-out 1-3 at the spout and 0-3 at
		// each tuple, depth up to 5, and some tuples anchored on several
		// parents, possibly of other trees.
		var trees []*modelTree
		var nodes []*modelNode
		var level []*modelNode
		for range 1 + rng.IntN(4) {
			tr := &modelTree{root: nonZero(rng), task: int32(rng.IntN(100))}
			trees = append(trees, tr)
			for range 1 + rng.IntN(3) {
				e := nonZero(rng)
				tr.initXor ^= e
				n := &modelNode{edges: map[uint64]uint64{tr.root: e}}
				nodes = append(nodes, n)
				level = append(level, n)
			}
		}
		multi := 0
		for depth := rng.IntN(6); depth > 0 && len(nodes) < 300; depth-- {
			var next []*modelNode
			for _, p := range level {
				for range rng.IntN(4) {
					parents := []*modelNode{p}
					if rng.IntN(4) == 0 {
						for range 1 + rng.IntN(2) {
							q := nodes[rng.IntN(len(nodes))]
							dup := false
							for _, x := range parents {
								dup = dup || x == q
							}
							if !dup {
								parents = append(parents, q)
							}
						}
					}
					if len(parents) > 1 {
						multi++
					}
					c := &modelNode{edges: map[uint64]uint64{}}
					for _, q := range parents {
						e := nonZero(rng)
						q.ackVal ^= e
						for r := range q.edges {
							c.edges[r] ^= e
						}
					}
					nodes = append(nodes, c)
					next = append(next, c)
				}
			}
			level = next
		}

		// Fates: maybe one tuple fails, maybe one is never acked.
		failIdx, missIdx := -1, -1
		if rng.IntN(3) == 0 {
			failIdx = rng.IntN(len(nodes))
		}
		if rng.IntN(3) == 0 {
			missIdx = rng.IntN(len(nodes))
			if missIdx == failIdx {
				missIdx = -1
			}
		}
		reason := fmt.Sprintf("failure %d", it)
		failed, missing := map[uint64]bool{}, map[uint64]bool{}
		if failIdx >= 0 {
			for r := range nodes[failIdx].edges {
				failed[r] = true
			}
		}
		if missIdx >= 0 {
			for r := range nodes[missIdx].edges {
				if !failed[r] {
					missing[r] = true
				}
			}
		}

		var msgs []modelMsg
		for _, tr := range trees {
			msgs = append(msgs, modelMsg{op: "init", root: tr.root, val: tr.initXor, task: tr.task})
		}
		for i, n := range nodes {
			for r, e := range n.edges {
				switch i {
				case missIdx:
				case failIdx:
					msgs = append(msgs, modelMsg{op: "fail", root: r, reason: reason})
				default:
					msgs = append(msgs, modelMsg{op: "ack", root: r, val: e ^ n.ackVal})
				}
			}
		}
		rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
		last := map[uint64]int{}
		for i, m := range msgs {
			last[m.root] = i
		}

		l := New()
		events := map[uint64][]event{}
		for i, m := range msgs {
			switch m.op {
			case "init":
				out, r := l.Init(m.root, m.val, spoutOf(m.task))
				if out != Pending {
					events[m.root] = append(events[m.root], event{out: out, at: i, task: m.task, reason: r, fromOp: "init"})
				}
			case "ack":
				out, to := l.Ack(m.root, m.val)
				task := to.Task
				if out != Pending && to != spoutOf(task) {
					t.Fatalf("ack of %#x told %+v: the slot is not the init's", m.root, to)
				}
				if out != Pending {
					events[m.root] = append(events[m.root], event{out: out, at: i, task: task, fromOp: "ack"})
				}
			case "fail":
				out, to := l.Fail(m.root, m.reason)
				task := to.Task
				if out != Pending {
					events[m.root] = append(events[m.root], event{out: out, at: i, task: task, reason: m.reason, fromOp: "fail"})
				}
			}
		}

		ctx := fmt.Sprintf("iteration %d (%d trees, %d tuples, %d multi-anchored, fail %d, missing %d)",
			it, len(trees), len(nodes), multi, failIdx, missIdx)
		for _, tr := range trees {
			ev := events[tr.root]
			switch {
			case failed[tr.root]:
				if len(ev) != 1 || ev[0].out != Failed {
					t.Fatalf("%s: tree %#x with a failed tuple: got events %+v, want one Failed", ctx, tr.root, ev)
				}
				if ev[0].task != tr.task || ev[0].reason != reason {
					t.Fatalf("%s: tree %#x failed with task %d, reason %v; want task %d, reason %q", ctx, tr.root, ev[0].task, ev[0].reason, tr.task, reason)
				}
			case missing[tr.root]:
				if len(ev) != 0 {
					t.Fatalf("%s: tree %#x with an unacked tuple: got events %+v, want none", ctx, tr.root, ev)
				}
			default:
				if len(ev) != 1 || ev[0].out != Complete {
					t.Fatalf("%s: fully acked tree %#x: got events %+v, want one Complete", ctx, tr.root, ev)
				}
				if ev[0].at != last[tr.root] || ev[0].task != tr.task {
					t.Fatalf("%s: tree %#x completed at message %d for task %d, want at its last message %d for task %d",
						ctx, tr.root, ev[0].at, ev[0].task, last[tr.root], tr.task)
				}
			}
		}
		n := l.Len()
		if n < len(missing) || (len(failed) == 0 && n != len(missing)) {
			t.Fatalf("%s: Len() = %d after delivery, want %d pending trees (plus leftovers of failed ones)", ctx, n, len(missing))
		}
		l.Rotate()
		if got := l.Len(); got != n {
			t.Fatalf("%s: Len() = %d after one rotation, want %d", ctx, got, n)
		}
		l.Rotate()
		if got := l.Len(); got != 0 || len(l.reasons) != 0 {
			t.Fatalf("%s: after two rotations Len() = %d with %d reasons kept, want 0 and 0", ctx, got, len(l.reasons))
		}
	}
}

// TestLedgerManyTreesAgainstAModel drives a ledger with tens of thousands of
// trees at once (so that cells collide, the table grows, and removals move
// cells back) and checks every outcome and the size against a plain map.
func TestLedgerManyTreesAgainstAModel(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0xfeed))
	type tree struct {
		xor  uint64 // what the acks still owe
		to   Spout
		gen  int
		init bool
	}
	model := map[uint64]*tree{}
	var live []uint64 // roots in model, for picking one
	gen := 0
	l := New()
	drop := func(i int) {
		delete(model, live[i])
		live[i] = live[len(live)-1]
		live = live[:len(live)-1]
	}
	for step := 0; step < 400_000; step++ {
		switch op := rng.IntN(100); {
		case step%50_000 == 49_999: // rarely, so that trees pile up
			l.Rotate()
			gen++
			for i := 0; i < len(live); {
				if gen-model[live[i]].gen >= 2 {
					drop(i)
				} else {
					i++
				}
			}
		case op < 45 || len(live) == 0: // a new tree: init with edges to ack later
			root := nonZero(rng)
			if model[root] != nil {
				continue
			}
			to := Spout{Task: int32(rng.IntN(50) + 1), Slot: rng.Uint32()}
			edges := nonZero(rng)
			if out, _ := l.Init(root, edges, to); out != Pending {
				t.Fatalf("step %d: init of a new tree: %v", step, out)
			}
			model[root] = &tree{xor: edges, to: to, gen: gen, init: true}
			live = append(live, root)
		default: // an ack, completing the tree half the time
			i := rng.IntN(len(live))
			root := live[i]
			tr := model[root]
			val := tr.xor
			if rng.IntN(2) == 0 {
				val = nonZero(rng)
			}
			out, to := l.Ack(root, val)
			tr.xor ^= val
			tr.gen = gen
			switch {
			case tr.xor == 0 && (out != Complete || to != tr.to):
				t.Fatalf("step %d: last ack of %#x: got (%v, %+v), want (complete, %+v)", step, root, out, to, tr.to)
			case tr.xor != 0 && out != Pending:
				t.Fatalf("step %d: ack of %#x with edges still owed: %v", step, root, out)
			case tr.xor == 0:
				drop(i)
			}
		}
		if l.Len() != len(model) {
			t.Fatalf("step %d: Len() = %d, want %d", step, l.Len(), len(model))
		}
	}
	if len(live) < 10_000 {
		t.Fatalf("only %d trees pending at the end: the test meant tens of thousands", len(live))
	}
	for _, root := range live {
		if to, ok := l.Touch(root); !ok || to != model[root].to {
			t.Fatalf("pending %#x: Touch = (%+v, %t), want (%+v, true)", root, to, ok, model[root].to)
		}
	}
}
