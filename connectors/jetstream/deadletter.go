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
// holds the first. Safe for concurrent use.
type DeadLetterSink struct {
	js      njs.JetStream
	subject string
}

var _ retry.DeadLetterSink = (*DeadLetterSink)(nil)

// NewDeadLetterSink returns a sink publishing to subject through js. The
// caller owns js's connection: Close does not close it.
func NewDeadLetterSink(js njs.JetStream, subject string) *DeadLetterSink {
	return &DeadLetterSink{js: js, subject: subject}
}

// Send publishes l and waits for the stream to store it, or for ctx.
func (d *DeadLetterSink) Send(ctx context.Context, l retry.DeadLetter) error {
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
