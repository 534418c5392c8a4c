// Package coordination is `gale bench coordination`: the paper's ZooKeeper
// experiment, heartbeats and all, at internet scale by simulation. A real
// etcd and a real nimbus, each a process of its own, face S simulated
// supervisors in this process. Each supervisor holds its own etcd lease
// and membership, as a real one does, and sends its summary of its W
// workers to the nimbus leader over the real Report RPC; none of them
// runs a worker.
//
// Run goes through four phases and measures each:
//
//  1. join: every supervisor takes a lease and puts its membership;
//  2. schedule: a topology of Config.TopologyWorkers workers is
//     submitted and nimbus assigns it (then a filler topology takes
//     every other slot but one supervisor's worth, so that the reports
//     carry a worker for nearly every slot);
//  3. steady state: for Config.Steady, etcd's raft index and revision,
//     nimbus's CPU (from /proc, Linux only), the reports and their bytes;
//  4. detection: one supervisor holding the topology's workers stops its
//     keep-alives and reports, as if its machine died, and Run measures
//     until its lease expires and until nimbus writes the assignment that
//     moves its workers.
//
// The caller gives Config.Exe, a gale binary with the etcd and nimbus
// subcommands; Run starts both as child processes and stops them before
// it returns.
package coordination
