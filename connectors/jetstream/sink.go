package jetstream

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/gale-stream/gale"
)

// SinkStats are a sink's counters; Sinks.Stats sums them over the tasks.
type SinkStats struct {
	Published  int64 // publishes sent
	Acked      int64 // inputs acked: their PubAck arrived
	Duplicates int64 // of those, PubAcks saying the stream already held the message id
	Failed     int64 // inputs failed: the publish or its PubAck failed (transient), or the input was unusable (permanent)
}

type sinkCounters struct {
	published, acked, duplicates, failed atomic.Int64
}

// Sink is a bolt that publishes each input tuple to JetStream and acks the
// input only when the stream has stored it (its PubAck arrived), or fails
// it as transient when the publish fails or times out (publish.timeout.ms).
// An input without a usable data, subject or message-id field is failed as
// permanent. At most publish.max.pending publishes wait for their PubAck;
// Execute blocks at that cap, which passes backpressure upstream.
//
// The body is DataField (a []byte or a string); the subject is Subject or
// the SubjectField of each tuple; with MsgIDField set, the Nats-Msg-Id
// header makes the stream store a tuple replayed within its duplicate
// window once. With Stream set, a publish the server would store in
// another stream fails. The sink emits nothing.
//
// NewSink makes one task's sink; NewSinks makes the factory for
// TopologyBuilder.SetBolt. The gale.Bolt methods run on the task's
// goroutine; Stats is safe for concurrent use.
type Sink struct {
	cfg Config
	c   sinkCounters

	tc   *gale.TopologyContext
	col  *gale.BoltCollector
	nc   *nats.Conn
	js   njs.JetStream
	wake func()

	// inflight maps each publish waiting for its PubAck to its input.
	// Only the task's goroutine touches it.
	inflight map[*nats.Msg]*gale.Tuple

	// Completions, filled by the client's goroutines, taken by the
	// task's: under mu, and signalled on done (capacity 1).
	mu       sync.Mutex
	finished []completion
	done     chan struct{}
}

type completion struct {
	m   *nats.Msg
	dup bool
	err error
}

// NewSink checks cfg (Config.ValidateSink) and returns a sink for one
// task. Nothing connects until Prepare.
func NewSink(cfg Config) (*Sink, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validateSink(); err != nil {
		return nil, err
	}
	return &Sink{cfg: cfg}, nil
}

// Stats returns a snapshot of the sink's counters. Safe for concurrent
// use.
func (s *Sink) Stats() SinkStats {
	return SinkStats{
		Published:  s.c.published.Load(),
		Acked:      s.c.acked.Load(),
		Duplicates: s.c.duplicates.Load(),
		Failed:     s.c.failed.Load(),
	}
}

// Sinks makes the sink tasks of one component and sums their counters.
// Pass its New method to gale.TopologyBuilder.SetBolt.
type Sinks struct {
	cfg Config
	mu  sync.Mutex
	all []*Sink
}

// NewSinks checks cfg (Config.ValidateSink) and returns the factory.
func NewSinks(cfg Config) (*Sinks, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validateSink(); err != nil {
		return nil, err
	}
	return &Sinks{cfg: cfg}, nil
}

// New makes a sink; it is the factory for TopologyBuilder.SetBolt. Safe
// for concurrent use.
func (g *Sinks) New() gale.Bolt {
	s := &Sink{cfg: g.cfg}
	g.mu.Lock()
	g.all = append(g.all, s)
	g.mu.Unlock()
	return s
}

// Stats sums the counters of every sink New made (in this process). Safe
// for concurrent use.
func (g *Sinks) Stats() SinkStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	var sum SinkStats
	for _, s := range g.all {
		st := s.Stats()
		sum.Published += st.Published
		sum.Acked += st.Acked
		sum.Duplicates += st.Duplicates
		sum.Failed += st.Failed
	}
	return sum
}

// DeclareOutputFields declares nothing: the sink emits no tuples.
func (*Sink) DeclareOutputFields(gale.OutputDeclarer) {}

// Prepare connects and registers the completion handler.
func (s *Sink) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	s.tc, s.col = tc, c
	s.inflight = make(map[*nats.Msg]*gale.Tuple)
	s.done = make(chan struct{}, 1)
	s.wake = c.Wakeup(s.complete)
	nc, err := connect(s.cfg, tc, "sink")
	if err != nil {
		return err
	}
	js, err := njs.New(nc,
		njs.WithPublishAsyncMaxPending(s.cfg.PublishMaxPending),
		njs.WithPublishAsyncTimeout(s.cfg.PublishTimeout),
		njs.WithPublishAsyncAckHandler(func(_ njs.JetStream, m *nats.Msg, pa *njs.PubAck) {
			s.finish(completion{m: m, dup: pa.Duplicate})
		}),
		njs.WithPublishAsyncErrHandler(func(_ njs.JetStream, m *nats.Msg, err error) {
			s.finish(completion{m: m, err: err})
		}),
	)
	if err != nil {
		nc.Close()
		return fmt.Errorf("jetstream: %w", err)
	}
	s.nc, s.js = nc, js
	return nil
}

// finish records a completion; it runs on the client's goroutines.
func (s *Sink) finish(c completion) {
	s.mu.Lock()
	s.finished = append(s.finished, c)
	s.mu.Unlock()
	select {
	case s.done <- struct{}{}:
	default:
	}
	s.wake()
}

// complete acks or fails the inputs whose publishes completed; it runs on
// the task's goroutine.
func (s *Sink) complete() {
	s.mu.Lock()
	fin := s.finished
	s.finished = nil
	s.mu.Unlock()
	for _, c := range fin {
		t, ok := s.inflight[c.m]
		if !ok {
			continue
		}
		delete(s.inflight, c.m)
		if c.err != nil {
			s.c.failed.Add(1)
			s.col.Fail(t, gale.Transient(fmt.Errorf("jetstream: publish to %q: %w", c.m.Subject, c.err)))
			continue
		}
		if c.dup {
			s.c.duplicates.Add(1)
		}
		s.c.acked.Add(1)
		s.col.Ack(t)
	}
}

// Execute publishes the input. At publish.max.pending publishes in flight
// it first waits for completions (or the topology's end).
func (s *Sink) Execute(t *gale.Tuple) {
	m, err := s.message(t)
	if err != nil {
		s.c.failed.Add(1)
		s.col.Fail(t, gale.Permanent(err))
		return
	}
	for len(s.inflight) >= s.cfg.PublishMaxPending {
		select {
		case <-s.done:
			s.complete()
		case <-s.tc.Context().Done():
			s.c.failed.Add(1)
			s.col.Fail(t, gale.Transient(gale.ErrShutdown))
			return
		}
	}
	s.inflight[m] = t
	if _, err := s.js.PublishMsgAsync(m); err != nil {
		delete(s.inflight, m)
		s.c.failed.Add(1)
		s.col.Fail(t, gale.Transient(fmt.Errorf("jetstream: publish to %q: %w", m.Subject, err)))
		return
	}
	s.c.published.Add(1)
}

// message builds the publish for an input tuple.
func (s *Sink) message(t *gale.Tuple) (*nats.Msg, error) {
	subject := s.cfg.Subject
	if s.cfg.SubjectField != "" {
		v, err := field(t, s.cfg.SubjectField)
		if err != nil {
			return nil, err
		}
		str, ok := v.(string)
		if !ok || str == "" {
			return nil, fmt.Errorf("jetstream sink: subject.field %q must be a non-empty string, got %v (%T)", s.cfg.SubjectField, v, v)
		}
		subject = str
	}
	v, err := field(t, s.cfg.DataField)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(subject)
	switch d := v.(type) {
	case []byte:
		m.Data = d
	case string:
		m.Data = []byte(d)
	default:
		return nil, fmt.Errorf("jetstream sink: data.field %q must be []byte or string, got %T", s.cfg.DataField, v)
	}
	if s.cfg.MsgIDField != "" {
		id, err := field(t, s.cfg.MsgIDField)
		if err != nil {
			return nil, err
		}
		m.Header.Set(njs.MsgIDHeader, fmt.Sprint(id))
	}
	if s.cfg.Stream != "" {
		m.Header.Set(njs.ExpectedStreamHeader, s.cfg.Stream)
	}
	return m, nil
}

var errNoField = errors.New("jetstream sink: no such input field")

func field(t *gale.Tuple, name string) (any, error) {
	if !t.Contains(name) {
		return nil, fmt.Errorf("%w %q (the input has %v); set data.field, subject.field or msgid.field to one of its fields", errNoField, name, t.Fields())
	}
	return t.ValueByField(name), nil
}

// Cleanup closes the connection. Inputs still waiting for a PubAck are
// left to the runtime, which fails their trees at shutdown.
func (s *Sink) Cleanup() {
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
}
