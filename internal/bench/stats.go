package bench

import "sync/atomic"

// Stats are the counters a Runner updates while it runs and Run samples once a second.
// All fields are safe for concurrent use. Counters are shared cache lines: add in
// batches (per tuple or per batch), not once per word. The zero value is ready to use;
// a Stats must not be copied.
type Stats struct {
	Sentences atomic.Int64 // sentences emitted by spouts
	Words     atomic.Int64 // words counted by counters

	// Ack mode only; the three are disjoint: a timed-out tree counts in Timeouts, not in
	// Failed.
	Acked    atomic.Int64 // trees fully processed and acked to their spout
	Failed   atomic.Int64 // trees failed explicitly by a bolt
	Timeouts atomic.Int64 // trees that timed out
	// Unfinished counts trees still in flight when the run's drain ended
	// (failed with gale.ErrShutdown): neither acked nor failed.
	Unfinished atomic.Int64

	// Latency records, per acked tree, the time from the sentence's scheduled emit time
	// (see Pacer) to the spout learning of its ack.
	Latency Histogram
}

// counters is a point-in-time copy of the Stats counters.
type counters struct {
	sentences, words, acked, failed, timeouts, unfinished int64
}

func (s *Stats) load() counters {
	return counters{
		sentences:  s.Sentences.Load(),
		words:      s.Words.Load(),
		acked:      s.Acked.Load(),
		failed:     s.Failed.Load(),
		timeouts:   s.Timeouts.Load(),
		unfinished: s.Unfinished.Load(),
	}
}
