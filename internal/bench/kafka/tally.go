package kafka

import (
	"sync/atomic"
)

// Tally counts how often the decoding step saw each id of 0 … n−1. It is
// safe for concurrent use: several decoding tasks share one.
type Tally struct {
	counts   []atomic.Int32
	distinct atomic.Int64
	seen     atomic.Int64 // every sighting, first or not
	unknown  atomic.Int64 // ids outside 0 … n−1
}

// NewTally returns a Tally of the ids 0 … n−1.
func NewTally(n int) *Tally { return &Tally{counts: make([]atomic.Int32, n)} }

// See records a sighting of id.
func (t *Tally) See(id int64) {
	t.seen.Add(1)
	if id < 0 || id >= int64(len(t.counts)) {
		t.unknown.Add(1)
		return
	}
	if t.counts[id].Add(1) == 1 {
		t.distinct.Add(1)
	}
}

// N is the number of ids the tally expects.
func (t *Tally) N() int { return len(t.counts) }

// Distinct is the number of ids seen at least once.
func (t *Tally) Distinct() int64 { return t.distinct.Load() }

// Seen is the number of sightings, duplicates included.
func (t *Tally) Seen() int64 { return t.seen.Load() }

// Complete reports whether every id has been seen.
func (t *Tally) Complete() bool { return t.distinct.Load() == int64(len(t.counts)) }

// Lost is the number of ids never seen.
func (t *Tally) Lost() int64 { return int64(len(t.counts)) - t.distinct.Load() }

// Duplicates is the number of sightings beyond the first of each id.
func (t *Tally) Duplicates() int64 { return t.seen.Load() - t.distinct.Load() - t.unknown.Load() }

// Unknown is the number of sightings of ids outside 0 … n−1.
func (t *Tally) Unknown() int64 { return t.unknown.Load() }

// Missing returns up to max of the ids never seen, smallest first, for
// an error message.
func (t *Tally) Missing(max int) []int64 {
	var out []int64
	for i := range t.counts {
		if len(out) == max {
			break
		}
		if t.counts[i].Load() == 0 {
			out = append(out, int64(i))
		}
	}
	return out
}
