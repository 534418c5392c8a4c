// Package kafka is the workload of `gale bench kafka`, the paper's
// three experiments, and the topology of the Kafka crash tests.
//
// The bench (Run) starts a Kafka broker (franz-go's kfake, ServeBroker)
// in a child process of the same binary, so that the CPU it spends
// serving fetches is not counted as the consumer's; produces events,
// small JSON documents with unique ids (AppendEvent), to one topic; and
// reads them back in each mode, each from the topic's start in a
// consumer group of its own, measuring this process's CPU over the
// consuming phase only:
//
//   - plain: a bare franz-go consumer loop (ConsumePlain), the paper's
//     program without Storm;
//   - noack: the topology of the Kafka spout (connectors/kafka,
//     no-guarantee) → Decode, with no ackers;
//   - ack: the same with the spout at-least-once and an acker.
//
// In every mode the decoding step is DecodeID (encoding/json) and the
// ids it saw are counted in a Tally: an id never seen is lost, a second
// sighting a duplicate.
//
// The crash tests' topology, bench-kafka (Build), is the Kafka spout →
// Decode → the Kafka sink, writing each event to an output topic, where
// Output counts what was processed from outside every worker.
package kafka
