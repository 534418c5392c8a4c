// Package kafka connects topologies to Apache Kafka with franz-go: a
// Spout that reads a consumer group's share of topics, a Sink bolt that
// produces its input, and a dead-letter sink to a topic.
//
// A topology adds them through their factories, which validate the
// configuration once and sum the statistics of the tasks they make:
//
//	spouts, err := kafka.NewSpouts(kafka.Config{BootstrapServers: addrs, Topic: "orders", GroupID: "billing"})
//	...
//	b.SetSpout("orders", spouts.New, 4)
//	sinks, err := kafka.NewSinks(kafka.Config{BootstrapServers: addrs, Topic: "invoices"})
//	...
//	b.SetBolt("invoices", sinks.New, 2).ShuffleGrouping("bill")
//
// # Spout
//
// Each spout task is a member of the consumer group group.id; Kafka
// spreads the topics' partitions over the tasks of every topology with
// that group, and moves them when a member joins or leaves. Offsets are
// committed to Kafka, never elsewhere. A task emits each record as the
// tuple (key, value, topic, partition, offset) — Fields; key and value are
// []byte, or string with key.format / value.format "string"; partition
// is an int32 and offset an int64.
//
// The processing guarantee (processing.guarantee) is Storm's KafkaSpout's:
//
//   - at-least-once (the default): every tuple is tracked. Per partition
//     the spout commits the contiguous prefix of acked records — the
//     offset after it — every offset.commit.period.ms and when the
//     partition is revoked; a record acked after one still in flight
//     waits for it. A failed tuple is kept in memory and re-emitted by
//     the retry policy (retry.* keys): with backoff, sharing the emits
//     with new records so a failure storm never starves them
//     (retry.retries.per.new), and given up when the failure is
//     permanent (gale.Permanent) or the attempts are spent. A given-up
//     record is sent to the dead-letter sink first (deadletter.file,
//     deadletter.topic, or a sink of the program's own: Config.DeadLetters)
//     and only then counted as acked, so a poison message never stalls
//     its partition and a crash between the two leaves a duplicate
//     letter, never a lost record. The letters waiting are sent together,
//     in batches (retry.BatchSink: one fsync, one produce round trip, one
//     wait for the acks a batch), and keep the record's headers exactly:
//     every one, in order, a repeated key repeated, bytes as bytes, a
//     null value null (retry.Headers). After a crash, the partitions'
//     next owners read again from the committed offsets: records are
//     processed at least once, some twice (see Duplicates, below). With no dead-letter sink configured,
//     nothing is given up for running out of attempts (a record is
//     retried until acked: a poison message then holds its partition's
//     commit back), and a permanent failure is logged at error level,
//     with the record, and committed. A tree failed because the topology
//     stopped (gale.ErrShutdown) costs no attempt: its record is left
//     uncommitted for the next owner.
//   - at-most-once: each polled batch is committed before any of it is
//     emitted, and tuples are not tracked (no acks, no retries).
//   - no-guarantee: tuples are not tracked; what was emitted is committed
//     periodically.
//
// A revoked partition is committed (its acked prefix) and forgotten:
// records fetched from it and not yet emitted are dropped, its retries
// forgotten, and acks that arrive later for it commit nothing; its new
// owner reads again from the committed offset. max.uncommitted.offsets
// caps the records of one partition held open: emitted and not finished
// (in flight, waiting for a retry or for the dead-letter sink) or fetched
// and not yet emitted. Fetching from the partition pauses at the cap and
// resumes as records finish, so a failure storm bounds memory rather than
// grow it. Records finished behind an open one do not count (the spout
// keeps nothing for them), so one record waiting out its backoff, or its
// dead letter, never stops new records at the default cap.
//
// # Duplicates
//
// Each commit's metadata (Kafka's per-partition commit metadata, under
// its default 4096 bytes) names the offsets still open past the committed
// one, up to the newest emitted. A partition's next owner reads it with
// the committed offset and skips the records of that range that had
// finished (Stats().Skipped). So what a crash or a rebalance makes the
// topology process again is bounded, per partition, by
//
//	the records open at the last commit (in flight: at most
//	topology.max.spout.pending per spout task; or waiting for a retry)
//	+ the records emitted since it (offset.commit.period's worth)
//
// and, past about 1,200 open records in a partition, the range beyond
// the ones the metadata can hold. The trees in flight through a killed
// worker fail at their message timeout and are emitted again: they are
// the first term. `gale bench kafka --mode kill` measures the duplicates
// of a worker killed mid-stream against this bound (docs/performance.md).
// Another consumer of the group ignores the metadata and reads again
// everything from the committed offset.
//
// A failed commit (the broker refused it, or it timed out) is logged and
// counted in Stats().CommitFailures and retried at the next period; it
// never stops the topology. Progress (gale.ProgressReporter, what the
// max-spout-pending auto-tuner reads) is, under at-least-once, the
// records finished (acked, or dead-lettered), each once, as they finish:
// not the committed offsets, which move only at each commit and so
// alias with the tuner's interval. Stats has the counters: emitted,
// acked, failed, retries and dead-lettered, committed offsets, commit
// failures, skipped records and the consumer lag per partition.
//
// NextTuple never waits for the broker: goroutines the spout owns (from
// Open to Close) fetch, handing records over a bounded queue, commit, and
// send dead letters. Under at-most-once the fetching goroutine waits for
// each batch's commit before handing it on.
//
// # Sink
//
// Sink produces each input tuple's value.field (and key.field, if the
// input has it) to topic with franz-go's idempotent producer, and acks the
// input only once the brokers acknowledged the record; it fails the input
// (transient) if the produce fails or does not complete within
// delivery.timeout.ms. At most max.buffered.records records are
// outstanding; Execute blocks beyond.
//
// # Configuration
//
// Config is plain data. ParseConfig reads its map form (Map writes it, and
// Config's JSON encoding is that form), whose keys are:
//
//	bootstrap.servers        brokers, host:port (list or comma-separated); required
//	topic                    spout: topics (comma-separated); sink: the topic; required
//	group.id                 the spout's consumer group; required by the spout
//	client.id                default gale
//	processing.guarantee     at-least-once (default), at-most-once, no-guarantee
//	auto.offset.reset        earliest (default) or latest, for a partition with no commit
//	max.uncommitted.offsets  per partition, open records; default 10000
//	max.poll.records         records handed over per poll, default 500
//	offset.commit.period.ms  default 1000
//	fetch.max.wait.ms        default 500
//	session.timeout.ms       consumer group session, default 10000
//	heartbeat.interval.ms    default 3000
//	key.format, value.format bytes (default) or string
//	retry.*                  the retry policy (retry.ParsePolicy)
//	deadletter.file          JSONL file for given-up records (retry.OpenFile)
//	deadletter.topic         topic for given-up records (DeadLetterTopic)
//	max.buffered.records     sink: outstanding records, default 10000
//	delivery.timeout.ms      sink: default 30000
//	key.field, value.field   sink: input fields, default key and value
package kafka
