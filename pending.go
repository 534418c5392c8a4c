package gale

// pendingMap holds a spout task's trees in flight, in generations rotated
// every timeout/(pendingBuckets-1): a tree still present when its
// generation falls off the end has timed out. A tree therefore times out
// between T and T·pendingBuckets/(pendingBuckets-1) after its emit (1.1·T
// with 11 buckets; Storm's two buckets give [T, 2T)).
type pendingMap struct {
	buckets []map[uint64]pendingEntry // [0] is the newest
	n       int

	_ [32]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

const pendingBuckets = 11

type pendingEntry struct {
	msgID   any
	emitted int64 // clock nanos at emit
}

func newPendingMap() *pendingMap {
	p := &pendingMap{buckets: make([]map[uint64]pendingEntry, pendingBuckets)}
	for i := range p.buckets {
		p.buckets[i] = make(map[uint64]pendingEntry)
	}
	return p
}

func (p *pendingMap) len() int { return p.n }

func (p *pendingMap) put(root uint64, e pendingEntry) {
	p.buckets[0][root] = e
	p.n++
}

// remove deletes root and returns its entry.
func (p *pendingMap) remove(root uint64) (pendingEntry, bool) {
	for _, b := range p.buckets {
		if e, ok := b[root]; ok {
			delete(b, root)
			p.n--
			return e, true
		}
	}
	return pendingEntry{}, false
}

// touch moves root to the newest generation (resetTimeout).
func (p *pendingMap) touch(root uint64) {
	for i, b := range p.buckets {
		if e, ok := b[root]; ok {
			if i != 0 {
				delete(b, root)
				p.buckets[0][root] = e
			}
			return
		}
	}
}

// rotate starts a new generation and returns the expired one's entries
// (valid until the next rotate).
func (p *pendingMap) rotate() map[uint64]pendingEntry {
	last := len(p.buckets) - 1
	expired := p.buckets[last]
	copy(p.buckets[1:], p.buckets[:last])
	p.buckets[0] = make(map[uint64]pendingEntry)
	p.n -= len(expired)
	return expired
}

// drain removes and returns every entry.
func (p *pendingMap) drain() []pendingEntry {
	var out []pendingEntry
	for i, b := range p.buckets {
		for _, e := range b {
			out = append(out, e)
		}
		p.buckets[i] = make(map[uint64]pendingEntry)
	}
	p.n = 0
	return out
}
