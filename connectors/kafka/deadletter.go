package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gale-stream/gale/retry"
)

// DeadLetterTopic is a retry.DeadLetterSink producing each letter to a
// Kafka topic: the letter as JSON (retry.DeadLetter's encoding, key and
// value in base64) in the record's value, the given-up record's key as
// the record's key, so that a compacted or keyed topic keeps per-key
// order, and its headers (retry.Headers: every one, in order, a null
// value kept null) both in the letter and as the record's headers. Send
// returns once the brokers acknowledged the record; SendBatch
// (retry.BatchSink) produces many at once. Safe for concurrent use.
type DeadLetterTopic struct {
	cl    *kgo.Client
	topic string
	owned bool
}

// NewDeadLetterTopic returns a sink producing to topic with cl, which the
// caller keeps and closes (the spout passes its own client).
func NewDeadLetterTopic(cl *kgo.Client, topic string) *DeadLetterTopic {
	return &DeadLetterTopic{cl: cl, topic: topic}
}

// OpenDeadLetterTopic returns a sink with its own client (the idempotent
// producer) for the brokers of cfg.BootstrapServers and the topic
// cfg.DeadLetterTopic; Close closes the client.
func OpenDeadLetterTopic(cfg Config) (*DeadLetterTopic, error) {
	cfg = cfg.withDefaults()
	if cfg.DeadLetterTopic == "" {
		return nil, fmt.Errorf("kafka: deadletter.topic is empty; name the topic dead letters go to")
	}
	if len(cfg.BootstrapServers) == 0 {
		return nil, fmt.Errorf("kafka: bootstrap.servers is empty; set it to the brokers' host:port addresses")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.BootstrapServers...), kgo.ClientID(cfg.ClientID))
	if err != nil {
		return nil, fmt.Errorf("kafka dead-letter topic: %w", err)
	}
	return &DeadLetterTopic{cl: cl, topic: cfg.DeadLetterTopic, owned: true}, nil
}

// Send produces l and waits for the brokers' acknowledgement.
func (d *DeadLetterTopic) Send(ctx context.Context, l retry.DeadLetter) error {
	return d.SendBatch(ctx, []retry.DeadLetter{l})
}

// SendBatch produces every letter of ls at once and waits until the
// brokers acknowledged them all (retry.BatchSink); the error is the first
// one's.
func (d *DeadLetterTopic) SendBatch(ctx context.Context, ls []retry.DeadLetter) error {
	recs := make([]*kgo.Record, len(ls))
	for i, l := range ls {
		b, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("kafka dead-letter topic: encode %s: %w", l.Source, err)
		}
		recs[i] = &kgo.Record{Topic: d.topic, Key: l.Key, Value: b, Headers: recordHeaders(l.Headers)}
	}
	for i, r := range d.cl.ProduceSync(ctx, recs...) {
		if r.Err != nil {
			return fmt.Errorf("kafka dead-letter topic %s: produce %s: %w", d.topic, ls[i].Source, r.Err)
		}
	}
	return nil
}

// recordHeaders are the given-up record's headers, for its letter's
// record too: a tool that replays the topic finds them where Kafka puts
// them, as well as in the letter.
func recordHeaders(hs retry.Headers) []kgo.RecordHeader {
	if len(hs) == 0 {
		return nil
	}
	out := make([]kgo.RecordHeader, len(hs))
	for i, h := range hs {
		out[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
	}
	return out
}

// Close closes the client if OpenDeadLetterTopic made it.
func (d *DeadLetterTopic) Close() error {
	if d.owned {
		d.cl.Close()
	}
	return nil
}

// logSink is the dead-letter sink of a spout configured with none: the
// letter is logged at error level, and so is never lost from view.
type logSink struct{ log *slog.Logger }

func (s logSink) Send(_ context.Context, l retry.DeadLetter) error {
	s.log.Error("record given up (no deadletter.file or deadletter.topic configured)",
		"source", l.Source, "attempts", l.Attempts, "class", l.Class, "last_error", l.LastError,
		"key", string(l.Key), "value", string(l.Value))
	return nil
}

func (logSink) Close() error { return nil }

var _ retry.BatchSink = (*DeadLetterTopic)(nil)

// kgoLogger routes franz-go's warnings and errors to slog.
type kgoLogger struct{ log *slog.Logger }

func (kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelWarn
	if level == kgo.LogLevelError {
		lv = slog.LevelError
	}
	l.log.Log(context.Background(), lv, "franz-go: "+msg, keyvals...)
}
