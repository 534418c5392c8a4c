// Package acker holds the XOR ledger at the heart of Storm's acker: for each
// spout tuple tree (identified by a random 64-bit root id) it keeps the XOR
// of every edge id sent and acked so far. When the XOR returns to zero after
// the spout's init has arrived, every tuple of the tree has been acked.
//
// The ledger is a deterministic state machine: it has no clock and no
// goroutines. Its owner calls Rotate on a timer to drop trees abandoned by
// their spout (timed out or failed). A Ledger is not safe for concurrent use.
package acker

import "math/rand/v2"

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

// Spout names who is told of a tree's outcome: the spout task that emitted
// it and the slot its pending entry is in there, which the spout gave with
// its init and gets back with the outcome, so that it finds the entry
// without a lookup.
type Spout struct {
	Task int32
	Slot uint32
}

// entry is a tree in the ledger's table; root 0 marks a free cell.
type entry struct {
	root  uint64
	xor   uint64
	to    Spout
	gen   uint32 // the generation that last touched it (see Rotate)
	flags uint8
}

const (
	inited uint8 = 1 << iota // the spout's init has arrived
	failed                   // a bolt failed a tuple of the tree
)

// minTable is the least number of cells in a ledger's table.
const minTable = 1 << 10

// Ledger tracks pending trees in generations so that trees nobody will ever
// finish are forgotten: an entry untouched for two rotations is dropped.
//
// Trees are kept in one open-addressing table (linear probing, at most half
// full), so that a message costs one probe sequence: an init or an ack finds
// its tree's cell, or the free cell to put it in, and updates it there.
type Ledger struct {
	tab     []entry
	shift   uint // 64 - log2(len(tab))
	n       int
	gen     uint32
	seed    uint64         // mixed into the hash: roots come from peers
	reasons map[uint64]any // fail reasons that arrived before the init
}

// New returns an empty ledger.
func New() *Ledger {
	l := &Ledger{reasons: make(map[uint64]any), seed: rand.Uint64()}
	l.resize(minTable)
	return l
}

// resize moves the trees to a table of cells cells (a power of two).
func (l *Ledger) resize(cells int) {
	old := l.tab
	l.tab = make([]entry, cells)
	l.shift = 64
	for c := cells; c > 1; c >>= 1 {
		l.shift--
	}
	for i := range old {
		if e := &old[i]; e.root != 0 {
			j, _ := l.find(e.root)
			l.tab[j] = *e
		}
	}
}

// home is root's first cell.
func (l *Ledger) home(root uint64) int {
	return int(((root ^ l.seed) * 0x9E3779B97F4A7C15) >> l.shift)
}

// find returns root's cell and true, or the free cell it would go in and
// false.
func (l *Ledger) find(root uint64) (int, bool) {
	mask := len(l.tab) - 1
	for i := l.home(root); ; i = (i + 1) & mask {
		switch l.tab[i].root {
		case root:
			return i, true
		case 0:
			return i, false
		}
	}
}

// cell returns root's cell, made (empty) if it was not there, marked as
// touched in the current generation.
func (l *Ledger) cell(root uint64) int {
	i, ok := l.find(root)
	if !ok {
		if 2*(l.n+1) > len(l.tab) {
			l.resize(2 * len(l.tab))
			i, _ = l.find(root)
		}
		l.tab[i] = entry{root: root}
		l.n++
	}
	l.tab[i].gen = l.gen
	return i
}

// remove frees cell i, moving later cells of its probe sequence back so
// that no lookup stops short at the hole (Knuth's Algorithm R).
func (l *Ledger) remove(i int) {
	mask := len(l.tab) - 1
	for j := (i + 1) & mask; l.tab[j].root != 0; j = (j + 1) & mask {
		k := l.home(l.tab[j].root)
		// The entry at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		if i <= j && (k <= i || k > j) || i > j && k <= i && k > j {
			l.tab[i] = l.tab[j]
			i = j
		}
	}
	l.tab[i] = entry{}
	l.n--
}

// Len is the number of trees the ledger holds.
func (l *Ledger) Len() int { return l.n }

// Init records the spout's emit of root: xor is the XOR of the edge ids the
// spout sent, to the spout task (and its slot) to notify. It returns the
// tree's outcome and, if it failed before the init arrived, the fail
// reason. Root must not be 0.
func (l *Ledger) Init(root, xor uint64, to Spout) (Outcome, any) {
	i := l.cell(root)
	e := &l.tab[i]
	e.xor ^= xor
	e.to = to
	e.flags |= inited
	if e.flags&failed != 0 {
		l.remove(i)
		r := l.reasons[root]
		delete(l.reasons, root)
		return Failed, r
	}
	if e.xor == 0 {
		l.remove(i)
		return Complete, nil
	}
	return Pending, nil
}

// Ack XORs val into root's tree. When the tree completes it returns Complete
// and the spout to notify. Acks may arrive before the init.
func (l *Ledger) Ack(root, val uint64) (Outcome, Spout) {
	i := l.cell(root)
	e := &l.tab[i]
	if e.flags&failed != 0 {
		return Pending, Spout{}
	}
	e.xor ^= val
	if e.flags&inited != 0 && e.xor == 0 {
		to := e.to
		l.remove(i)
		return Complete, to
	}
	return Pending, Spout{}
}

// Fail marks root's tree failed. If the spout is known it returns Failed
// and the spout; otherwise the reason is kept until the init arrives.
func (l *Ledger) Fail(root uint64, reason any) (Outcome, Spout) {
	i := l.cell(root)
	e := &l.tab[i]
	if e.flags&inited != 0 {
		to := e.to
		l.remove(i)
		return Failed, to
	}
	if e.flags&failed == 0 {
		e.flags |= failed
		l.reasons[root] = reason
	}
	return Pending, Spout{}
}

// Rotate starts a new generation and forgets trees not touched during the
// previous two. Call it once per message timeout: an abandoned tree is then
// dropped between one and two timeouts after it was last touched, by which
// time its spout has already failed it.
func (l *Ledger) Rotate() {
	l.gen++
	kept := 0
	for i := range l.tab {
		e := &l.tab[i]
		if e.root == 0 {
			continue
		}
		if l.gen-e.gen >= 2 {
			if e.flags&failed != 0 {
				delete(l.reasons, e.root)
			}
			e.root = 0
			continue
		}
		kept++
	}
	// Rebuild the table without the dropped trees (the holes they left
	// would cut probe sequences short), smaller if they were most of it.
	cells := minTable
	for 4*kept > cells {
		cells *= 2
	}
	l.n = kept
	l.resize(cells)
}

// Touch returns the spout of root's tree, if known, and marks the tree as
// recently used so that Rotate keeps it (resetTimeout).
func (l *Ledger) Touch(root uint64) (Spout, bool) {
	i, ok := l.find(root)
	if !ok {
		return Spout{}, false
	}
	e := &l.tab[i]
	e.gen = l.gen
	return e.to, e.flags&inited != 0
}
