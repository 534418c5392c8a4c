// Package acker holds the XOR ledger at the heart of Storm's acker: for each
// spout tuple tree (identified by a random 64-bit root id) it keeps the XOR
// of every edge id sent and acked so far. When the XOR returns to zero after
// the spout's init has arrived, every tuple of the tree has been acked.
//
// The ledger is a deterministic state machine: it has no clock and no
// goroutines. Its owner calls Rotate on a timer to drop trees abandoned by
// their spout (timed out or failed). A Ledger is not safe for concurrent use.
package acker

// Outcome is what a message did to a tree.
type Outcome uint8

const (
	// Pending means the tree is still incomplete.
	Pending Outcome = iota
	// Complete means every edge of the tree has been acked: tell the spout.
	Complete
	// Failed means some bolt failed a tuple of the tree: tell the spout.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Complete:
		return "complete"
	case Failed:
		return "failed"
	default:
		return "pending"
	}
}

type entry struct {
	xor       uint64
	spoutTask int32
	inited    bool
	failed    bool
}

// Ledger tracks pending trees in generations so that trees nobody will ever
// finish are forgotten: an entry untouched for two rotations is dropped.
type Ledger struct {
	cur, prev map[uint64]entry
	reasons   map[uint64]any // fail reasons that arrived before the init
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{
		cur:     make(map[uint64]entry),
		prev:    make(map[uint64]entry),
		reasons: make(map[uint64]any),
	}
}

// Len is the number of trees the ledger holds.
func (l *Ledger) Len() int { return len(l.cur) + len(l.prev) }

func (l *Ledger) get(root uint64) entry {
	if e, ok := l.cur[root]; ok {
		return e
	}
	if e, ok := l.prev[root]; ok {
		delete(l.prev, root)
		return e
	}
	return entry{}
}

func (l *Ledger) remove(root uint64) {
	delete(l.cur, root)
	delete(l.prev, root)
}

// Init records the spout's emit of root: xor is the XOR of the edge ids the
// spout sent, spoutTask the task to notify. It returns the tree's outcome
// and, if it failed before the init arrived, the fail reason.
func (l *Ledger) Init(root, xor uint64, spoutTask int32) (Outcome, any) {
	e := l.get(root)
	e.xor ^= xor
	e.spoutTask = spoutTask
	e.inited = true
	if e.failed {
		l.remove(root)
		r := l.reasons[root]
		delete(l.reasons, root)
		return Failed, r
	}
	if e.xor == 0 {
		l.remove(root)
		return Complete, nil
	}
	l.cur[root] = e
	return Pending, nil
}

// Ack XORs val into root's tree. When the tree completes it returns Complete
// and the spout task to notify. Acks may arrive before the init.
func (l *Ledger) Ack(root, val uint64) (Outcome, int32) {
	e := l.get(root)
	if e.failed {
		l.cur[root] = e
		return Pending, 0
	}
	e.xor ^= val
	if e.inited && e.xor == 0 {
		l.remove(root)
		return Complete, e.spoutTask
	}
	l.cur[root] = e
	return Pending, 0
}

// Fail marks root's tree failed. If the spout task is known it returns
// Failed and the task; otherwise the reason is kept until the init arrives.
func (l *Ledger) Fail(root uint64, reason any) (Outcome, int32) {
	e := l.get(root)
	if e.inited {
		l.remove(root)
		return Failed, e.spoutTask
	}
	if !e.failed {
		e.failed = true
		l.reasons[root] = reason
	}
	l.cur[root] = e
	return Pending, 0
}

// Rotate starts a new generation and forgets trees not touched during the
// previous two. Call it once per message timeout: an abandoned tree is then
// dropped between one and two timeouts after it was last touched, by which
// time its spout has already failed it.
func (l *Ledger) Rotate() {
	for root := range l.prev {
		delete(l.reasons, root)
	}
	old := l.prev
	l.prev = l.cur
	clear(old)
	l.cur = old
}

// Touch returns the spout task of root's tree, if known, and marks the tree
// as recently used so that Rotate keeps it (resetTimeout).
func (l *Ledger) Touch(root uint64) (int32, bool) {
	e, ok := l.cur[root]
	if !ok {
		e, ok = l.prev[root]
		if !ok {
			return 0, false
		}
		delete(l.prev, root)
		l.cur[root] = e
	}
	return e.spoutTask, e.inited
}
