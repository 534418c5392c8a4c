// Package coord is Gale's one door to etcd, the coordination store: the
// key layout, the records kept there (topologies, assignments,
// supervisors, nimbuses), leases, watches and leader election, and an
// embedded single-node etcd for `gale dev` and the tests.
//
// Gale writes to etcd only when something changes: a submission, an
// assignment, a status change, a member joining. Membership is a key
// bound to a lease, kept alive by keep-alives, which are not raft
// writes. Heartbeats and counters never come here.
package coord
