package jetstream

import (
	"context"
	"encoding/json"
	"fmt"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/gale-stream/gale/retry"
)

// DeadLetterSink publishes dead letters to a subject, as JSON
// (retry.DeadLetter's encoding), and waits for the stream that captures
// the subject to store each: Send returns nil only after the PubAck, so a
// spout that terminates its source message after Send cannot lose it. A
// subject no stream captures makes Send fail.
//
// Each letter carries the Nats-Msg-Id "deadletter:" + its Source, so a
// letter sent again after a crash (between the send and the source's
// termination) is stored once if the stream's duplicate window still
// holds the first. The letter keeps the message's headers exactly
// (retry.Headers). SendBatch (retry.BatchSink) publishes many letters and
// waits for their acks together. Safe for concurrent use.
type DeadLetterSink struct {
	js      njs.JetStream
	subject string
}

var _ retry.BatchSink = (*DeadLetterSink)(nil)

// NewDeadLetterSink returns a sink publishing to subject through js. The
// caller owns js's connection: Close does not close it.
func NewDeadLetterSink(js njs.JetStream, subject string) *DeadLetterSink {
	return &DeadLetterSink{js: js, subject: subject}
}

// Send publishes l and waits for the stream to store it, or for ctx.
func (d *DeadLetterSink) Send(ctx context.Context, l retry.DeadLetter) error {
	return d.SendBatch(ctx, []retry.DeadLetter{l})
}

// SendBatch publishes every letter of ls without waiting between them and
// then waits until the stream stored them all, or for ctx
// (retry.BatchSink); the error is the first letter's that failed.
func (d *DeadLetterSink) SendBatch(ctx context.Context, ls []retry.DeadLetter) error {
	if len(ls) == 1 {
		return d.publish(ctx, ls[0])
	}
	futures := make([]njs.PubAckFuture, len(ls))
	for i, l := range ls {
		data, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("jetstream: encode dead letter for %s: %w", l.Source, err)
		}
		if futures[i], err = d.js.PublishAsync(d.subject, data, njs.WithMsgID("deadletter:"+l.Source)); err != nil {
			return fmt.Errorf("jetstream: publish dead letter for %s to %q: %w", l.Source, d.subject, err)
		}
	}
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("jetstream: publish dead letter for %s to %q: %w", ls[i].Source, d.subject, err)
		case <-ctx.Done():
			return fmt.Errorf("jetstream: publish dead letter for %s to %q: %w", ls[i].Source, d.subject, ctx.Err())
		}
	}
	return nil
}

func (d *DeadLetterSink) publish(ctx context.Context, l retry.DeadLetter) error {
	data, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("jetstream: encode dead letter for %s: %w", l.Source, err)
	}
	if _, err := d.js.Publish(ctx, d.subject, data, njs.WithMsgID("deadletter:"+l.Source)); err != nil {
		return fmt.Errorf("jetstream: publish dead letter for %s to %q: %w", l.Source, d.subject, err)
	}
	return nil
}

// Close does nothing: the connection is the caller's.
func (d *DeadLetterSink) Close() error { return nil }
