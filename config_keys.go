package gale

// Configuration keys a topology sets, in its config (StartLocal, RunLocal,
// `gale submit`) or per component (SpoutDeclarer.AddConfiguration,
// BoltDeclarer.AddConfiguration, ComponentConfigurer). The names and
// meanings are Storm's where Storm has the key; Gale's own are documented
// as Gale-specific. docs/config.md lists every key with its type, default
// and scope, the cluster's keys (set in gale.yaml) included.
const (
	// TopologyWorkers is the number of worker processes for a topology
	// (int, default 1, ≥ 1).
	TopologyWorkers = "topology.workers"
	// TopologyMessageTimeoutSecs is the time a tuple tree has to complete
	// before the spout is told it failed (int, default 30, ≥ 1).
	TopologyMessageTimeoutSecs = "topology.message.timeout.secs"
	// TopologyMaxSpoutPending caps the tuple trees in flight per spout task
	// (int, default unset = no cap, ≥ 1). May be set per component.
	TopologyMaxSpoutPending = "topology.max.spout.pending"
	// TopologyMaxSpoutPendingAutotune is Gale-specific: the spout's
	// executors choose topology.max.spout.pending themselves with the
	// auto-tuner Twitter ran on Storm (internal/autotune), starting from
	// the key's value if set, else from 1000, and moving it every
	// TopologyMaxSpoutPendingAutotuneIntervalSecs by the spout's progress
	// over the interval: its trees acked, or what a spout that implements
	// ProgressReporter reports (for Kafka the records finished, each once;
	// for JetStream the acks sent). Each change is logged and the value shows in the
	// spout's counters. It has no effect with acking off (bool, default
	// false). May be set per component.
	TopologyMaxSpoutPendingAutotune = "topology.max.spout.pending.autotune"
	// TopologyMaxSpoutPendingAutotuneIntervalSecs is Gale-specific: the
	// seconds between the auto-tuner's steps (int, default unset = the
	// message timeout, topology.message.timeout.secs, ≥ 1). Trees that a
	// too-large value queues time out a message timeout after they were
	// emitted, so an interval that long sees the cost of a step in the
	// next interval's progress; the paper's 120 s is four of Storm's
	// default timeouts, and at 25% a step the climb from 1 to 1000 takes
	// some 30 steps: an hour at 120 s, a quarter of one at 30 s. May be set
	// per component.
	TopologyMaxSpoutPendingAutotuneIntervalSecs = "topology.max.spout.pending.autotune.interval.secs"
	// TopologyAckerExecutors turns acking off when 0: tuples are acked as
	// soon as they are emitted (int ≥ 0, default unset = on). Any other
	// value turns it on; unlike Storm, Gale runs no acker executors, since
	// each spout task keeps the XOR ledger of its own trees.
	TopologyAckerExecutors = "topology.acker.executors"
	// TopologyTickTupleFreqSecs makes Gale send a tick tuple (stream "__tick"
	// from component "__system") to each bolt every so many seconds (int,
	// default unset = no ticks, ≥ 1). May be set per component, or by the
	// bolt itself (ComponentConfigurer). As in Storm, a tick joins the
	// executor's input: it is delivered after the tuples queued before it,
	// never ahead of them.
	TopologyTickTupleFreqSecs = "topology.tick.tuple.freq.secs"
	// TopologyExecutorReceiveBufferSize is the capacity, in tuples, of each
	// executor's input queue (int, default 1024, ≥ 1). Storm's default is
	// 32768; Gale's queues move batches, so a smaller queue keeps the same
	// throughput with less memory and less queueing delay under overload.
	TopologyExecutorReceiveBufferSize = "topology.executor.receive.buffer.size"
	// TopologyTransferBufferSize is, in Gale, the capacity in frames of the
	// queue to each peer worker: the frames a worker's executors have
	// encoded for the peer and its connection has not yet written, each a
	// batch of up to TopologyProducerBatchSize tuples (int, default 256,
	// ≥ 1). A full queue blocks the executor sending to that peer, as a
	// full executor queue does. Storm's key counts the tuples of one queue
	// per worker, default 1000.
	TopologyTransferBufferSize = "topology.transfer.buffer.size"
	// TopologyProducerBatchSize is, in Gale, the most tuples a producer puts
	// on a queue in one batch (int, default 100, ≥ 1).
	TopologyProducerBatchSize = "topology.producer.batch.size"
	// TopologyDebug logs every emitted tuple, at INFO, with the emitting
	// component, task, stream, values and target tasks (bool, default
	// false). `gale run` shows these lines although it logs from WARN.
	// May be set per component.
	TopologyDebug = "topology.debug"
	// TopologyMaxTaskParallelism caps the executors and tasks of each
	// component (int, default unset = no cap, ≥ 1). May be set per component.
	TopologyMaxTaskParallelism = "topology.max.task.parallelism"
	// TopologyName is the topology's name (string), as
	// TopologyContext.TopologyName gives it. It is read-only: Gale sets
	// it when the topology starts, and no configuration layer may set it.
	TopologyName = "topology.name"
	// TopologyShutdownDrainTimeoutSecs is Gale-specific: on kill or
	// shutdown, how long a worker waits for in-flight tuple trees to
	// complete after its spouts are deactivated, before it closes its
	// transport (int, default 5, ≥ 0; 0 = do not wait).
	TopologyShutdownDrainTimeoutSecs = "topology.shutdown.drain.timeout.secs"
	// TopologyComponentPanicPolicy is Gale-specific: what happens when a
	// spout or bolt panics (string, default PanicPolicyFailTuple). May be
	// set per component.
	TopologyComponentPanicPolicy = "topology.component.panic.policy"
	// TopologyTupleReuse is Gale-specific, per bolt: the bolt promises not
	// to use a tuple it received (nor the slice Values returned) after
	// acking or failing it, or, for a basic bolt, after Execute returns;
	// the runtime then reuses the tuple's memory for later emits, as
	// Flink's object reuse does (bool, default false). Values themselves
	// (strings, slices) are never reused, so what a bolt copied out of a
	// tuple stays valid. It cut the bench's allocation per sentence from
	// 800 to 217 bytes (docs/performance.md). galetest checks the promise:
	// there the tuples are poisoned instead of reused, so a bolt that
	// breaks it panics (galetest.Options.RecycleTuples turns that off).
	TopologyTupleReuse = "topology.tuple.reuse"
	// TopologyTestingAlwaysTrySerialize makes every emit encode and decode
	// its values as a send to another worker would, so that a value of a
	// type not registered with TopologyBuilder.RegisterType (or whose
	// TypeCodec fails) is an emit error naming the component, stream and
	// type even when the topology runs in one process (bool, default
	// false, as in Storm). galetest turns it on unless the config sets it.
	TopologyTestingAlwaysTrySerialize = "topology.testing.always.try.serialize"
	// TopologyStatsEnabled turns the per-component metrics on or off (bool,
	// default true). Off, executors keep no per-component counters beyond
	// what the spouts need to work: no execute or process latency
	// sampling, capacity, complete latency histogram, queue depth or time
	// spent backpressured or throttled, and bolts publish no counters; a
	// spout's acked, failed (by reason) and pending counts, which `gale
	// list` and the in-flight limit use, stay, as do the errors reported.
	// The cost of keeping them is measured by `gale bench wordcount
	// --compare-stats` (docs/performance.md).
	TopologyStatsEnabled = "topology.stats.enabled"
	// TopologyStatsSampleRate is the share of Execute calls timed for the
	// execute latency, capacity and process latency, as Storm's key:
	// one in round(1/rate) (float, default unset = 1 in 64, 0 < rate ≤ 1).
	TopologyStatsSampleRate = "topology.stats.sample.rate"
	// TopologyMinReplicationCount is how many nimbuses must hold a
	// topology's artifact before nimbus schedules it, so that a standby
	// that takes over has the code (int, default 1 = the leader alone, ≥ 1).
	TopologyMinReplicationCount = "topology.min.replication.count"
	// TopologyMaxReplicationWaitTimeSec is how long a submission waits for
	// TopologyMinReplicationCount holders before nimbus schedules it
	// anyway (int, default 60, ≥ -1; -1 = wait as long as it takes).
	TopologyMaxReplicationWaitTimeSec = "topology.max.replication.wait.time.sec"
)

// Values of TopologyComponentPanicPolicy.
const (
	// PanicPolicyFailTuple recovers the panic, logs it with the stack, fails
	// the tuple being processed (a spout's pending tuple is failed back to
	// it) and keeps the executor running. This is the default.
	PanicPolicyFailTuple = "fail-tuple"
	// PanicPolicyKillWorker lets the panic kill the worker process, as in
	// Storm; its supervisor restarts it and unacked trees time out and are
	// replayed by their spouts.
	PanicPolicyKillWorker = "kill-worker"
)
