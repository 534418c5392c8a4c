package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gale-stream/gale"
)

// Sink is a gale.Bolt producing each input tuple as a record to one
// topic with franz-go's idempotent producer. It acks an input only once
// the brokers acknowledged its record (all in-sync replicas), and fails it
// as transient if the produce failed or did not complete within
// delivery.timeout.ms, so the spout retries it. An input without the
// value field, or with a key or value that is neither []byte nor string,
// is failed as permanent. Execute blocks while max.buffered.records
// records are outstanding. Make it with NewSink or NewSinks.
//
// Its gale.Bolt methods are called on the task's goroutine; Stats is safe
// for concurrent use.
type Sink struct {
	cfg  Config
	coll *gale.BoltCollector
	log  *slog.Logger
	cl   *kgo.Client
	ctx  context.Context
	wake func()

	produced, acked, failed atomic.Int64

	mu struct {
		sync.Mutex
		done []produced // completed, not yet acked or failed; ≤ the records outstanding
	}
	spare []produced
}

type produced struct {
	t   *gale.Tuple
	err error
}

// NewSink validates cfg (Config.ValidateSink) and returns a sink, one
// task's instance.
func NewSink(cfg Config) (*Sink, error) {
	if err := cfg.ValidateSink(); err != nil {
		return nil, err
	}
	return &Sink{cfg: cfg.withDefaults()}, nil
}

// DeclareOutputFields declares nothing: the sink is the end of its trees.
func (*Sink) DeclareOutputFields(gale.OutputDeclarer) {}

// Prepare creates the producer.
func (k *Sink) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	k.coll, k.ctx = c, tc.Context()
	k.log = tc.Logger().With("component", "kafka-sink", "topic", k.cfg.Topic)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(k.cfg.BootstrapServers...),
		kgo.ClientID(k.cfg.ClientID),
		kgo.WithLogger(kgoLogger{k.log}),
		kgo.DefaultProduceTopic(k.cfg.topics()[0]),
		kgo.MaxBufferedRecords(k.cfg.MaxBufferedRecords),
		kgo.RecordDeliveryTimeout(k.cfg.DeliveryTimeout),
	)
	if err != nil {
		return fmt.Errorf("kafka sink: %w", err)
	}
	k.cl = cl
	k.wake = c.Wakeup(k.complete)
	return nil
}

// Execute produces the input's record; the input is acked or failed once
// the brokers answered.
func (k *Sink) Execute(t *gale.Tuple) {
	if t.IsTick() {
		return
	}
	rec, err := k.record(t)
	if err != nil {
		k.failed.Add(1)
		k.coll.Fail(t, gale.Permanent(err))
		return
	}
	k.produced.Add(1)
	k.cl.Produce(k.ctx, rec, func(_ *kgo.Record, err error) {
		k.mu.Lock()
		k.mu.done = append(k.mu.done, produced{t, err})
		k.mu.Unlock()
		k.wake()
	})
}

// record builds the record of t.
func (k *Sink) record(t *gale.Tuple) (*kgo.Record, error) {
	i := t.FieldIndex(k.cfg.ValueField)
	if i < 0 {
		return nil, fmt.Errorf("kafka sink: the input from %s has no field %q (value.field); its fields are %q", t.SourceComponent(), k.cfg.ValueField, t.Fields())
	}
	val, err := bytesOf(t.Value(i), k.cfg.ValueField)
	if err != nil {
		return nil, err
	}
	rec := &kgo.Record{Value: val}
	if j := t.FieldIndex(k.cfg.KeyField); j >= 0 {
		if rec.Key, err = bytesOf(t.Value(j), k.cfg.KeyField); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

func bytesOf(v any, field string) ([]byte, error) {
	switch x := v.(type) {
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("kafka sink: field %q is a %T; the sink produces []byte or string", field, v)
}

// complete acks or fails the inputs whose records completed; it runs on
// the task's goroutine (BoltCollector.Wakeup).
func (k *Sink) complete() {
	k.mu.Lock()
	done := k.mu.done
	k.mu.done = k.spare[:0]
	k.mu.Unlock()
	for i, p := range done {
		if p.err == nil {
			k.acked.Add(1)
			k.coll.Ack(p.t)
		} else {
			k.failed.Add(1)
			if !errors.Is(p.err, context.Canceled) {
				k.log.Warn("produce failed; the input is failed for a retry", "err", p.err)
			}
			k.coll.Fail(p.t, gale.Transient(fmt.Errorf("kafka sink: produce to %s: %w", k.cfg.Topic, p.err)))
		}
		done[i] = produced{}
	}
	k.spare = done
}

// Cleanup waits (up to delivery.timeout.ms) for the records outstanding,
// then closes the producer.
func (k *Sink) Cleanup() {
	if k.cl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.cfg.DeliveryTimeout)
	if err := k.cl.Flush(ctx); err != nil {
		k.log.Warn("records still outstanding at shutdown", "err", err)
	}
	cancel()
	k.cl.Close()
}

// SinkStats is a snapshot of a sink's counters.
type SinkStats struct {
	Produced int64 // records handed to the producer
	Acked    int64 // inputs acked: their records acknowledged by the brokers
	Failed   int64 // inputs failed
}

// Stats returns a snapshot of the sink's counters. Safe for concurrent use.
func (k *Sink) Stats() SinkStats {
	return SinkStats{Produced: k.produced.Load(), Acked: k.acked.Load(), Failed: k.failed.Load()}
}

// Sinks makes the sink tasks of one component and sums their statistics.
// Pass its New method to gale.TopologyBuilder.SetBolt.
type Sinks struct {
	cfg Config
	mu  sync.Mutex
	all []*Sink
}

// NewSinks validates cfg (Config.ValidateSink) and returns the factory.
func NewSinks(cfg Config) (*Sinks, error) {
	if err := cfg.ValidateSink(); err != nil {
		return nil, err
	}
	return &Sinks{cfg: cfg}, nil
}

// New makes a sink; it is the factory for TopologyBuilder.SetBolt. Safe
// for concurrent use.
func (g *Sinks) New() gale.Bolt {
	k, err := NewSink(g.cfg)
	if err != nil {
		panic(err) // validated by NewSinks
	}
	g.mu.Lock()
	g.all = append(g.all, k)
	g.mu.Unlock()
	return k
}

// Stats sums the statistics of every sink New made.
func (g *Sinks) Stats() SinkStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	var st SinkStats
	for _, k := range g.all {
		s := k.Stats()
		st.Produced += s.Produced
		st.Acked += s.Acked
		st.Failed += s.Failed
	}
	return st
}

var _ gale.Bolt = (*Sink)(nil)
