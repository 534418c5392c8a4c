package gale

// pendingMap holds a spout task's trees in flight, and is their XOR ledger
// (Storm keeps it in acker bolts; see tree.go). A tree's entry is in a
// slot of a table, and the root id names the slot, so that the spout finds
// the entry of an ack by index, not by a lookup; the whole root is checked
// there, so that a late or stray message for a slot since reused finds
// nothing. Freed slots are reused newest first, which keeps the entries in
// use close together.
//
// Entries time out in generations rotated every timeout/(pendingBuckets-1):
// an entry not put or touched during the last pendingBuckets rotations has
// timed out. A tree therefore times out between T and
// T·pendingBuckets/(pendingBuckets-1) after its emit (1.1·T with 11
// generations; Storm's two buckets give [T, 2T)).
//
// The table keeps the size of the most trees ever in flight at once, until
// a rotation finds none.
type pendingMap struct {
	slots   []pendingEntry
	free    []uint32 // free slots, the most recently freed last
	n       int
	gen     uint32         // rotations so far
	expired []pendingEntry // rotate's result, reused

	_ [40]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

const pendingBuckets = 11

type pendingEntry struct {
	msgID   any
	emitted int64  // clock nanos at emit
	root    uint64 // 0: a free slot
	// xor is the XOR of the edge ids sent and acked so far (Storm's ack
	// val): the spout's first edges at emit, then each ack's value. The
	// tree is complete when it returns to 0.
	xor uint64
	gen uint32 // the generation it was put or last touched in
}

func newPendingMap() *pendingMap { return &pendingMap{} }

func (p *pendingMap) len() int { return p.n }

// next returns the slot the next put takes, or false if the table has
// maxTreesPerTask trees.
func (p *pendingMap) next() (uint32, bool) {
	if k := len(p.free); k > 0 {
		return p.free[k-1], true
	}
	if len(p.slots) >= maxTreesPerTask {
		return 0, false
	}
	return uint32(len(p.slots)), true
}

// put adds root's entry and returns its slot, the one next returned.
func (p *pendingMap) put(root uint64, e pendingEntry) uint32 {
	e.root, e.gen = root, p.gen
	p.n++
	if k := len(p.free); k > 0 {
		s := p.free[k-1]
		p.free = p.free[:k-1]
		p.slots[s] = e
		return s
	}
	p.slots = append(p.slots, e)
	return uint32(len(p.slots) - 1)
}

// at returns root's entry in slot s, or nil if s holds another tree or
// none.
func (p *pendingMap) at(s uint32, root uint64) *pendingEntry {
	if int64(s) >= int64(len(p.slots)) || root == 0 || p.slots[s].root != root {
		return nil
	}
	return &p.slots[s]
}

// remove deletes root's entry in slot s and returns it.
func (p *pendingMap) remove(s uint32, root uint64) (pendingEntry, bool) {
	e := p.at(s, root)
	if e == nil {
		return pendingEntry{}, false
	}
	out := *e
	*e = pendingEntry{} // let the message id go
	p.free = append(p.free, s)
	p.n--
	return out, true
}

// ack XORs val into root's tree in slot s. It returns the tree's entry,
// removed, and true when that completes the tree.
func (p *pendingMap) ack(s uint32, root, val uint64) (pendingEntry, bool) {
	e := p.at(s, root)
	if e == nil {
		return pendingEntry{}, false
	}
	if e.xor ^= val; e.xor != 0 {
		return pendingEntry{}, false
	}
	return p.remove(s, root)
}

// touch moves root's entry in slot s to the newest generation
// (resetTimeout).
func (p *pendingMap) touch(s uint32, root uint64) {
	if e := p.at(s, root); e != nil {
		e.gen = p.gen
	}
}

// rotate starts a new generation and removes and returns the entries that
// timed out (valid until the next rotate).
func (p *pendingMap) rotate() []pendingEntry {
	p.gen++
	clear(p.expired)
	p.expired = p.expired[:0]
	for s := range p.slots {
		e := &p.slots[s]
		if e.root != 0 && p.gen-e.gen >= pendingBuckets {
			p.expired = append(p.expired, *e)
			*e = pendingEntry{}
			p.free = append(p.free, uint32(s))
			p.n--
		}
	}
	if p.n == 0 && len(p.slots) > 0 {
		// Nothing in flight: give back what a burst grew.
		p.slots, p.free = nil, nil
	}
	return p.expired
}

// drain removes and returns every entry.
func (p *pendingMap) drain() []pendingEntry {
	var out []pendingEntry
	for _, e := range p.slots {
		if e.root != 0 {
			out = append(out, e)
		}
	}
	p.slots, p.free, p.n = nil, nil, 0
	return out
}
