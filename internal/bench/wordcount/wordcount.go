// Package wordcount is the Gale side of `gale bench wordcount`: the word
// count topology (sentence spout → split, local-or-shuffle → count, fields
// on the word) run with the bench's workload, pacing and latency
// measurement, in this process (Runner) or in worker processes
// (ProcessRunner, WorkerFactory): there the fields grouping crosses
// processes, and local-or-shuffle keeps sentences in their worker.
package wordcount

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/examples/wordcount"
	"github.com/gale-stream/gale/internal/bench"
)

// spout emits the bench's sentences. In ack mode each sentence's message id
// holds the sentence and its scheduled emit time, so Ack can record the
// complete latency from when the sentence was due (a backlog shows) to when
// its tree completed, and Fail can emit it again: a sentence whose tree
// failed or timed out (a worker died with it) is replayed until acked, as
// from a durable source. Only a spout's own death loses its sentences.
type spout struct {
	gale.BaseSpout
	opts      bench.Options
	stats     *bench.Stats
	base      time.Time
	gen       *bench.SentenceGen
	pacer     *bench.Pacer
	ack       bool
	activated bool
	n         int64
}

// sentenceID is an acked sentence's message id.
type sentenceID struct {
	sentence string
	sched    time.Duration // scheduled emit time, since spout.base
}

func (*spout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("sentence") }

func (s *spout) Open(tc *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.Collector = c
	s.gen = bench.NewSentenceGen(bench.SpoutSeed(tc.TaskIndex()))
	s.base = time.Now()
	s.pacer = bench.NewPacer(s.opts.SpoutRate(), s.base)
	return nil
}

// Activate starts the pacing from now: emits are due from when the spout
// may emit, not from Open. In worker processes a spout opens, then waits
// for its worker to connect to every peer; pacing from Open made that wait
// a backlog, caught up in a burst at activation, whose sentences counted
// the wait as complete latency (the first second's p99 was 18–52 ms at
// 300k sentences/s in two workers, against 2–6 ms after it). After a
// deactivation the paused time is not caught up either, as a paced source
// that was switched off would not be.
//
// The first activation counts in Stats.SpoutsActivated: the bench measures
// from when every spout is active.
func (s *spout) Activate() {
	s.pacer = bench.NewPacer(s.opts.SpoutRate(), time.Now())
	if !s.activated {
		s.activated = true
		s.stats.SpoutActivated(1)
	}
}

func (s *spout) NextTuple() {
	if s.opts.Rate <= 0 {
		// Unpaced: one sentence per call, as Storm's spouts do; read the
		// clock only when the latency needs it (as the plain runner does).
		if s.ack {
			s.emitAcked(time.Since(s.base))
		} else {
			s.Collector.EmitString(nil, s.gen.Next())
		}
		s.count(1)
		return
	}
	now := time.Now()
	n := int64(0)
	for ; n < 100; n++ {
		sched, ok := s.pacer.Due(now)
		if !ok {
			break
		}
		if s.ack {
			s.emitAcked(sched.Sub(s.base))
		} else {
			s.Collector.EmitString(nil, s.gen.Next())
		}
	}
	s.count(n)
}

func (s *spout) emitAcked(sched time.Duration) {
	id := &sentenceID{sentence: s.gen.Next(), sched: sched}
	s.Collector.EmitString(id, id.sentence)
}

func (s *spout) count(n int64) {
	s.n += n
	if s.n >= 256 {
		s.stats.Sentences.Add(s.n)
		s.n = 0
	}
}

func (s *spout) Ack(msgID any) {
	s.stats.Acked.Add(1)
	s.stats.Latency.Record(time.Since(s.base) - msgID.(*sentenceID).sched)
}

// Fail counts the failure and, unless the topology is shutting down, emits
// the sentence again under the same id.
func (s *spout) Fail(msgID any, reason error) {
	switch {
	case errors.Is(reason, gale.ErrShutdown):
		s.stats.Unfinished.Add(1)
		return
	case errors.Is(reason, gale.ErrTimeout):
		s.stats.Timeouts.Add(1)
	default:
		s.stats.Failed.Add(1)
	}
	id := msgID.(*sentenceID)
	s.Collector.EmitString(id, id.sentence)
	s.stats.Replayed.Add(1)
}

func (s *spout) Deactivate() { s.flush() }
func (s *spout) Close()      { s.flush() }
func (s *spout) flush() {
	s.stats.Sentences.Add(s.n)
	s.n = 0
}

// count counts words in a map.
type count struct {
	gale.BaseBolt
	opts   bench.Options
	stats  *bench.Stats
	counts map[string]int64
	n      int64
}

func (*count) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *count) Prepare(_ *gale.TopologyContext, c *gale.BoltCollector) error {
	b.Collector = c
	b.counts = make(map[string]int64, bench.VocabularySize)
	return nil
}

func (b *count) Execute(t *gale.Tuple) {
	b.counts[t.GetString(0)]++
	if b.opts.CountDelay > 0 {
		busyWork(b.opts.CountDelay)
	}
	b.Collector.Ack(t)
	b.n++
	if b.n >= 256 {
		b.stats.Words.Add(b.n)
		b.n = 0
	}
}

func (b *count) Cleanup() {
	b.stats.Words.Add(b.n)
	b.n = 0
}

// Topology builds the bench topology for opts, reporting into stats.
func Topology(opts bench.Options, stats *bench.Stats) (*gale.Topology, gale.Config, error) {
	ack := opts.Mode == bench.ModeAck
	b := gale.NewTopologyBuilder()
	b.SetSpout("sentences", func() gale.Spout { return &spout{opts: opts, stats: stats, ack: ack} }, opts.Spouts)
	split := b.SetBolt("split", func() gale.Bolt { return &wordcount.SplitSentence{} }, opts.Splitters).LocalOrShuffleGrouping("sentences")
	count := b.SetBolt("count", func() gale.Bolt { return &count{opts: opts, stats: stats} }, opts.Counters).FieldsGrouping("split", "word")
	if opts.TupleReuse {
		// Both bolts are done with a tuple once they ack it.
		split.AddConfiguration(gale.TopologyTupleReuse, true)
		count.AddConfiguration(gale.TopologyTupleReuse, true)
	}
	topo, err := b.Build()
	if err != nil {
		return nil, nil, err
	}
	conf := gale.Config{gale.TopologyAckerExecutors: 0}
	if opts.StatsOff {
		conf[gale.TopologyStatsEnabled] = false
	}
	if opts.MessageTimeout > 0 {
		conf[gale.TopologyMessageTimeoutSecs] = int(opts.MessageTimeout / time.Second)
	}
	if ack {
		conf[gale.TopologyAckerExecutors] = opts.Ackers
		if opts.MaxSpoutPending > 0 {
			conf[gale.TopologyMaxSpoutPending] = opts.MaxSpoutPending
		}
	}
	return topo, conf, nil
}

// Run is the bench.Runner for the Gale topology: it runs until ctx is done,
// then stops the topology in order (spouts deactivated, in-flight trees
// drained) before returning.
func Run(ctx context.Context, opts bench.Options, stats *bench.Stats, log *slog.Logger) error {
	topo, conf, err := Topology(opts, stats)
	if err != nil {
		return err
	}
	return gale.RunLocal(ctx, "bench-wordcount", conf, topo, gale.RunOptions{Logger: log})
}

// Runner returns Run as a bench.Runner logging to log.
func Runner(log *slog.Logger) bench.Runner {
	return func(ctx context.Context, opts bench.Options, stats *bench.Stats) error {
		return Run(ctx, opts, stats, log)
	}
}

// busyWork is the count bolt's extra work per word (Options.CountDelay):
// bench.BusyWork, which tests on a fake clock replace with a sleep.
var busyWork = bench.BusyWork
