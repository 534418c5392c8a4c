package jetstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/retry"
)

// Output fields of the spout's default stream, in order.
const (
	FieldSubject  = "subject"  // string: the subject the message was published to
	FieldData     = "data"     // []byte: the message body
	FieldSequence = "sequence" // uint64: the message's sequence in the stream
	FieldAttempt  = "attempt"  // int: this delivery's number, 1 for the first
)

// Stats are a spout's counters; Spouts.Stats sums them over the tasks.
type Stats struct {
	Emitted          int64 // tuples emitted, first deliveries and redeliveries
	EmittedNew       int64 // of those, first deliveries (attempt 1)
	EmittedRetries   int64 // of those, redeliveries (attempt > 1)
	Acked            int64 // acks sent: trees completed
	Nacked           int64 // negative acks sent (retries, and trees cut by a shutdown)
	Retries          int64 // failures answered with a delayed negative ack
	Terminated       int64 // messages terminated (given up)
	DeadLettered     int64 // dead letters stored
	DeadLetterErrors int64 // dead-letter sends that failed (retried)
	Transient        int64 // failures of class transient (time-outs included)
	Delayable        int64 // failures of class delayable
	Permanent        int64 // failures of class permanent
	TimedOut         int64 // failures that were tree time-outs
	Shutdown         int64 // trees cut by a shutdown (negative-acked at once, not counted as failures)

	// The fair share at work: emits chosen while both a redelivery and a
	// new message waited. A spell of such waiting may open with up to
	// retry.retries.per.new redeliveries (the count in a row carries over),
	// then gives one new message a turn after each retry.retries.per.new:
	// ContendedRetries ≤ retries.per.new × (ContendedNew + ContendedSpells).
	ContendedRetries int64 // redeliveries emitted while a new message waited
	ContendedNew     int64 // new messages emitted while a redelivery waited
	ContendedSpells  int64 // times both began to wait
}

// spoutCounters are the atomics behind Stats.
type spoutCounters struct {
	emitted, emittedNew, emittedRetries       atomic.Int64
	acked, nacked, retries, terminated        atomic.Int64
	deadLettered, deadLetterErrors            atomic.Int64
	transient, delayable, permanent, timedOut atomic.Int64
	shutdown                                  atomic.Int64
	contendedRetries, contendedNew            atomic.Int64
	contendedSpells                           atomic.Int64
}

func (c *spoutCounters) snapshot() Stats {
	return Stats{
		Emitted: c.emitted.Load(), EmittedNew: c.emittedNew.Load(), EmittedRetries: c.emittedRetries.Load(),
		Acked: c.acked.Load(), Nacked: c.nacked.Load(), Retries: c.retries.Load(), Terminated: c.terminated.Load(),
		DeadLettered: c.deadLettered.Load(), DeadLetterErrors: c.deadLetterErrors.Load(),
		Transient: c.transient.Load(), Delayable: c.delayable.Load(), Permanent: c.permanent.Load(),
		TimedOut: c.timedOut.Load(), Shutdown: c.shutdown.Load(),
		ContendedRetries: c.contendedRetries.Load(), ContendedNew: c.contendedNew.Load(),
		ContendedSpells: c.contendedSpells.Load(),
	}
}

func (s *Stats) add(o Stats) {
	s.Emitted += o.Emitted
	s.EmittedNew += o.EmittedNew
	s.EmittedRetries += o.EmittedRetries
	s.Acked += o.Acked
	s.Nacked += o.Nacked
	s.Retries += o.Retries
	s.Terminated += o.Terminated
	s.DeadLettered += o.DeadLettered
	s.DeadLetterErrors += o.DeadLetterErrors
	s.Transient += o.Transient
	s.Delayable += o.Delayable
	s.Permanent += o.Permanent
	s.TimedOut += o.TimedOut
	s.Shutdown += o.Shutdown
	s.ContendedRetries += o.ContendedRetries
	s.ContendedNew += o.ContendedNew
	s.ContendedSpells += o.ContendedSpells
}

// Spout reads a stream through a durable pull consumer and emits each
// message as a tuple (FieldSubject, FieldData, FieldSequence,
// FieldAttempt), holding it unacked until its tree completes. See the
// package doc for the guarantees.
//
// NewSpout makes one task's spout; NewSpouts makes the factory for
// TopologyBuilder.SetSpout. The runtime calls the gale.Spout methods from
// the task's goroutine; Stats and Progress are safe for concurrent use.
type Spout struct {
	cfg Config
	c   spoutCounters

	tc      *gale.TopologyContext
	col     *gale.SpoutCollector
	log     *slog.Logger
	nc      *nats.Conn
	ackWait time.Duration // the consumer's
	fetch   *fetcher
	dlq     retry.DeadLetterSink
	rng     *rand.Rand
	nextID  uint64
	emitted map[uint64]*held // by message id, until acked or failed

	// Messages fetched and not emitted yet, by kind. Their total is
	// bounded by max.ack.pending: the server delivers no more unacked.
	fresh, redelivered queue[*held]
	retriesInRow       int  // redeliveries emitted since the last new message
	bothWaited         bool // at the last pick, a redelivery and a new message waited

	// letters sends the dead letters when a sink is configured.
	letters *letterBox
	// firstFailed remembers when this task first saw a message fail, by
	// stream sequence, for its dead letter; at most max.ack.pending.
	firstFailed map[uint64]time.Time
	// nextSweep is when the held messages are next checked for those
	// held long enough to need their ack.wait extended.
	nextSweep time.Time
}

// held is one delivered message.
type held struct {
	msg  njs.Msg
	meta *njs.MsgMetadata
	// since is when it arrived or its ack.wait was last extended.
	since time.Time
}

// NewSpout checks cfg (Config.ValidateSpout) and returns a spout for
// one task. Nothing connects until Open.
func NewSpout(cfg Config) (*Spout, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validateSpout(); err != nil {
		return nil, err
	}
	return &Spout{cfg: cfg}, nil
}

// Stats returns a snapshot of the spout's counters.
func (s *Spout) Stats() Stats { return s.c.snapshot() }

// Progress is the number of acks this task sent (gale.ProgressReporter):
// for a hold-and-ack queue, an ack is a message that is never delivered
// again.
func (s *Spout) Progress() int64 { return s.c.acked.Load() }

var _ gale.ProgressReporter = (*Spout)(nil)

// RetryStats is the failures answered with a delayed redelivery and the
// dead letters stored (gale.RetryReporter: the component's retries and
// dead letters). Safe for concurrent use.
func (s *Spout) RetryStats() (retries, deadLetters int64) {
	return s.c.retries.Load(), s.c.deadLettered.Load()
}

var _ gale.RetryReporter = (*Spout)(nil)

// DeclareOutputFields declares the default stream's fields.
func (*Spout) DeclareOutputFields(d gale.OutputDeclarer) {
	d.Declare(FieldSubject, FieldData, FieldSequence, FieldAttempt)
}

// Open connects, creates or updates the durable consumer, opens the
// dead-letter sink and starts fetching. It fails when ack.wait.ms is not
// longer than topology.message.timeout.secs.
func (s *Spout) Open(tc *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.tc, s.col = tc, c
	s.log = tc.Logger().With("stream", s.cfg.Stream, "consumer", s.cfg.Consumer)
	s.rng = rand.New(rand.NewPCG(rand.Uint64(), uint64(tc.TaskID())))
	s.emitted = make(map[uint64]*held)
	s.firstFailed = make(map[uint64]time.Time)

	secs, _ := tc.Config().Int(gale.TopologyMessageTimeoutSecs)
	timeout := time.Duration(secs) * time.Second
	ackWait := s.cfg.AckWait
	if ackWait == 0 {
		ackWait = 2 * timeout
	} else if ackWait <= timeout {
		return fmt.Errorf("%w: ack.wait.ms (%v) must be longer than %s (%v), or the server redelivers messages whose trees are still in flight", ErrConfig, ackWait, gale.TopologyMessageTimeoutSecs, timeout)
	}

	s.ackWait = ackWait
	nc, err := connect(s.cfg, tc, "spout")
	if err != nil {
		return err
	}
	js, err := njs.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("jetstream: %w", err)
	}
	ctx, cancel := context.WithTimeout(tc.Context(), 10*time.Second)
	defer cancel()
	cons, err := js.CreateOrUpdateConsumer(ctx, s.cfg.Stream, njs.ConsumerConfig{
		Durable:       s.cfg.Consumer,
		AckPolicy:     njs.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxAckPending: s.cfg.MaxAckPending,
		MaxDeliver:    -1, // the spout decides when to give up
		FilterSubject: s.cfg.FilterSubject,
		DeliverPolicy: njs.DeliverAllPolicy,
	})
	if err != nil {
		nc.Close()
		return fmt.Errorf("jetstream: consumer %q on stream %q: %w", s.cfg.Consumer, s.cfg.Stream, err)
	}
	switch {
	case s.cfg.DeadLetters != nil:
		dl, err := s.cfg.DeadLetters(tc)
		if err != nil || dl == nil {
			nc.Close()
			return fmt.Errorf("jetstream: DeadLetters gave no sink: %v", err)
		}
		s.dlq = dl
	case s.cfg.DeadLetterFile != "":
		fs, err := retry.OpenFile(s.cfg.DeadLetterFile)
		if err != nil {
			nc.Close()
			return fmt.Errorf("jetstream: deadletter.file: %w", err)
		}
		s.dlq = fs
	case s.cfg.DeadLetterSubject != "":
		s.dlq = NewDeadLetterSink(js, s.cfg.DeadLetterSubject)
	}
	s.nc = nc
	if s.dlq != nil {
		s.letters = startLetterBox(s.dlq, s.cfg.Retry, s.cfg.PublishTimeout, ackWait, s.cfg.MaxAckPending, &s.c, s.log)
	}
	tasks := max(len(tc.ThisComponentTasks()), 1)
	s.fetch = startFetcher(tc.Context(), cons, max((s.cfg.MaxAckPending+tasks-1)/tasks, 1), s.cfg.FetchMaxWait, tc.Now, s.log)
	return nil
}

// connect dials the configured servers, reconnecting for ever after a
// disconnection.
func connect(cfg Config, tc *gale.TopologyContext, role string) (*nats.Conn, error) {
	name := cfg.Name
	if name == "" {
		name = fmt.Sprintf("gale %s/%s[%d] %s", tc.TopologyName(), tc.ComponentID(), tc.TaskID(), role)
	}
	nc, err := nats.Connect(cfg.URL, nats.Name(name), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("jetstream: connect to %s (url): %w", cfg.URL, err)
	}
	return nc, nil
}

// NextTuple takes what the fetcher has handed over and emits one message,
// choosing between redeliveries and new messages by the retry policy's
// fair share.
func (s *Spout) NextTuple() {
	s.takeFetched()
	s.sweep()
	h, ok := s.pick()
	if !ok {
		return
	}
	s.nextID++
	id := s.nextID
	attempt := int(h.meta.NumDelivered)
	s.emitted[id] = h
	if _, err := s.col.Emit(id, h.msg.Subject(), h.msg.Data(), h.meta.Sequence.Stream, attempt); err != nil {
		delete(s.emitted, id)
		s.col.ReportError(fmt.Errorf("jetstream: emit message %d: %w", h.meta.Sequence.Stream, err))
		s.nak(h, s.cfg.Retry.Backoff(max(attempt, 1), s.rng.Float64()))
		return
	}
	s.c.emitted.Add(1)
	if attempt > 1 {
		s.c.emittedRetries.Add(1)
	} else {
		s.c.emittedNew.Add(1)
	}
}

// takeFetched moves the messages the fetcher handed over into the queues.
func (s *Spout) takeFetched() {
	for range len(s.fetch.out) {
		f := <-s.fetch.out
		m := f.msg
		meta, err := m.Metadata()
		if err != nil {
			// Not a JetStream delivery: nothing to ack it with.
			s.col.ReportError(fmt.Errorf("jetstream: message on %q without metadata: %w", m.Subject(), err))
			continue
		}
		h := &held{msg: m, meta: meta, since: f.at}
		if meta.NumDelivered > 1 {
			s.redelivered.push(h)
		} else {
			s.fresh.push(h)
		}
	}
}

// sweep extends the ack.wait (InProgress) of the messages held for a
// quarter of it, waiting in the queues or in flight (a bolt may keep a
// tree alive past the message timeout with ResetTimeout), so that the
// server does not deliver again a message the spout still holds. It looks
// every eighth of ack.wait, from NextTuple, Ack and Fail (which take what
// the fetcher handed over first, so that no message waits unseen in the
// hand-over queue): a spout at topology.max.spout.pending gets no
// NextTuple, but an Ack or a Fail at least every
// topology.message.timeout.secs, and ack.wait is longer.
func (s *Spout) sweep() {
	now := s.tc.Now()
	if now.Before(s.nextSweep) {
		return
	}
	s.nextSweep = now.Add(s.ackWait / 8)
	extend := func(h *held) {
		if now.Sub(h.since) >= s.ackWait/4 {
			if err := h.msg.InProgress(); err == nil {
				h.since = now
			}
		}
	}
	for _, q := range []*queue[*held]{&s.fresh, &s.redelivered} {
		for _, h := range q.items[q.head:] {
			extend(h)
		}
	}
	for _, h := range s.emitted {
		extend(h)
	}
}

// pick returns the next message to emit: a redelivery, unless
// retry.retries.per.new redeliveries went in a row and a new message
// waits. It is the counting of retry.Tracker.Next applied to the
// redeliveries the server schedules itself.
func (s *Spout) pick() (*held, bool) {
	both := s.redelivered.len() > 0 && s.fresh.len() > 0
	if both && !s.bothWaited {
		s.c.contendedSpells.Add(1)
	}
	s.bothWaited = both
	if s.redelivered.len() > 0 && (s.fresh.len() == 0 || s.retriesInRow < s.cfg.Retry.RetriesPerNew) {
		s.retriesInRow++
		if both {
			s.c.contendedRetries.Add(1)
		}
		return s.redelivered.pop(), true
	}
	if s.fresh.len() > 0 {
		s.retriesInRow = 0
		if both {
			s.c.contendedNew.Add(1)
		}
		return s.fresh.pop(), true
	}
	return nil, false
}

// Activate does nothing: the fetcher runs from Open to Close, within
// max.ack.pending.
func (*Spout) Activate() {}

// Deactivate does nothing: NextTuple is not called meanwhile, and what is
// fetched waits (its ack.wait running) or is given back at Close.
func (*Spout) Deactivate() {}

// Ack acks the message whose tree completed.
func (s *Spout) Ack(msgID any) {
	s.takeFetched()
	s.sweep()
	id, _ := msgID.(uint64)
	h, ok := s.emitted[id]
	if !ok {
		return
	}
	delete(s.emitted, id)
	delete(s.firstFailed, h.meta.Sequence.Stream)
	if err := h.msg.Ack(); err != nil {
		s.col.ReportError(fmt.Errorf("jetstream: ack message %d: %w", h.meta.Sequence.Stream, err))
		return
	}
	s.c.acked.Add(1)
}

// Fail decides the fate of the message whose tree failed: a negative ack
// with the policy's delay, or, for a permanent failure or (with a
// dead-letter sink) the last attempt, its dead letter and then its
// termination. A tree cut by a shutdown is negative-acked at once, for
// the consumer's next client.
func (s *Spout) Fail(msgID any, reason error) {
	s.takeFetched()
	s.sweep()
	id, _ := msgID.(uint64)
	h, ok := s.emitted[id]
	if !ok {
		return
	}
	delete(s.emitted, id)
	if errors.Is(reason, gale.ErrShutdown) {
		s.c.shutdown.Add(1)
		s.nak(h, 0)
		return
	}
	now := s.tc.Now()
	seq := h.meta.Sequence.Stream
	first, seen := s.firstFailed[seq]
	if !seen {
		first = now
		if len(s.firstFailed) < s.cfg.MaxAckPending {
			s.firstFailed[seq] = now
		}
	}
	class, after := gale.ClassOf(reason)
	switch class {
	case gale.ClassPermanent:
		s.c.permanent.Add(1)
	case gale.ClassDelayable:
		s.c.delayable.Add(1)
	default:
		s.c.transient.Add(1)
	}
	if errors.Is(reason, gale.ErrTimeout) {
		s.c.timedOut.Add(1)
	}
	attempts := int(h.meta.NumDelivered)
	// Without a dead-letter sink, running out of attempts gives nothing
	// up: dropping a message that might yet succeed would lose it.
	outOfAttempts := s.dlq != nil && s.cfg.Retry.MaxAttempts > 0 && attempts >= s.cfg.Retry.MaxAttempts
	if class == gale.ClassPermanent || outOfAttempts {
		delete(s.firstFailed, seq)
		s.giveUp(h, attempts, class, reason, first, now)
		return
	}
	delay := s.cfg.Retry.Backoff(attempts, s.rng.Float64())
	if class == gale.ClassDelayable && after > delay {
		delay = after
	}
	s.c.retries.Add(1)
	s.nak(h, delay)
}

// nak negative-acks a message, to be delivered again after delay.
func (s *Spout) nak(h *held, delay time.Duration) {
	var err error
	if delay > 0 {
		err = h.msg.NakWithDelay(delay)
	} else {
		err = h.msg.Nak()
	}
	if err != nil {
		s.col.ReportError(fmt.Errorf("jetstream: negative-ack message %d: %w", h.meta.Sequence.Stream, err))
		return
	}
	s.c.nacked.Add(1)
}

// giveUp has the message's dead letter sent, and the message terminated
// once the letter is stored (letterBox); with no sink (then only a
// permanent failure is given up), it logs the message and terminates it.
func (s *Spout) giveUp(h *held, attempts int, class gale.FailureClass, reason error, first, now time.Time) {
	l := retry.DeadLetter{
		Source:      source(h),
		Value:       h.msg.Data(),
		Headers:     letterHeaders(h.msg.Headers()),
		Topology:    s.tc.TopologyName(),
		Component:   s.tc.ComponentID(),
		Attempts:    attempts,
		Class:       class.String(),
		LastError:   reasonText(reason),
		FirstFailed: first,
		GaveUp:      now,
	}
	if id := h.msg.Headers().Get(njs.MsgIDHeader); id != "" {
		l.Key = []byte(id)
	}
	lt := &letter{h: h, l: l}
	if s.letters != nil {
		s.letters.add(lt)
		return
	}
	s.log.Error("jetstream message failed permanently, terminated; no dead-letter sink is configured",
		"source", l.Source, "attempts", l.Attempts, "last_error", l.LastError, "value", string(l.Value), "headers", l.Headers)
	terminate(lt, &s.c, s.log)
}

// Close stops fetching and sending dead letters, gives back the messages
// fetched and not emitted and those whose dead letter is not stored yet
// (negative acks, so the consumer's next client gets them at once),
// flushes and closes the connection and the dead-letter sink.
func (s *Spout) Close() {
	if s.fetch == nil {
		return
	}
	s.fetch.stop()
	s.takeFetched()
	for _, q := range []*queue[*held]{&s.fresh, &s.redelivered} {
		for q.len() > 0 {
			s.nak(q.pop(), 0)
		}
	}
	if s.letters != nil {
		for _, lt := range s.letters.stop() {
			s.nak(lt.h, 0)
		}
		s.letters = nil
	}
	_ = s.nc.FlushTimeout(2 * time.Second)
	s.nc.Close()
	if s.dlq != nil {
		if err := s.dlq.Close(); err != nil {
			s.log.Warn("jetstream dead-letter sink close failed", "err", err)
		}
	}
	s.fetch = nil
}

// source names a message in a dead letter: jetstream:STREAM/subject#seq.
func source(h *held) string {
	return fmt.Sprintf("jetstream:%s/%s#%d", h.meta.Stream, h.msg.Subject(), h.meta.Sequence.Stream)
}

// letterHeaders are a message's headers for its dead letter: the keys
// sorted (a nats.Header is a map), each key's values in their order, as
// sent (NATS keeps the keys' case as published); nil for none.
func letterHeaders(h nats.Header) retry.Headers {
	if len(h) == 0 {
		return nil
	}
	var out retry.Headers
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			out = append(out, retry.Header{Key: k, Value: []byte(v)})
		}
	}
	return out
}

func reasonText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// queue is a FIFO on a slice.
type queue[T any] struct {
	items []T
	head  int
}

func (q *queue[T]) len() int { return len(q.items) - q.head }

func (q *queue[T]) push(v T) {
	if q.head > 0 && q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	q.items = append(q.items, v)
}

func (q *queue[T]) pop() T {
	v := q.items[q.head]
	var zero T
	q.items[q.head] = zero
	q.head++
	if q.head > 1024 && q.head*2 > len(q.items) {
		q.items = append(q.items[:0], q.items[q.head:]...)
		q.head = 0
	}
	return v
}

// Spouts makes the spout tasks of one component and sums their counters.
// Pass its New method to gale.TopologyBuilder.SetSpout.
type Spouts struct {
	cfg Config
	mu  sync.Mutex
	all []*Spout
}

// NewSpouts checks cfg (Config.ValidateSpout) and returns the factory.
func NewSpouts(cfg Config) (*Spouts, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validateSpout(); err != nil {
		return nil, err
	}
	return &Spouts{cfg: cfg}, nil
}

// New makes a spout; it is the factory for TopologyBuilder.SetSpout.
// Safe for concurrent use.
func (g *Spouts) New() gale.Spout {
	s := &Spout{cfg: g.cfg}
	g.mu.Lock()
	g.all = append(g.all, s)
	g.mu.Unlock()
	return s
}

// Stats sums the counters of every spout New made (in this process: a
// topology over several workers has a sum in each). Safe for concurrent
// use.
func (g *Spouts) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	var sum Stats
	for _, s := range g.all {
		sum.add(s.c.snapshot())
	}
	return sum
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
