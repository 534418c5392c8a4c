package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/retry"
)

// The spout's output fields, in order, on the default stream.
const (
	FieldKey       = "key"       // []byte or string (Config.KeyFormat)
	FieldValue     = "value"     // []byte or string (Config.ValueFormat)
	FieldTopic     = "topic"     // string
	FieldPartition = "partition" // int32
	FieldOffset    = "offset"    // int64
)

// Fields are the spout's output fields, in order (a copy: the spout
// declares the constants).
var Fields = []string{FieldKey, FieldValue, FieldTopic, FieldPartition, FieldOffset}

const (
	// commitTimeout bounds one offset commit, leaveTimeout leaving the
	// group at Close.
	commitTimeout = 15 * time.Second
	leaveTimeout  = 10 * time.Second
	// deadLetterTimeout bounds one dead-letter send; deadLetterRetry is
	// the pause before a failed one is tried again.
	deadLetterTimeout = 10 * time.Second
	deadLetterRetry   = time.Second
	// handoffBatches is the capacity, in polls, of the queue from the
	// fetching goroutine to the spout.
	handoffBatches = 4
	// fetchErrorPause is the pause after a poll that returned only errors.
	fetchErrorPause = 100 * time.Millisecond
	// letterBatch is the most dead letters sent in one batch.
	letterBatch = 256
)

// Spout is a gale.Spout reading a consumer group's share of Kafka topics
// with franz-go. It emits each record as (key, value, topic, partition,
// offset) and commits offsets to Kafka according to its
// ProcessingGuarantee; see the package documentation. Make it with
// NewSpout, or make every task's with NewSpouts.
//
// Its gale.Spout methods are called on the task's goroutine, as the
// runtime does; Stats and Progress are safe for concurrent use.
type Spout struct {
	cfg     Config
	tracker *retry.Tracker[*record] // under mu
	c       counters

	tc   *gale.TopologyContext
	coll *gale.SpoutCollector
	log  *slog.Logger
	cl   *kgo.Client
	dl   retry.DeadLetterSink

	ctx     context.Context // ends at Close; the goroutines' lifetime
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	batches chan []record // fetched records, bounded by handoffBatches

	// The batch being emitted; the spout's goroutine only.
	ready   []record
	readyAt int
	// letterC wakes the goroutine sending dead letters; capacity 1.
	letterC chan struct{}

	// noResume is set once the brokers refused a commit's metadata
	// (offset.metadata.max.bytes below what resume.go writes): commits go
	// without it from then on.
	noResume atomic.Bool

	// commitMu orders commits and revocations: a revocation waits for
	// a commit in progress, and a commit never includes a partition
	// revoked meanwhile, so a stale offset never reaches Kafka.
	commitMu sync.Mutex

	mu struct {
		sync.Mutex
		parts   map[topicPartition]*partState
		owned   map[topicPartition]bool // assigned to this member
		letters []letter                // given up, waiting for the dead-letter sink
		// resume holds what the commits fetched for the partitions just
		// assigned say may be skipped, until their first fetch.
		resume map[topicPartition]*resumeRange
	}
}

// counters are the spout's statistics.
type counters struct {
	emitted, retried, acked, failed       atomic.Int64
	dropped                               atomic.Int64
	committed, commits, commitFailures    atomic.Int64
	deadLetterFailures, fetchErrs, paused atomic.Int64
	// done counts the records finished under at-least-once: acked, or
	// given up and dead-lettered, each once (Progress).
	done atomic.Int64
	// skipped counts the records not emitted because the last owner's
	// commit said they had finished (resume.go).
	skipped atomic.Int64
}

type topicPartition struct {
	topic     string
	partition int32
}

// partState is the spout's state of one partition for one assignment. A
// revoked or lost partition's state is marked revoked and forgotten; a
// new assignment gets a new one, so that the records, acks and fails of
// the old one are told apart by their pointer.
type partState struct {
	tp       topicPartition
	topicV   any // tp's fields boxed once, for the tuples
	partV    any
	revoked  bool
	offs     offsetTracker // at-least-once
	emitNext int64         // other guarantees: offset after the last emitted; -1 none
	queued   int           // fetched, not yet emitted
	base     int64         // the first offset fetched in this assignment
	// committed is the last offset committed to Kafka; -1 none.
	// committedMeta is that commit's metadata: the open offsets past it
	// (resume.go).
	committed     int64
	committedMeta string
	// resume is what the last owner's commit says of the records from
	// the committed offset on: those that finished are skipped. nil once
	// passed, or when there was none.
	resume *resumeRange
	hwm    int64 // the high watermark the last fetch saw; -1 none
	paused bool
}

// record is one fetched record and what the spout knows of it; a pointer
// to it is the tuple's message id.
type record struct {
	r           *kgo.Record
	ps          *partState
	attempts    int // deliveries so far
	firstFailed time.Time
}

type letter struct {
	rec *record
	l   retry.DeadLetter
}

// NewSpout validates cfg (Config.ValidateSpout) and returns a spout, one
// task's instance. A topology adds it with NewSpouts' factory, or with
// its own func() gale.Spout calling NewSpout.
func NewSpout(cfg Config) (*Spout, error) {
	if err := cfg.ValidateSpout(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	policy := cfg.Retry
	if cfg.DeadLetterFile == "" && cfg.DeadLetterTopic == "" && cfg.DeadLetters == nil {
		// With nowhere to put a record given up, running out of attempts
		// would lose it: retry until it is acked (a timeout after a
		// worker crash counts as an attempt). Only a permanent failure,
		// which the topology asked for, is given up.
		policy.MaxAttempts = -1
	}
	s := &Spout{cfg: cfg, tracker: retry.NewTracker[*record](policy, rand.Uint64())}
	s.mu.parts = make(map[topicPartition]*partState)
	s.mu.owned = make(map[topicPartition]bool)
	s.mu.resume = make(map[topicPartition]*resumeRange)
	return s, nil
}

// DeclareOutputFields declares Fields on the default stream.
func (*Spout) DeclareOutputFields(d gale.OutputDeclarer) {
	d.Declare(FieldKey, FieldValue, FieldTopic, FieldPartition, FieldOffset)
}

// Open creates the Kafka client, joins the consumer group and starts the
// goroutines that fetch and commit; Close stops them.
func (s *Spout) Open(tc *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.tc, s.coll = tc, c
	s.log = tc.Logger().With("component", "kafka-spout", "group", s.cfg.GroupID)
	reset := kgo.NewOffset().AtStart()
	if s.cfg.AutoOffsetReset == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.cfg.BootstrapServers...),
		kgo.ClientID(s.cfg.ClientID),
		kgo.WithLogger(kgoLogger{s.log}),
		kgo.ConsumerGroup(s.cfg.GroupID),
		kgo.ConsumeTopics(s.cfg.topics()...),
		kgo.ConsumeResetOffset(reset),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(s.onAssigned),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
		kgo.OnOffsetsFetched(s.onFetched),
		kgo.FetchMaxWait(s.cfg.FetchMaxWait),
	}
	if s.cfg.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(s.cfg.SessionTimeout))
	}
	if s.cfg.HeartbeatInterval > 0 {
		opts = append(opts, kgo.HeartbeatInterval(s.cfg.HeartbeatInterval))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka spout: %w", err)
	}
	switch {
	case s.cfg.DeadLetters != nil:
		dl, err := s.cfg.DeadLetters(tc)
		if err != nil || dl == nil {
			cl.Close()
			return fmt.Errorf("kafka spout: DeadLetters gave no sink: %v", err)
		}
		s.dl = dl
	case s.cfg.DeadLetterFile != "":
		fs, err := retry.OpenFile(s.cfg.DeadLetterFile)
		if err != nil {
			cl.Close()
			return fmt.Errorf("kafka spout: deadletter.file: %w", err)
		}
		s.dl = fs
	case s.cfg.DeadLetterTopic != "":
		s.dl = NewDeadLetterTopic(cl, s.cfg.DeadLetterTopic)
	default:
		s.dl = logSink{s.log}
	}
	s.cl = cl
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.batches = make(chan []record, handoffBatches)
	s.letterC = make(chan struct{}, 1)
	s.wg.Add(3)
	go s.fetch()
	go s.commitLoop()
	go s.sendLetters()
	return nil
}

// NextTuple emits one record: a retry that is due, unless the fair share
// says a new record goes first, or the next new record. It never waits
// for the broker: fetching, committing and dead-lettering happen on
// goroutines the spout owns.
func (s *Spout) NextTuple() {
	now := s.tc.Now()
	s.mu.Lock()
	fresh := s.peekLocked()
	if s.cfg.ProcessingGuarantee == AtLeastOnce {
		if rec, att, ok := s.tracker.Next(now, fresh != nil); ok {
			rec.attempts = att + 1
			s.mu.Unlock()
			s.c.retried.Add(1)
			s.emit(rec, rec)
			return
		}
	}
	if fresh == nil {
		s.mu.Unlock()
		return
	}
	s.readyAt++
	ps := fresh.ps
	ps.queued--
	fresh.attempts = 1
	var id any
	if s.cfg.ProcessingGuarantee == AtLeastOnce {
		if !ps.offs.track(fresh.r.Offset) {
			// A partition's records come in offset order within an
			// assignment; this one did not (the fetch position moved
			// back, as after a reset of a truncated log). Tracking it out
			// of order would break the commit point: drop it.
			s.mu.Unlock()
			s.c.dropped.Add(1)
			s.log.Error("record out of order, dropped", "topic", ps.tp.topic, "partition", ps.tp.partition, "offset", fresh.r.Offset)
			return
		}
		s.tracker.EmittedNew()
		id = fresh
	} else {
		ps.emitNext = fresh.r.Offset + 1
	}
	s.maybeResumeLocked(ps)
	s.mu.Unlock()
	s.emit(fresh, id)
}

// peekLocked returns the next new record to emit, or nil: it takes a
// fetched batch from the queue when the current one is done, and skips
// the records of partitions revoked since they were fetched.
func (s *Spout) peekLocked() *record {
	for {
		if s.readyAt == len(s.ready) {
			select {
			case b := <-s.batches:
				s.ready, s.readyAt = b, 0
			default:
				s.ready, s.readyAt = nil, 0
				return nil
			}
		}
		r := &s.ready[s.readyAt]
		ps := r.ps
		if ps.revoked {
			s.readyAt++
			s.c.dropped.Add(1)
			continue
		}
		if ps.resume == nil {
			return r
		}
		if r.r.Offset >= ps.resume.to {
			ps.resume = nil
			return r
		}
		if !ps.resume.skip(r.r.Offset) || !ps.offs.pass(r.r.Offset) {
			return r
		}
		// Finished before the last owner's commit: not read again.
		s.readyAt++
		ps.queued--
		s.c.skipped.Add(1)
		s.maybeResumeLocked(ps)
	}
}

func (s *Spout) emit(rec *record, id any) {
	r := rec.r
	var key, val any = r.Key, r.Value
	if s.cfg.KeyFormat == String {
		key = string(r.Key)
	}
	if s.cfg.ValueFormat == String {
		val = string(r.Value)
	}
	if _, err := s.coll.Emit(id, key, val, rec.ps.topicV, rec.ps.partV, r.Offset); err != nil {
		// Only a bug makes the runtime refuse these values; give the
		// record up rather than hold its partition back forever.
		s.coll.ReportError(fmt.Errorf("kafka spout: emit %s: %w", source(r), err))
		if id != nil {
			s.Fail(id, gale.Permanent(err))
		}
		return
	}
	s.c.emitted.Add(1)
}

// Ack marks the record acked: the commit point of its partition moves
// past it once every record before it is acked too. An ack for a
// partition revoked since is ignored.
func (s *Spout) Ack(msgID any) {
	rec, ok := msgID.(*record)
	if !ok {
		return
	}
	s.mu.Lock()
	s.doneLocked(rec)
	s.mu.Unlock()
	s.c.acked.Add(1) // after Progress counted it
}

// doneLocked marks rec finished (acked, or its dead letter stored): its
// offset may be committed once every one before it is, and it counts as
// progress. A record of a partition revoked since counts for nothing:
// its partition's new owner reads it again.
func (s *Spout) doneLocked(rec *record) {
	if rec.ps.revoked {
		return
	}
	if rec.ps.offs.ack(rec.r.Offset) {
		s.c.done.Add(1)
	}
	s.maybeResumeLocked(rec.ps)
}

// Fail hands the record to the retry policy: it is retried after a
// backoff, or given up (a permanent failure, or out of attempts), which
// sends it to the dead-letter sink and then counts it as acked. A tree
// failed because the topology shut down (gale.ErrShutdown) is left
// uncommitted instead, and costs no attempt.
func (s *Spout) Fail(msgID any, reason error) {
	rec, ok := msgID.(*record)
	if !ok {
		return
	}
	s.c.failed.Add(1)
	if errors.Is(reason, gale.ErrShutdown) {
		// Not the record's fault: it costs no attempt and stays
		// uncommitted, for the partition's next owner to read again.
		return
	}
	now := s.tc.Now()
	s.mu.Lock()
	if rec.ps.revoked {
		s.mu.Unlock()
		return // the partition's new owner reads it again
	}
	if rec.firstFailed.IsZero() {
		rec.firstFailed = now
	}
	out := s.tracker.Failed(rec, rec.attempts, reason, now)
	if out.GiveUp {
		l := out.Letter
		l.Source = source(rec.r)
		l.Key, l.Value = rec.r.Key, rec.r.Value
		l.Headers = letterHeaders(rec.r.Headers)
		l.Topology, l.Component = s.tc.TopologyName(), s.tc.ComponentID()
		l.FirstFailed = rec.firstFailed
		s.mu.letters = append(s.mu.letters, letter{rec: rec, l: l})
	}
	s.mu.Unlock()
	if out.GiveUp {
		select {
		case s.letterC <- struct{}{}:
		default: // the sender is already awake
		}
	}
}

// sendLetters sends the given-up records to the dead-letter sink, in
// order, in batches of every letter waiting (at most letterBatch:
// retry.SendAll, one SendBatch if the sink is a retry.BatchSink), and
// marks each record finished once its letter is stored, until Close. A
// failed batch is logged, counted and sent again, whole, deadLetterRetry
// later; its records stay uncommitted meanwhile. Letters not sent by
// Close leave their records uncommitted, to be read again.
func (s *Spout) sendLetters() {
	defer s.wg.Done()
	var batch []letter
	var ls []retry.DeadLetter
	for {
		select {
		case <-s.letterC:
		case <-s.ctx.Done():
			return
		}
		for {
			s.mu.Lock()
			batch = append(batch[:0], s.mu.letters[:min(len(s.mu.letters), letterBatch)]...)
			s.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			ls = ls[:0]
			for _, lt := range batch {
				ls = append(ls, lt.l)
			}
			ctx, cancel := context.WithTimeout(s.ctx, deadLetterTimeout)
			err := retry.SendAll(ctx, s.dl, ls)
			cancel()
			if err != nil {
				if s.ctx.Err() != nil {
					return
				}
				s.c.deadLetterFailures.Add(1)
				s.log.Error("dead-letter send failed; the records stay uncommitted and are sent again",
					"letters", len(ls), "first", ls[0].Source, "err", err)
				if !s.pause(deadLetterRetry) {
					return
				}
				continue
			}
			s.mu.Lock()
			// The batch's letters still queued are the queue's head, in
			// order: a revocation meanwhile only took some out.
			i := 0
			for _, lt := range batch {
				if i < len(s.mu.letters) && s.mu.letters[i].rec == lt.rec {
					i++
				}
				s.doneLocked(lt.rec)
			}
			clear(s.mu.letters[:i])
			s.mu.letters = s.mu.letters[i:]
			s.mu.Unlock()
			clear(batch)
			clear(ls)
		}
	}
}

// Activate does nothing: the spout fetches from Open to Close.
func (*Spout) Activate() {}

// Deactivate does nothing: acks still arrive and are committed.
func (*Spout) Deactivate() {}

// Close stops fetching, commits what was acked, leaves the group (which
// revokes every partition) and closes the client and the dead-letter
// sink. Records not committed are read again by the partitions' next
// owner.
func (s *Spout) Close() {
	if s.cl == nil {
		return
	}
	s.cancel()
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	s.commit(ctx)
	cancel()
	// Leave the group (revoking every partition, which commits again)
	// within a bound, so that an unreachable cluster cannot hold the
	// topology's shutdown; Close then has nothing left to wait for.
	s.cl.AllowRebalance()
	ctx, cancel = context.WithTimeout(context.Background(), leaveTimeout)
	if err := s.cl.LeaveGroupContext(ctx); err != nil {
		s.log.Warn("leaving the consumer group failed; its partitions move once the session times out", "err", err)
	}
	cancel()
	s.cl.Close()
	if err := s.dl.Close(); err != nil {
		s.log.Error("dead-letter sink close failed", "err", err)
	}
}

// fetch polls the brokers and hands the records to NextTuple through
// the bounded queue, until Close.
func (s *Spout) fetch() {
	defer s.wg.Done()
	for {
		fs := s.cl.PollRecords(s.ctx, s.cfg.MaxPollRecords)
		if s.ctx.Err() != nil || fs.IsClientClosed() {
			s.cl.AllowRebalance()
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			s.c.fetchErrs.Add(1)
			s.log.Warn("fetch failed", "topic", t, "partition", p, "err", err)
		})
		// Rebalances wait (BlockRebalanceOnPoll) until the records are
		// tagged with their partition's state of this assignment.
		batch := make([]record, 0, fs.NumRecords())
		s.mu.Lock()
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.Err != nil || len(p.Records) == 0 {
				return
			}
			ps := s.partLocked(topicPartition{p.Topic, p.Partition}, p.Records[0].Offset)
			ps.hwm = p.HighWatermark
			for _, r := range p.Records {
				batch = append(batch, record{r: r, ps: ps})
			}
			ps.queued += len(p.Records)
			s.maybePauseLocked(ps)
		})
		s.mu.Unlock()
		s.cl.AllowRebalance()
		if len(batch) == 0 {
			if fs.Err() != nil && !s.pause(fetchErrorPause) {
				return // franz-go retries; do not spin on its errors meanwhile
			}
			continue
		}
		if s.cfg.ProcessingGuarantee == AtMostOnce {
			batch = s.commitBefore(batch)
		}
		select {
		case s.batches <- batch:
		case <-s.ctx.Done():
			return
		}
	}
}

// partLocked returns the state of tp in this assignment, making it on
// the partition's first fetch.
func (s *Spout) partLocked(tp topicPartition, first int64) *partState {
	ps := s.mu.parts[tp]
	if ps == nil {
		ps = &partState{tp: tp, topicV: tp.topic, partV: tp.partition, offs: newOffsetTracker(),
			emitNext: -1, base: first, committed: -1, hwm: -1}
		if r := s.mu.resume[tp]; r != nil && s.cfg.ProcessingGuarantee == AtLeastOnce {
			ps.resume = r
			ps.committed, ps.committedMeta = r.from, "" // commit the range again, as it shrinks
			delete(s.mu.resume, tp)
		}
		s.mu.parts[tp] = ps
	}
	return ps
}

// maybePauseLocked pauses fetching ps at max.uncommitted.offsets: its
// records open (emitted and not finished) and fetched, not emitted.
func (s *Spout) maybePauseLocked(ps *partState) {
	if ps.paused || ps.offs.openCount()+ps.queued < s.cfg.MaxUncommittedOffsets {
		return
	}
	ps.paused = true
	s.c.paused.Add(1)
	s.cl.PauseFetchPartitions(map[string][]int32{ps.tp.topic: {ps.tp.partition}})
}

// maybeResumeLocked resumes fetching ps once it is below the cap, as
// records finish or are emitted.
func (s *Spout) maybeResumeLocked(ps *partState) {
	if !ps.paused || ps.offs.openCount()+ps.queued >= s.cfg.MaxUncommittedOffsets {
		return
	}
	ps.paused = false
	s.cl.ResumeFetchPartitions(map[string][]int32{ps.tp.topic: {ps.tp.partition}})
}

// commitBefore commits, for at-most-once, the offsets after batch before
// any of it is emitted, and returns the records of partitions still
// owned. A failed commit is counted, logged and retried until it
// succeeds or the spout closes; a revocation may run between attempts.
func (s *Spout) commitBefore(batch []record) []record {
	for attempt := 0; ; attempt++ {
		var err error
		batch, err = s.commitBatch(batch)
		if err == nil {
			return batch
		}
		if !s.pause(min(time.Duration(1<<min(attempt, 6))*10*time.Millisecond, time.Second)) {
			return nil
		}
	}
}

// commitBatch drops the records of revoked partitions from batch and
// commits the offsets after the rest.
func (s *Spout) commitBatch(batch []record) ([]record, error) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	kept := batch[:0]
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	states := make(map[topicPartition]*partState)
	for _, r := range batch {
		if r.ps.revoked {
			s.c.dropped.Add(1)
			continue
		}
		kept = append(kept, r)
		addOffset(offsets, r.ps.tp, r.r.Offset+1)
		states[r.ps.tp] = r.ps
	}
	s.mu.Unlock()
	if len(kept) == 0 {
		return kept, nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, commitTimeout)
	defer cancel()
	return kept, s.commitOffsets(ctx, offsets, states, nil)
}

// pause waits d, or until Close; it reports false at Close.
func (s *Spout) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// commitLoop commits every offset.commit.period until Close. A failed
// commit is counted and logged by commitOffsets and retried at the next
// period; it never stops the spout.
func (s *Spout) commitLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.OffsetCommitPeriod)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(s.ctx, commitTimeout)
			s.commit(ctx)
			cancel()
		}
	}
}

// commit commits the commit point of every owned partition that moved.
func (s *Spout) commit(ctx context.Context) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	offsets, states, metas := s.toCommitLocked(func(*partState) bool { return true })
	s.mu.Unlock()
	if len(states) > 0 {
		_ = s.commitOffsets(ctx, offsets, states, metas) // counted and logged
	}
}

// commitPointLocked is where ps's commit may move to.
func (s *Spout) commitPointLocked(ps *partState) (int64, bool) {
	if s.cfg.ProcessingGuarantee == AtLeastOnce {
		return ps.offs.commitPoint()
	}
	return ps.emitNext, ps.emitNext >= 0
}

// toCommitLocked returns the commits of the partitions include picks
// whose commit point moved, or, under at-least-once, whose open offsets
// past it changed since the last commit (resume.go): the offsets, the
// partitions' states, and each commit's metadata.
func (s *Spout) toCommitLocked(include func(*partState) bool) (map[string]map[int32]kgo.EpochOffset, map[topicPartition]*partState, map[topicPartition]string) {
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	states := make(map[topicPartition]*partState)
	metas := make(map[topicPartition]string)
	if s.cfg.ProcessingGuarantee == AtMostOnce {
		return offsets, states, metas // committed before emitting
	}
	for tp, ps := range s.mu.parts {
		if !include(ps) {
			continue
		}
		off, ok := s.commitPointLocked(ps)
		if !ok {
			continue
		}
		meta := ""
		if s.cfg.ProcessingGuarantee == AtLeastOnce && !s.noResume.Load() {
			meta = resumeMetadata(tp, &ps.offs)
		}
		if off > ps.committed || off == ps.committed && meta != ps.committedMeta {
			addOffset(offsets, tp, off)
			states[tp] = ps
			metas[tp] = meta
		}
	}
	return offsets, states, metas
}

func addOffset(m map[string]map[int32]kgo.EpochOffset, tp topicPartition, off int64) {
	ps := m[tp.topic]
	if ps == nil {
		ps = make(map[int32]kgo.EpochOffset)
		m[tp.topic] = ps
	}
	if cur, ok := ps[tp.partition]; !ok || off > cur.Offset {
		ps[tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
}

// commitOffsets commits synchronously and records, per partition, what
// Kafka accepted. It returns the first error, counted and logged.
func (s *Spout) commitOffsets(ctx context.Context, offsets map[string]map[int32]kgo.EpochOffset, states map[topicPartition]*partState, metas map[topicPartition]string) error {
	var err error
	var resp *kmsg.OffsetCommitResponse
	if len(metas) > 0 {
		ctx = kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
			for i := range req.Topics {
				t := &req.Topics[i]
				for j := range t.Partitions {
					if m := metas[topicPartition{t.Topic, t.Partitions[j].Partition}]; m != "" {
						t.Partitions[j].Metadata = &m
					}
				}
			}
			return nil
		})
	}
	s.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, r *kmsg.OffsetCommitResponse, e error) {
		err, resp = e, r
	})
	s.c.commits.Add(1)
	if err == nil && resp != nil {
		s.mu.Lock()
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				tp := topicPartition{t.Topic, p.Partition}
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
					if err == nil {
						err = fmt.Errorf("partition %s/%d: %w", t.Topic, p.Partition, e)
					}
					if errors.Is(e, kerr.OffsetMetadataTooLarge) && metas[tp] != "" && !s.noResume.Swap(true) {
						s.log.Warn("the brokers refuse the commit metadata that lets a partition's next owner skip the records finished; committing without it (set offset.metadata.max.bytes ≥ 4096 on the brokers)",
							"bytes", len(metas[tp]))
					}
					continue
				}
				ps, off := states[tp], offsets[t.Topic][p.Partition].Offset
				if ps != nil && off > ps.committed {
					s.c.committed.Add(off - max(ps.committed, ps.base))
					ps.committed = off
				}
				if ps != nil && off == ps.committed {
					ps.committedMeta = metas[tp]
				}
			}
		}
		s.mu.Unlock()
	}
	if err != nil && errors.Is(err, context.Canceled) && s.ctx.Err() != nil {
		return err // Close cut a periodic commit short; it commits again itself
	}
	if err != nil {
		s.c.commitFailures.Add(1)
		s.log.Warn("offset commit failed; retried at the next commit", "offsets", fmt.Sprint(offsets), "err", err)
	}
	return err
}

// onAssigned notes the partitions assigned; their state is made on their
// first fetch.
func (s *Spout) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	s.mu.Lock()
	for t, ps := range assigned {
		for _, p := range ps {
			s.mu.owned[topicPartition{t, p}] = true
		}
	}
	s.mu.Unlock()
	s.log.Info("partitions assigned", "partitions", fmt.Sprint(assigned))
}

// onFetched keeps what the commits fetched for the partitions assigned
// say of the records past them (resume.go), for their first fetch.
// franz-go calls it after onAssigned, before it fetches the partitions.
func (s *Spout) onFetched(_ context.Context, _ *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
	if s.cfg.ProcessingGuarantee != AtLeastOnce {
		return nil
	}
	rs := resumeRanges(resp)
	s.mu.Lock()
	for tp, r := range rs {
		if s.mu.owned[tp] {
			s.mu.resume[tp] = r
		}
	}
	s.mu.Unlock()
	return nil
}

// onRevoked commits the acked prefix of each revoked partition and
// forgets its state: its queued records are dropped, its retries
// forgotten, and acks that come later commit nothing. franz-go calls it
// on its own goroutine, before the partitions go to another member.
func (s *Spout) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	s.forget(ctx, revoked, true)
}

// onLost forgets the lost partitions' state without committing: the
// member is out of the group, its commits would be refused.
func (s *Spout) onLost(ctx context.Context, _ *kgo.Client, lost map[string][]int32) {
	s.forget(ctx, lost, false)
}

func (s *Spout) forget(ctx context.Context, parts map[string][]int32, commit bool) {
	if len(parts) == 0 {
		return
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	gone := make(map[*partState]bool)
	for t, ps := range parts {
		for _, p := range ps {
			delete(s.mu.owned, topicPartition{t, p})
			delete(s.mu.resume, topicPartition{t, p})
			if st := s.mu.parts[topicPartition{t, p}]; st != nil {
				gone[st] = true
			}
		}
	}
	offsets, states, metas := s.toCommitLocked(func(ps *partState) bool { return gone[ps] })
	for ps := range gone {
		ps.revoked = true
		delete(s.mu.parts, ps.tp)
		if ps.paused {
			ps.paused = false
			s.cl.ResumeFetchPartitions(map[string][]int32{ps.tp.topic: {ps.tp.partition}})
		}
	}
	s.tracker.Drop(func(r *record) bool { return !r.ps.revoked })
	kept := s.mu.letters[:0]
	for _, l := range s.mu.letters {
		if !l.rec.ps.revoked {
			kept = append(kept, l)
		}
	}
	clear(s.mu.letters[len(kept):])
	s.mu.letters = kept
	s.mu.Unlock()
	if commit && len(states) > 0 {
		cctx, cancel := context.WithTimeout(ctx, commitTimeout)
		_ = s.commitOffsets(cctx, offsets, states, metas) // counted and logged
		cancel()
	}
	s.log.Info("partitions released", "partitions", fmt.Sprint(parts), "committed", commit)
}

// Progress is what the max-spout-pending auto-tuner reads
// (gale.ProgressReporter): under at-least-once, the records finished,
// each counted once when its tree is acked or its dead letter stored;
// under the other guarantees, which emit no trees, the offsets committed.
//
// It is not the committed offsets under at-least-once: those move only at
// each commit (offset.commit.period), so a tuner interval holds one, two
// or three commits' worth whatever max spout pending is, and the tuner
// takes that aliasing for falls in progress and cuts the value to the
// floor. A finished record is committed at the next commit once every
// record before it is finished too; one that is finished and then read
// again (the worker died before the commit) is counted again.
func (s *Spout) Progress() int64 {
	if s.cfg.ProcessingGuarantee == AtLeastOnce {
		return s.c.done.Load()
	}
	return s.c.committed.Load()
}

// Stats is a snapshot of a spout's counters.
type Stats struct {
	Emitted int64 // tuples emitted, retries included
	Retried int64 // of those, retries
	Acked   int64 // trees acked
	Failed  int64 // trees failed (each may be retried or given up)
	// Retries and DeadLettered are the retry tracker's: retries handed
	// out, and records given up (sent, or to be sent, to the dead-letter
	// sink).
	Retries, DeadLettered int64
	// DeadLetterFailures counts dead-letter sends that failed (and were
	// tried again).
	DeadLetterFailures int64
	// Dropped counts fetched records not emitted because their partition
	// was revoked first (its next owner reads them).
	Dropped int64
	// Committed is the number of offsets committed (Progress); Commits
	// the commit requests, CommitFailures those that failed.
	Committed, Commits, CommitFailures int64
	// FetchErrors counts fetch errors (franz-go retries them).
	FetchErrors int64
	// Pauses counts the times a partition reached max.uncommitted.offsets.
	Pauses int64
	// Skipped counts the records not read again after a partition moved
	// to this spout: the last owner's commit said they had finished
	// (see the package documentation on duplicates).
	Skipped int64
	// Partitions is the number of partitions assigned to the spout now.
	Partitions int
	// Lag is the consumer lag of the partitions owned: per partition, the
	// high watermark of its last fetch less its committed offset (the
	// first offset fetched before any commit). PartitionLag holds each
	// (key "topic/partition").
	Lag          int64
	PartitionLag map[string]int64
}

// Stats returns a snapshot of the spout's counters. Safe for concurrent
// use.
func (s *Spout) Stats() Stats {
	ts := s.tracker.Stats()
	st := Stats{
		Emitted:            s.c.emitted.Load(),
		Retried:            s.c.retried.Load(),
		Acked:              s.c.acked.Load(),
		Failed:             s.c.failed.Load(),
		Retries:            ts.Retries.Load(),
		DeadLettered:       ts.DeadLettered.Load(),
		DeadLetterFailures: s.c.deadLetterFailures.Load(),
		Dropped:            s.c.dropped.Load(),
		Committed:          s.c.committed.Load(),
		Commits:            s.c.commits.Load(),
		CommitFailures:     s.c.commitFailures.Load(),
		FetchErrors:        s.c.fetchErrs.Load(),
		Pauses:             s.c.paused.Load(),
		Skipped:            s.c.skipped.Load(),
		PartitionLag:       make(map[string]int64),
	}
	s.mu.Lock()
	st.Partitions = len(s.mu.owned)
	for tp, ps := range s.mu.parts {
		if ps.hwm < 0 {
			continue
		}
		lag := max(ps.hwm-max(ps.committed, ps.base), 0)
		st.PartitionLag[tp.topic+"/"+strconv.Itoa(int(tp.partition))] = lag
		st.Lag += lag
	}
	s.mu.Unlock()
	return st
}

// add sums o into st.
func (st *Stats) add(o Stats) {
	st.Emitted += o.Emitted
	st.Retried += o.Retried
	st.Acked += o.Acked
	st.Failed += o.Failed
	st.Retries += o.Retries
	st.DeadLettered += o.DeadLettered
	st.DeadLetterFailures += o.DeadLetterFailures
	st.Dropped += o.Dropped
	st.Committed += o.Committed
	st.Commits += o.Commits
	st.CommitFailures += o.CommitFailures
	st.FetchErrors += o.FetchErrors
	st.Pauses += o.Pauses
	st.Skipped += o.Skipped
	st.Lag += o.Lag
	st.Partitions += o.Partitions
	for k, v := range o.PartitionLag {
		st.PartitionLag[k] += v
	}
}

// Spouts makes the spout tasks of one component and sums their
// statistics. Pass its New method to gale.TopologyBuilder.SetSpout.
type Spouts struct {
	cfg Config
	mu  sync.Mutex
	all []*Spout
}

// NewSpouts validates cfg (Config.ValidateSpout) and returns the factory.
func NewSpouts(cfg Config) (*Spouts, error) {
	if err := cfg.ValidateSpout(); err != nil {
		return nil, err
	}
	return &Spouts{cfg: cfg}, nil
}

// New makes a spout; it is the factory for TopologyBuilder.SetSpout.
// Safe for concurrent use.
func (g *Spouts) New() gale.Spout {
	s, err := NewSpout(g.cfg)
	if err != nil {
		panic(err) // validated by NewSpouts
	}
	g.mu.Lock()
	g.all = append(g.all, s)
	g.mu.Unlock()
	return s
}

// Stats sums the statistics of every spout New made. Safe for concurrent
// use.
func (g *Spouts) Stats() Stats {
	g.mu.Lock()
	all := append([]*Spout(nil), g.all...)
	g.mu.Unlock()
	st := Stats{PartitionLag: make(map[string]int64)}
	for _, s := range all {
		st.add(s.Stats())
	}
	return st
}

// Progress sums the Progress of every spout New made.
func (g *Spouts) Progress() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	var n int64
	for _, s := range g.all {
		n += s.Progress()
	}
	return n
}

// letterHeaders are a record's headers for its dead letter, one for one
// in their order, a null value (nil) kept apart from an empty one; nil
// for none.
func letterHeaders(hs []kgo.RecordHeader) retry.Headers {
	if len(hs) == 0 {
		return nil
	}
	out := make(retry.Headers, len(hs))
	for i, h := range hs {
		out[i] = retry.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

// source names a record in a dead letter: "kafka:topic/partition@offset".
func source(r *kgo.Record) string {
	return "kafka:" + r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "@" + strconv.FormatInt(r.Offset, 10)
}

// RetryStats is the retry tracker's retries handed out and records given
// up to the dead-letter sink (gale.RetryReporter: the component's
// retries and dead letters). Safe for concurrent use.
func (s *Spout) RetryStats() (retries, deadLetters int64) {
	ts := s.tracker.Stats()
	return ts.Retries.Load(), ts.DeadLettered.Load()
}

// Compile-time checks of the interfaces the spout implements.
var (
	_ gale.Spout            = (*Spout)(nil)
	_ gale.ProgressReporter = (*Spout)(nil)
	_ gale.RetryReporter    = (*Spout)(nil)
)
