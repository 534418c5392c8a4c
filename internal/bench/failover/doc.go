// Package failover is the workload of `gale bench failover`, the paper's
// machine-loss experiment: a hold-and-ack queue (Queue, served over TCP
// by Server) that lives in the bench's process, outside every worker, as
// the paper's Kestrel queue lives outside Storm, and the word count whose
// spouts take their sentences from it (Build, Spout).
//
// Because the queue, not the topology, keeps what is not acked yet, the
// bench can say what a lost machine cost: a message is replayed when its
// tree fails, when its spout's connection closes (the spout's worker
// died) or when its lease expires, and it is lost if it is never acked.
//
// The caller makes a Server with Listen, submits the topology built by
// Build with the server's Addr as parameter queue, calls Produce(true),
// reads Sample each second, and at the end calls Produce(false), waits
// for Sample().Unacked to reach 0 (the drain) and calls Close.
package failover
