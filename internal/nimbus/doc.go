// Package nimbus is Gale's master: the gRPC API of internal/nimbuspb, leader
// election, scheduling and the artifacts' replication between nimbuses.
//
// Nimbus is stateless and fail-fast: the topologies, their status and
// their assignments live in etcd (through internal/coord), the artifacts
// in a local blobstore that every nimbus replicates. Killing a nimbus at
// any moment loses nothing: an operation with a wait (a kill, a
// rebalance) is recorded in the topology's record with its deadline, and
// whichever nimbus leads next finishes it.
//
// Every nimbus joins as a member and serves the reads (List, Get,
// ClusterInfo, and Download of the artifacts it holds). A standby
// downloads every artifact it lacks from a nimbus that holds it and
// campaigns for leadership only once it holds them all; a leader that
// finds an artifact missing when it wins says which and resigns. Only
// the leader schedules and serves the mutating calls; a standby refuses
// them with codes.FailedPrecondition naming the leader.
//
// The caller makes a Nimbus with New and runs it with Run, once; Run
// returns when its context is cancelled, after stopping in order: the
// API stops accepting calls, the leadership is resigned, the membership
// closed.
package nimbus
