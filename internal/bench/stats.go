package bench

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Stats are the counters a Runner updates while it runs and Run samples once a second.
// All fields and methods are safe for concurrent use. Counters are shared cache lines:
// add in batches (per tuple or per batch), not once per word. The zero value is ready to
// use; a Stats must not be copied.
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
	// Replayed counts sentences emitted again after their tree failed or
	// timed out; they are not counted in Sentences again.
	Replayed atomic.Int64

	// SpoutsActivated counts spout tasks activated (each task once per
	// process it runs in). Run opens the measurement window when it reaches
	// the number of spout tasks: start-up is not measured. Add to it with
	// SpoutActivated, which wakes Run.
	SpoutsActivated atomic.Int64
	// WorkerRestarts counts worker processes started again after they died
	// (Options.Workers > 1).
	WorkerRestarts atomic.Int64

	// Latency records, per acked tree, the time from the sentence's scheduled emit time
	// (see Pacer) to the spout learning of its ack.
	Latency Histogram

	// Multi-process runs only (Options.Workers > 1).
	WireBytes  atomic.Int64 // bytes written from one worker to another, frames included
	WireTuples atomic.Int64 // tuples sent from one worker to another

	mu struct {
		sync.Mutex
		workerRSS  map[int][]int64 // worker → RSS samples in bytes, oldest first
		workerCPUs [][]int         // by worker, when pinned
		activated  chan struct{}   // signalled when SpoutsActivated grows
	}
}

// SpoutActivated adds n to SpoutsActivated, as spout tasks are activated,
// and wakes Run's wait for the measurement window to open.
func (s *Stats) SpoutActivated(n int64) {
	s.SpoutsActivated.Add(n)
	select {
	case s.activatedSignal() <- struct{}{}:
	default:
	}
}

// activatedSignal is signalled (buffered, one pending) each time
// SpoutsActivated grows.
func (s *Stats) activatedSignal() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.activated == nil {
		s.mu.activated = make(chan struct{}, 1)
	}
	return s.mu.activated
}

// SetWorkerCPUs records the CPUs each worker process is bound to, by worker
// (a multi-process runner that pinned them calls it once).
func (s *Stats) SetWorkerCPUs(cpus [][]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.workerCPUs = cpus
}

func (s *Stats) workerCPUs() [][]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.workerCPUs
}

// counters is a point-in-time copy of the Stats counters.
type counters struct {
	sentences, words, acked, failed, timeouts, unfinished, replayed int64
}

func (s *Stats) load() counters {
	return counters{
		sentences:  s.Sentences.Load(),
		words:      s.Words.Load(),
		acked:      s.Acked.Load(),
		failed:     s.Failed.Load(),
		timeouts:   s.Timeouts.Load(),
		unfinished: s.Unfinished.Load(),
		replayed:   s.Replayed.Load(),
	}
}

// RecordWorkerRSS appends rss (bytes) to worker's series of RSS samples. A multi-process
// runner calls it about once a second per worker; the report summarises each worker's
// series as it does the process's own samples.
func (s *Stats) RecordWorkerRSS(worker int, rss int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.workerRSS == nil {
		s.mu.workerRSS = make(map[int][]int64)
	}
	s.mu.workerRSS[worker] = append(s.mu.workerRSS[worker], rss)
}

// workerSeries is one worker's RSS samples, as copied out by Stats.workerRSS.
type workerSeries struct {
	worker  int
	samples []int64
}

// workerRSS returns a copy of every worker's RSS samples, in worker order.
func (s *Stats) workerRSS() []workerSeries {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]workerSeries, 0, len(s.mu.workerRSS))
	for w, samples := range s.mu.workerRSS {
		out = append(out, workerSeries{worker: w, samples: slices.Clone(samples)})
	}
	slices.SortFunc(out, func(a, b workerSeries) int { return a.worker - b.worker })
	return out
}

// StatsSnapshot is a point-in-time copy of a Stats' counters and latency histogram,
// the form in which a worker process sends its Stats to the launcher (as JSON). The
// launcher folds successive snapshots of one worker into its own Stats with
// [Stats.AddDelta].
type StatsSnapshot struct {
	Sentences  int64 `json:"sentences"`
	Words      int64 `json:"words"`
	Acked      int64 `json:"acked"`
	Failed     int64 `json:"failed"`
	Timeouts   int64 `json:"timeouts"`
	Unfinished int64 `json:"unfinished"`
	Replayed   int64 `json:"replayed"`
	// SpoutsActivated is Stats.SpoutsActivated.
	SpoutsActivated int64 `json:"spouts_activated"`
	// Latency is Stats.Latency's bucket counts ([Histogram.Counts]); nil means all
	// zero.
	Latency []int64 `json:"latency_buckets"`
}

// Snapshot returns a copy of s's counters and latency histogram. Each field is read
// atomically, but not all together: a counter added to during the call may or may not
// be included. Successive snapshots of a Stats that is only added to never go
// backwards, field by field.
func (s *Stats) Snapshot() StatsSnapshot {
	c := s.load()
	return StatsSnapshot{
		Sentences:  c.sentences,
		Words:      c.words,
		Acked:      c.acked,
		Failed:     c.failed,
		Timeouts:   c.timeouts,
		Unfinished: c.unfinished,
		Replayed:   c.replayed,
		Latency:    s.Latency.Counts(),

		SpoutsActivated: s.SpoutsActivated.Load(),
	}
}

// AddDelta adds cur − prev to s: to every counter and every latency bucket. cur and
// prev are two snapshots of one worker's Stats, prev the earlier (the zero StatsSnapshot
// before the first); a nil Latency counts as all zero. If any field of cur is below the
// same field of prev — the worker's counters went backwards, as when it restarted — or
// a Latency has the wrong number of buckets, AddDelta returns an error naming the
// fields and adds nothing.
//
// Calls may run concurrently with each other and with the Runner's own updates; a
// reader may see a delta half applied, as it may see a Runner's batch.
func (s *Stats) AddDelta(cur, prev StatsSnapshot) error {
	fields := [...]struct {
		name      string
		cur, prev int64
		dst       *atomic.Int64
	}{
		{"sentences", cur.Sentences, prev.Sentences, &s.Sentences},
		{"words", cur.Words, prev.Words, &s.Words},
		{"acked", cur.Acked, prev.Acked, &s.Acked},
		{"failed", cur.Failed, prev.Failed, &s.Failed},
		{"timeouts", cur.Timeouts, prev.Timeouts, &s.Timeouts},
		{"unfinished", cur.Unfinished, prev.Unfinished, &s.Unfinished},
		{"replayed", cur.Replayed, prev.Replayed, &s.Replayed},
		{"spouts_activated", cur.SpoutsActivated, prev.SpoutsActivated, &s.SpoutsActivated},
	}
	var back, bad []string // fields that went backwards; malformed fields
	for _, f := range fields {
		if f.cur < f.prev {
			back = append(back, fmt.Sprintf("%s %d → %d", f.name, f.prev, f.cur))
		}
	}
	for _, l := range []struct {
		name   string
		counts []int64
	}{{"current", cur.Latency}, {"previous", prev.Latency}} {
		if l.counts != nil && len(l.counts) != numBuckets {
			bad = append(bad, fmt.Sprintf("%s latency_buckets has %d buckets, want %d", l.name, len(l.counts), numBuckets))
		}
	}
	if len(bad) == 0 {
		for i := range numBuckets {
			if c, p := bucket(cur.Latency, i), bucket(prev.Latency, i); c < p {
				back = append(back, fmt.Sprintf("latency_buckets[%d] %d → %d", i, p, c))
				break // one bucket is enough to show the histogram went backwards
			}
		}
	}
	if len(back) > 0 {
		bad = append(bad, "went backwards (did the worker restart?): "+strings.Join(back, ", "))
	}
	if len(bad) > 0 {
		return fmt.Errorf("bench: stats snapshot not applied: %s", strings.Join(bad, "; "))
	}

	for _, f := range fields {
		if d := f.cur - f.prev; d != 0 {
			f.dst.Add(d)
		}
	}
	for i := range numBuckets {
		if d := bucket(cur.Latency, i) - bucket(prev.Latency, i); d != 0 {
			s.Latency.counts[i].Add(d)
		}
	}
	if cur.SpoutsActivated > prev.SpoutsActivated {
		s.SpoutActivated(0) // the add is done: wake Run
	}
	return nil
}

// bucket returns counts[i], or 0 for nil counts.
func bucket(counts []int64, i int) int64 {
	if counts == nil {
		return 0
	}
	return counts[i]
}
