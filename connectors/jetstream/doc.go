// Package jetstream connects topologies to NATS JetStream: a Spout that
// reads a stream with hold-and-ack semantics, a Sink bolt that publishes
// tuples and acks them once stored, and a DeadLetterSink that publishes
// given-up messages to a subject.
//
// # Spout
//
// The spout reads through a durable pull consumer (Config.Consumer), which
// it creates or updates in Open with explicit acks, ack.wait,
// max.ack.pending and filter.subject, and no MaxDeliver of the server's
// own: the spout decides when to give up. Several tasks of one spout share
// the consumer; a new topology on the same consumer carries on where the
// old one stopped.
//
// What it guarantees, at least once:
//
//   - A message is acked when its tuple tree completes, never before. Until
//     then the server holds it unacked; a crash or a kill leaves it
//     there, and the server delivers it again after ack.wait (a shutdown
//     gives back what it can at once, with a negative ack, so a restart
//     gets it without waiting). A tree cut by a shutdown is not the
//     message's failure and is not counted as one, but the server counts
//     the delivery, so it uses up one of the message's
//     retry.max.attempts.
//   - A failed tree is negative-acked with the retry policy's delay
//     (retry.Policy.Backoff of the deliveries so far, which the server
//     counts: NumDelivered; for a delayable failure no sooner than the
//     delay it names), and the server delivers it again after it. The
//     server may deliver later than asked: it postpones its redelivery
//     timer while negative acks keep arriving.
//   - A permanent failure (gale.Permanent), or a failure of the last of
//     retry.max.attempts deliveries, is given up: its dead letter is sent
//     first (deadletter.file, deadletter.subject, or a sink of the
//     program's own: Config.DeadLetters), and only once stored
//     is the message terminated. With no dead-letter sink configured,
//     nothing is given up for running out of attempts (the message is
//     retried until acked, at most retry.max.delay.ms apart), and a
//     permanent failure is logged at error level, with the message, and
//     terminated. Letters
//     are sent in order by a goroutine the spout owns, so the spout never
//     waits for the sink, in batches of every letter waiting
//     (retry.BatchSink: one fsync, or one wait for the PubAcks of a
//     batch published at once); a batch that fails keeps its messages
//     (their ack.wait extended) and is sent again after the policy's
//     backoff. A letter keeps the message's headers exactly
//     (retry.Headers): every value of every key, in order, the keys
//     sorted (a nats.Header is a map). A
//     crash between the send and the termination leaves a duplicate dead
//     letter, not a lost message (a letter to a subject carries the
//     Nats-Msg-Id "deadletter:" + its source, so the stream's duplicate
//     window drops the copy).
//   - Redeliveries and new messages share the emits by the policy's fair
//     share: while new messages wait, at most retry.retries.per.new
//     redeliveries go in a row. This is retry.Tracker's counting, applied
//     to the redeliveries the server schedules (the spout keeps no retry
//     queue of its own, so it does not use a Tracker). The share works on
//     what the spout holds, so max.ack.pending must leave room for new
//     messages beside the ones failing at once: every message the server
//     waits to redeliver counts against it.
//
// Fetching runs on a goroutine the spout starts in Open and stops (and
// waits for) in Close, as does sending dead letters; it hands messages over through a bounded queue, and
// max.ack.pending bounds everything the spout holds. ack.wait must be
// longer than topology.message.timeout.secs (Open fails otherwise; unset,
// it is twice the timeout); messages held for a quarter of it, waiting to
// be emitted or in flight, have it extended. Progress (the
// gale.ProgressReporter the max-spout-pending auto-tuner reads) is the
// number of acks sent, counted as each is sent: for a hold-and-ack queue
// an ack is a message never delivered again, and the count moves with
// the acks themselves, with no period of its own to alias with the
// tuner's interval (as the Kafka spout's committed offsets did).
//
// The spout's default stream has the fields FieldSubject (string),
// FieldData ([]byte), FieldSequence (uint64, the stream sequence) and
// FieldAttempt (int, 1 for the first delivery). Downstream must be
// idempotent: a message may be processed more than once, and retries are
// not in order.
//
// # Sink
//
// The Sink bolt publishes each input with PublishAsync and acks it when the
// PubAck arrives, on the task's goroutine (gale.BoltCollector.Wakeup); a
// publish that fails or gets no PubAck in publish.timeout.ms fails the
// input as transient, an input without a usable field as permanent. With
// msgid.field the message carries a Nats-Msg-Id, and the stream's
// duplicate window stores a replayed tuple once. At most
// publish.max.pending publishes wait for their PubAck.
//
// # Configuration
//
// Config is plain data; ParseConfig reads its map form, where durations
// are integers of milliseconds. Keys:
//
//	url                  servers, comma-separated (default nats://127.0.0.1:4222)    both
//	connection.name      the client's name on the server (default topology/component[task])  both
//	stream               the stream to read (required); for the sink, the stream a publish must land in  both
//	consumer             the durable consumer's name (required)                       spout
//	filter.subject       only the stream's subjects matching it                       spout
//	ack.wait.ms          server's wait for an ack before redelivering (default 2 × the message timeout)  spout
//	max.ack.pending      messages delivered and not yet acked, at most (default 1000)  spout
//	fetch.max.wait.ms    how long one pull stays open (default 500)                   spout
//	deadletter.file      JSONL file for given-up messages (retry.OpenFile)            spout
//	deadletter.subject   subject for given-up messages, as JSON                       spout
//	retry.*              the retry policy (retry.ParsePolicy)                         spout
//	subject              the subject to publish to                                    sink
//	subject.field        the input field holding each tuple's subject                 sink
//	data.field           the input field holding the body (default "data")            sink
//	msgid.field          the input field whose value is the Nats-Msg-Id               sink
//	publish.max.pending  publishes waiting for their PubAck, at most (default 256)    sink
//	publish.timeout.ms   wait for a PubAck before failing the input (default 5000)    sink
//
// A topology adds them through their factories, which check the
// configuration once (Config.ValidateSpout, Config.ValidateSink) and sum
// the counters of the tasks they make:
//
//	spouts, err := jetstream.NewSpouts(jetstream.Config{URL: url, Stream: "ORDERS", Consumer: "billing"})
//	...
//	b.SetSpout("orders", spouts.New, 2)
//	sinks, err := jetstream.NewSinks(jetstream.Config{URL: url, Subject: "invoices.new"})
//	...
//	b.SetBolt("invoices", sinks.New, 2).ShuffleGrouping("bill")
//
// spouts.Stats() then counts what the spout tasks in this process did:
// emitted (new and redelivered), acked, negative-acked, retries,
// terminated, dead-lettered, failures by class.
package jetstream
