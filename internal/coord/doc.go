// Package coord is Gale's one door to etcd, the coordination store: the
// key layout, the records kept there (topologies, assignments,
// supervisors, nimbuses), leases, watches and leader election
// (internal/coord/etcdembed runs a single-node etcd server). No other
// package imports the etcd client, except tests.
//
// Gale writes to etcd only when something changes: a submission, an
// assignment, a status change, a member joining. Membership is a key
// bound to a lease, kept alive by keep-alives, which are not raft
// writes. Heartbeats and counters never come here.
//
// What the caller must do:
//   - Make a client with Dial and a Store with NewStore; Store.Close
//     stops every goroutine the Store started (Changes, memberships,
//     leaderships) and waits for them; close the client after it.
//   - Treat Changes as level-triggered: on each receive, re-read what the
//     prefix holds. A receive means "look again", not "one change".
//   - Hold a Membership for as long as the process is a member, and
//     Close it on the way out: that deletes its key at once, where a
//     crash leaves it to the lease's TTL.
//   - A nimbus campaigns with its membership and stops acting as leader
//     as soon as Leadership.Lost closes, then campaigns again.
//
// Every method is safe for concurrent use.
package coord
