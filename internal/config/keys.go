package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The keys a topology sets. Package gale names them for topology authors,
// with their documentation, in constants of the same names;
// gale's TestTopologyKeysAreTheRegistrys checks that the two lists agree.
const (
	TopologyWorkers                             = "topology.workers"
	TopologyMessageTimeoutSecs                  = "topology.message.timeout.secs"
	TopologyMaxSpoutPending                     = "topology.max.spout.pending"
	TopologyMaxSpoutPendingAutotune             = "topology.max.spout.pending.autotune"
	TopologyMaxSpoutPendingAutotuneIntervalSecs = "topology.max.spout.pending.autotune.interval.secs"
	TopologyAckerExecutors                      = "topology.acker.executors"
	TopologyTickTupleFreqSecs                   = "topology.tick.tuple.freq.secs"
	TopologyExecutorReceiveBufferSize           = "topology.executor.receive.buffer.size"
	TopologyTransferBufferSize                  = "topology.transfer.buffer.size"
	TopologyProducerBatchSize                   = "topology.producer.batch.size"
	TopologyDebug                               = "topology.debug"
	TopologyMaxTaskParallelism                  = "topology.max.task.parallelism"
	TopologyName                                = "topology.name"
	TopologyShutdownDrainTimeoutSecs            = "topology.shutdown.drain.timeout.secs"
	TopologyComponentPanicPolicy                = "topology.component.panic.policy"
	TopologyTupleReuse                          = "topology.tuple.reuse"
	TopologyTestingAlwaysTrySerialize           = "topology.testing.always.try.serialize"
	TopologyStatsEnabled                        = "topology.stats.enabled"
	TopologyStatsSampleRate                     = "topology.stats.sample.rate"
	TopologyMinReplicationCount                 = "topology.min.replication.count"
	TopologyMaxReplicationWaitTimeSec           = "topology.max.replication.wait.time.sec"
)

// The cluster's keys, set in gale.yaml (ScopeCluster).
const (
	// SupervisorSlotsPorts lists the worker slots of a supervisor, one port
	// each (list of ints, default [6700, 6701, 6702, 6703]).
	SupervisorSlotsPorts = "supervisor.slots.ports"
	// SupervisorHeartbeatFrequencySecs is how often a supervisor heartbeats
	// to the coordination store (int, default 5, ≥ 1).
	SupervisorHeartbeatFrequencySecs = "supervisor.heartbeat.frequency.secs"
	// SupervisorWorkerTimeoutSecs is how long a worker may go without a
	// heartbeat before its supervisor declares it dead (int, default 30, ≥ 1).
	SupervisorWorkerTimeoutSecs = "supervisor.worker.timeout.secs"
	// SupervisorWorkerStartTimeoutSecs is the grace period for a starting
	// worker's first heartbeat (int, default 120, ≥ 1).
	SupervisorWorkerStartTimeoutSecs = "supervisor.worker.start.timeout.secs"
	// SupervisorArtifactRetentionSecs is Gale-specific: how long a
	// supervisor keeps a topology binary that no assignment of its
	// names and none of its workers runs (a killed topology's, an old
	// version's) before it deletes it; one needed again is downloaded
	// again (int, default 600, ≥ -1; 0 = at once, -1 = keep forever).
	SupervisorArtifactRetentionSecs = "supervisor.artifact.retention.secs"

	// NimbusSeeds lists the hosts that may run nimbus (list of strings,
	// default ["127.0.0.1"]).
	NimbusSeeds = "nimbus.seeds"
	// NimbusThriftPort is the port of the nimbus API. Gale does not speak
	// Thrift; it keeps Storm's key name (int, default 6627, 0–65535).
	NimbusThriftPort = "nimbus.thrift.port"
	// NimbusSupervisorTimeoutSecs is how long a supervisor may go without a
	// heartbeat before nimbus declares it dead (int, default 10, ≥ 1). In
	// Gale it is the TTL of the supervisor's etcd lease, renewed by
	// keep-alives, which cost no writes; Storm's default of 60 was sized for
	// heartbeats written to ZooKeeper, where a shorter period meant more
	// writes. 10 s detects a lost machine sooner and still rides out a
	// leader election of a few seconds in an external etcd cluster.
	NimbusSupervisorTimeoutSecs = "nimbus.supervisor.timeout.secs"
	// NimbusMonitorFreqSecs is how often nimbus checks heartbeats and
	// reassigns work (int, default 10, ≥ 1).
	NimbusMonitorFreqSecs = "nimbus.monitor.freq.secs"
	// NimbusAuthToken is Gale-specific: the bearer token every nimbus
	// call but the public reads (List, Get, ClusterInfo) must carry when
	// nimbus binds beyond loopback; the command line, the supervisors and
	// the other nimbuses send it as "authorization: Bearer TOKEN" (string,
	// unset by default).
	NimbusAuthToken = "nimbus.auth.token"
	// NimbusAuthTokenFile is Gale-specific: a file holding the bearer token
	// (surrounding whitespace ignored), for a token kept out of gale.yaml
	// (string, unset by default). NimbusAuthToken wins when both are set.
	NimbusAuthTokenFile = "nimbus.auth.token.file"
	// NimbusTLSCert is Gale-specific: a PEM certificate file. Nimbus serves
	// TLS with it (and NimbusTLSKey); the command line trusts it when it
	// dials nimbus (string, unset by default: plain gRPC).
	NimbusTLSCert = "nimbus.tls.cert"
	// NimbusTLSKey is Gale-specific: the PEM private key of NimbusTLSCert
	// (string, unset by default).
	NimbusTLSKey = "nimbus.tls.key"

	// WorkerHeartbeatFrequencySecs is how often a worker heartbeats (int,
	// default 1, ≥ 1).
	WorkerHeartbeatFrequencySecs = "worker.heartbeat.frequency.secs"

	// UIPort is the port of the UI and REST API (int, default 8080, 0–65535).
	UIPort = "ui.port"

	// GaleEtcdEndpoints is Gale-specific: the etcd client endpoints of the
	// coordination store (list of strings, default ["127.0.0.1:2379"]).
	GaleEtcdEndpoints = "gale.etcd.endpoints"
	// GaleEtcdTLSCA is Gale-specific: the PEM file of the CA that signed
	// etcd's server certificates, which every Gale process that dials etcd
	// (nimbus, supervisor, the CLI) trusts. Setting it, or
	// GaleEtcdTLSCert, turns on TLS to etcd; the endpoints must then be
	// https:// or name no scheme (string, unset by default: plain gRPC).
	GaleEtcdTLSCA = "gale.etcd.tls.ca"
	// GaleEtcdTLSCert is Gale-specific: the PEM client certificate Gale's
	// processes present to etcd, for an etcd run with --client-cert-auth
	// (string, unset by default). It needs GaleEtcdTLSKey.
	GaleEtcdTLSCert = "gale.etcd.tls.cert"
	// GaleEtcdTLSKey is Gale-specific: the PEM private key of
	// GaleEtcdTLSCert (string, unset by default).
	GaleEtcdTLSKey = "gale.etcd.tls.key"
	// GaleEtcdUsername is Gale-specific: the etcd user Gale's processes
	// authenticate as, for an etcd with auth enabled (etcdctl auth
	// enable); it needs GaleEtcdPassword or GaleEtcdPasswordFile (string,
	// unset by default).
	GaleEtcdUsername = "gale.etcd.username"
	// GaleEtcdPassword is Gale-specific: the password of GaleEtcdUsername
	// (string, unset by default).
	GaleEtcdPassword = "gale.etcd.password"
	// GaleEtcdPasswordFile is Gale-specific: a file holding the password
	// of GaleEtcdUsername (surrounding white space ignored), for a
	// password kept out of gale.yaml (string, unset by default).
	// GaleEtcdPassword wins when both are set.
	GaleEtcdPasswordFile = "gale.etcd.password.file"

	// NimbusArtifactMaxMB is Gale-specific: the largest topology artifact
	// nimbus accepts, in MiB (int, default 512, ≥ 1). A larger submission
	// is refused before any of it is stored.
	NimbusArtifactMaxMB = "nimbus.artifact.max.mb"
	// NimbusExecutorsPerTopology is Storm's bound on the executors of one
	// topology, ackers included (int, default 10000, ≥ 1). A submission or
	// a rebalance over it is refused, naming it, before anything is
	// planned or stored.
	NimbusExecutorsPerTopology = "nimbus.executors.perTopology"
	// NimbusTasksPerTopology is Gale-specific, in the style of
	// NimbusExecutorsPerTopology: the bound on the tasks of one topology
	// (int, default 100000, ≥ 1). A submission over it is refused, naming
	// it, before anything is planned or stored.
	NimbusTasksPerTopology = "nimbus.tasks.perTopology"

	// IsolationSchedulerMachines is Storm's isolation scheduler setting: a
	// mapping of topology names to the number of machines (supervisors)
	// each gets to itself, e.g. {wordcount: 2, billing: 1} (mapping of
	// names to integers ≥ 1, default empty = every topology shares the
	// machines). An isolated topology that cannot get its machines is
	// pending; the other topologies share the machines left over.
	IsolationSchedulerMachines = "isolation.scheduler.machines"
)

// Settings of a worker process's Go runtime: cluster keys, set in
// gale.yaml for every worker, not by a topology. They are Gale-specific,
// the Go counterpart of the JVM options in Storm's worker.childopts;
// internal/workermem and internal/workerproc read and apply them.
const (
	// WorkerGOGC is the GOGC a worker process runs with (int, default 400;
	// -1 = off, or ≥ 25). Tuples are short-lived garbage and bounded
	// queues keep the live heap small, so Go's default of 100 collects
	// every few megabytes; 400 cuts that fourfold, and WorkerGCFloorMB
	// lets a small heap grow to 64 MiB first. Off, a worker collects only
	// when its heap nears WorkerHeapMemoryMB: far fewer collections, but
	// every allocation touches memory that is not in cache, which cost 30%
	// more CPU per tuple in the bench (docs/performance.md). RunLocal does
	// not change the GC of the process it runs in.
	WorkerGOGC = "worker.gogc"
	// WorkerGCFloorMB is the least heap, in MiB, a worker process grows to
	// before it collects, however little is live (int, default 64, ≥ 0;
	// 0 = none). Above it WorkerGOGC governs. A stream worker's live heap
	// is small and its garbage is tuples, so GOGC alone collects every
	// 16 MB, about 7 times a second at 500k sentences/s in the bench, and
	// each collection delays tuples by about a millisecond; the floor cuts
	// that fourfold and halved the p99 complete latency
	// (docs/performance.md). It is kept after every collection by setting
	// the GC percent from the live heap, so a large live heap costs no
	// more than WorkerGOGC alone would.
	WorkerGCFloorMB = "worker.gc.floor.mb"
	// WorkerHeapPretouch, the counterpart of the JVM's -XX:+AlwaysPreTouch,
	// has a worker process fault in WorkerGCFloorMB of heap, and a quarter
	// more, when it starts, before its spouts activate, so that its heap's
	// growth to the floor under load reuses those pages rather than
	// faulting in new ones (bool, default true). It costs that much RSS
	// from the start, which a loaded worker reaches within its first
	// second anyway, and halved the first second's p99 complete latency of
	// the bench in two workers (docs/performance.md, "The first second").
	WorkerHeapPretouch = "worker.heap.pretouch"
	// WorkerHeapMemoryMB is Storm's heap budget of one worker (int,
	// default 768 as in Storm, ≥ 64). A Gale worker runs with it as its
	// Go memory limit (GOMEMLIMIT): the collector works harder rather than
	// let the heap exceed it, as a JVM worker's does at -Xmx. The
	// automatic in-flight limit and the parallelism a worker accepts are
	// derived from it (package gale's budget.go).
	WorkerHeapMemoryMB = "worker.heap.memory.mb"
	// WorkerCPUPinning has the launcher bind each of the N worker
	// processes it starts on a machine to its own 1/N of the CPUs it may
	// use, from the worker's first instruction, with GOMAXPROCS set to that
	// share (bool, default false). Two workers that wake each other over
	// loopback otherwise get put on one CPU by the kernel when their load
	// rises, each at half speed for tens of milliseconds
	// (docs/performance.md, "Pinning the workers"). Worth it where the
	// workers own the machine; off where they share it with other work.
	WorkerCPUPinning = "worker.cpu.pinning"
	// WorkerMetricsPort is the port a worker process serves its own
	// Prometheus /metrics on, on the host it listens for its peers on
	// (int, default 0: a free port, reported in its heartbeats; -1: none).
	// internal/workerproc reads it.
	WorkerMetricsPort = "worker.metrics.port"
)

// renamedConfigKeys maps keys Gale no longer knows to the keys that took
// their place, so that an old name gets a "did you mean" however far the
// new one is.
var renamedConfigKeys = map[string]string{
	"topology.worker.gogc":          WorkerGOGC,
	"topology.worker.gc.floor.mb":   WorkerGCFloorMB,
	"topology.worker.heap.pretouch": WorkerHeapPretouch,
}

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

// Scope says which configuration layers may set a key.
type Scope int

const (
	// ScopeCluster keys may be set only by the built-in defaults and
	// gale.yaml.
	ScopeCluster Scope = iota + 1
	// ScopeTopology keys may also be set by topology config. Every
	// "topology.*" key except TopologyName has this scope or ScopeComponent,
	// and no other key does.
	ScopeTopology
	// ScopeComponent keys may also be set per component.
	ScopeComponent
	// ScopeSystem keys are set by Gale itself; no layer may set them.
	ScopeSystem
)

// String returns "cluster", "topology", "component" or "system".
func (s Scope) String() string {
	switch s {
	case ScopeCluster:
		return "cluster"
	case ScopeTopology:
		return "topology"
	case ScopeComponent:
		return "component"
	case ScopeSystem:
		return "system"
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

// configKind is the type of a key's value after normalisation.
type configKind int

const (
	configInt     configKind = iota + 1 // int
	configBool                          // bool
	configString                        // string
	configFloat                         // float64
	configInts                          // []int
	configStrings                       // []string
	configIntMap                        // map[string]int
)

// String names the kind the way a YAML or JSON author thinks of it.
func (k configKind) String() string {
	switch k {
	case configInt:
		return "an integer"
	case configBool:
		return "a boolean (true or false)"
	case configString:
		return "a string"
	case configFloat:
		return "a number"
	case configInts:
		return "a list of integers"
	case configStrings:
		return "a list of strings"
	case configIntMap:
		return "a mapping of names to integers"
	}
	return fmt.Sprintf("configKind(%d)", int(k))
}

// configKeySpec describes one key.
type configKeySpec struct {
	name  string
	kind  configKind
	def   any // normalised default; nil means unset
	scope Scope
	doc   string
	// check returns a description of what is wrong with a normalised,
	// non-nil value ("must be ≥ 1, got 0"), or "" if it is fine.
	check func(v any) string
}

// configKeySpecs is the registry of every key Gale knows, sorted by name.
var configKeySpecs = sortedConfigKeySpecs([]configKeySpec{
	{TopologyWorkers, configInt, 1, ScopeTopology,
		"worker processes for the topology", intAtLeast(1)},
	{TopologyMessageTimeoutSecs, configInt, 30, ScopeTopology,
		"seconds a tuple tree has to complete before it fails", intAtLeast(1)},
	{TopologyMaxSpoutPending, configInt, nil, ScopeComponent,
		"tuple trees in flight per spout task (unset = no cap)", intAtLeast(1)},
	{TopologyMaxSpoutPendingAutotune, configBool, false, ScopeComponent,
		"tune topology.max.spout.pending by the spout's progress (starting from it if set, else 1000)", nil},
	{TopologyMaxSpoutPendingAutotuneIntervalSecs, configInt, nil, ScopeComponent,
		"seconds between the max spout pending auto-tuner's steps (unset = topology.message.timeout.secs)", intAtLeast(1)},
	{TopologyAckerExecutors, configInt, nil, ScopeTopology,
		"0 turns acking off; any other value, or unset, turns it on (each spout task keeps its own trees: no acker executors)", intAtLeast(0)},
	{TopologyTickTupleFreqSecs, configInt, nil, ScopeComponent,
		"seconds between tick tuples to each bolt (unset = none)", intAtLeast(1)},
	{TopologyExecutorReceiveBufferSize, configInt, 1024, ScopeTopology,
		"capacity in tuples of each executor's input queue", intAtLeast(1)},
	{TopologyTransferBufferSize, configInt, 256, ScopeTopology,
		"capacity in frames (each a batch of tuples) of the queue to each peer worker", intAtLeast(1)},
	{TopologyProducerBatchSize, configInt, 100, ScopeTopology,
		"most tuples a producer puts on a queue in one batch", intAtLeast(1)},
	{TopologyDebug, configBool, false, ScopeComponent,
		"log every emitted tuple", nil},
	{TopologyMaxTaskParallelism, configInt, nil, ScopeComponent,
		"cap on each component's executors and tasks (unset = no cap)", intAtLeast(1)},
	{TopologyName, configString, nil, ScopeSystem,
		"the topology's name, set by Gale at submission", nonEmptyString},
	{TopologyShutdownDrainTimeoutSecs, configInt, 5, ScopeTopology,
		"seconds to drain in-flight tuple trees on shutdown (0 = none)", intAtLeast(0)},
	{WorkerGOGC, configInt, 400, ScopeCluster,
		"GOGC of worker processes (-1 = off: collect when the heap nears worker.heap.memory.mb)", gogcValue},
	{WorkerGCFloorMB, configInt, 64, ScopeCluster,
		"least heap in MiB a worker grows to before collecting (0 = none; above it worker.gogc governs)", intAtLeast(0)},
	{WorkerHeapPretouch, configBool, true, ScopeCluster,
		"write to the GC floor's worth of heap when a worker starts, so its first second under load takes no page faults (as the JVM's -XX:+AlwaysPreTouch)", nil},
	{WorkerHeapMemoryMB, configInt, 768, ScopeCluster,
		"heap budget of a worker process in MiB, its Go memory limit", intAtLeast(64)},
	{WorkerCPUPinning, configBool, false, ScopeCluster,
		"bind each worker process a launcher starts to its own share of the machine's CPUs", nil},
	{WorkerMetricsPort, configInt, 0, ScopeCluster,
		"port of each worker's own Prometheus /metrics (0 = a free port, -1 = none)", intPortOrOff},
	{TopologyTestingAlwaysTrySerialize, configBool, false, ScopeTopology,
		"encode and decode every emitted tuple as between workers, to find values that cannot cross in tests", nil},
	{TopologyStatsEnabled, configBool, true, ScopeTopology,
		"keep the per-component metrics (latency sampling, capacity, queue depth, backpressure); false keeps only the spouts' acked, failed and pending", nil},
	{TopologyStatsSampleRate, configFloat, nil, ScopeTopology,
		"share of Execute calls timed for execute and process latency, one in round(1/rate) (unset = 1 in 64)", sampleRate},
	{TopologyMinReplicationCount, configInt, 1, ScopeTopology,
		"nimbuses that must hold a topology's artifact before it is scheduled", intAtLeast(1)},
	{TopologyMaxReplicationWaitTimeSec, configInt, 60, ScopeTopology,
		"seconds a submission waits for topology.min.replication.count (-1 = no limit)", intAtLeast(-1)},
	{TopologyTupleReuse, configBool, false, ScopeComponent,
		"the bolt does not keep tuples after acking them, so their memory is reused", nil},
	{TopologyComponentPanicPolicy, configString, PanicPolicyFailTuple, ScopeComponent,
		`on a component panic: "fail-tuple" (recover, fail the tuple) or "kill-worker"`,
		stringOneOf(PanicPolicyFailTuple, PanicPolicyKillWorker)},

	{SupervisorSlotsPorts, configInts, []int{6700, 6701, 6702, 6703}, ScopeCluster,
		"worker slots of a supervisor, one port each", slotPorts},
	{SupervisorHeartbeatFrequencySecs, configInt, 5, ScopeCluster,
		"seconds between supervisor heartbeats", intAtLeast(1)},
	{SupervisorWorkerTimeoutSecs, configInt, 30, ScopeCluster,
		"seconds without a heartbeat before a worker is declared dead", intAtLeast(1)},
	{SupervisorWorkerStartTimeoutSecs, configInt, 120, ScopeCluster,
		"seconds a starting worker has to send its first heartbeat", intAtLeast(1)},
	{SupervisorArtifactRetentionSecs, configInt, 600, ScopeCluster,
		"seconds a supervisor keeps an artifact no assignment or worker of its uses before deleting it (0 = at once, -1 = forever)", intAtLeast(-1)},

	{NimbusSeeds, configStrings, []string{"127.0.0.1"}, ScopeCluster,
		"hosts that may run nimbus", nonEmptyStrings},
	{NimbusThriftPort, configInt, 6627, ScopeCluster,
		"port of the nimbus API (Storm's key name; not Thrift)", intPort},
	{NimbusSupervisorTimeoutSecs, configInt, 10, ScopeCluster,
		"seconds without a heartbeat before a supervisor is declared dead", intAtLeast(1)},
	{NimbusMonitorFreqSecs, configInt, 10, ScopeCluster,
		"seconds between nimbus's heartbeat checks", intAtLeast(1)},
	{NimbusAuthToken, configString, nil, ScopeCluster,
		"bearer token of every nimbus call but the public reads List, Get, ClusterInfo (unset = none)", nonEmptyString},
	{NimbusAuthTokenFile, configString, nil, ScopeCluster,
		"file holding nimbus.auth.token", nonEmptyString},
	{NimbusTLSCert, configString, nil, ScopeCluster,
		"PEM certificate nimbus serves TLS with, and clients trust (unset = no TLS)", nonEmptyString},
	{NimbusTLSKey, configString, nil, ScopeCluster,
		"PEM private key of nimbus.tls.cert", nonEmptyString},

	{WorkerHeartbeatFrequencySecs, configInt, 1, ScopeCluster,
		"seconds between worker heartbeats", intAtLeast(1)},

	{UIPort, configInt, 8080, ScopeCluster,
		"port of the UI and REST API", intPort},

	{GaleEtcdEndpoints, configStrings, []string{"127.0.0.1:2379"}, ScopeCluster,
		"etcd client endpoints of the coordination store", nonEmptyStrings},
	{GaleEtcdTLSCA, configString, nil, ScopeCluster,
		"PEM CA file Gale's processes trust etcd's certificate with (unset = no TLS to etcd)", nonEmptyString},
	{GaleEtcdTLSCert, configString, nil, ScopeCluster,
		"PEM client certificate Gale's processes present to etcd (etcd's --client-cert-auth)", nonEmptyString},
	{GaleEtcdTLSKey, configString, nil, ScopeCluster,
		"PEM private key of gale.etcd.tls.cert", nonEmptyString},
	{GaleEtcdUsername, configString, nil, ScopeCluster,
		"etcd user Gale's processes authenticate as (unset = none)", nonEmptyString},
	{GaleEtcdPassword, configString, nil, ScopeCluster,
		"password of gale.etcd.username", nonEmptyString},
	{GaleEtcdPasswordFile, configString, nil, ScopeCluster,
		"file holding the password of gale.etcd.username", nonEmptyString},
	{NimbusArtifactMaxMB, configInt, 512, ScopeCluster,
		"largest topology artifact nimbus accepts, in MiB", intAtLeast(1)},
	{NimbusExecutorsPerTopology, configInt, 10000, ScopeCluster,
		"most executors one topology may have, ackers included; a submission or rebalance over it is refused", intAtLeast(1)},
	{NimbusTasksPerTopology, configInt, 100000, ScopeCluster,
		"most tasks one topology may have; a submission over it is refused", intAtLeast(1)},

	{IsolationSchedulerMachines, configIntMap, map[string]int{}, ScopeCluster,
		"topology name → machines it gets to itself (empty = all topologies share the machines)", intMapValuesAtLeast(1)},
})

// configKeyIndex maps a key name to its spec.
var configKeyIndex = func() map[string]*configKeySpec {
	m := make(map[string]*configKeySpec, len(configKeySpecs))
	for i := range configKeySpecs {
		m[configKeySpecs[i].name] = &configKeySpecs[i]
	}
	return m
}()

// componentConfigKeys lists, sorted, the keys that may be set per component.
var componentConfigKeys = func() []string {
	var keys []string
	for _, s := range configKeySpecs {
		if s.scope == ScopeComponent {
			keys = append(keys, s.name)
		}
	}
	return keys
}()

func sortedConfigKeySpecs(specs []configKeySpec) []configKeySpec {
	slices.SortFunc(specs, func(a, b configKeySpec) int { return strings.Compare(a.name, b.name) })
	return specs
}

func intAtLeast(min int) func(any) string {
	return func(v any) string {
		if n := v.(int); n < min {
			return fmt.Sprintf("must be ≥ %d, got %d", min, n)
		}
		return ""
	}
}

// intMapValuesAtLeast checks every value of a map[string]int, in key
// order, so that the first entry at fault is the one reported.
func intMapValuesAtLeast(min int) func(any) string {
	return func(v any) string {
		m := v.(map[string]int)
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if n := m[name]; n < min {
				return fmt.Sprintf("must map names to integers ≥ %d, got %d for %q", min, n, name)
			}
		}
		return ""
	}
}

// gogcValue accepts -1 (off) or a GC percent of at least 25.
func gogcValue(v any) string {
	if n := v.(int); n != -1 && n < 25 {
		return fmt.Sprintf("must be -1 (off) or ≥ 25, got %d", n)
	}
	return ""
}

func sampleRate(v any) string {
	if f := v.(float64); !(f > 0 && f <= 1) {
		return fmt.Sprintf("must be > 0 and ≤ 1 (the share of Execute calls timed), got %v", f)
	}
	return ""
}

// intPortOrOff accepts -1 (off) or a port number, 0 for a free one.
func intPortOrOff(v any) string {
	if n := v.(int); n < -1 || n > 65535 {
		return fmt.Sprintf("must be -1 (none) or a port number from 0 to 65535, got %d", n)
	}
	return ""
}

func intPort(v any) string {
	if n := v.(int); n < 0 || n > 65535 {
		return fmt.Sprintf("must be a port number from 0 to 65535, got %d", n)
	}
	return ""
}

func slotPorts(v any) string {
	ports := v.([]int)
	if len(ports) == 0 {
		return "must list at least one port"
	}
	seen := make(map[int]bool, len(ports))
	for i, p := range ports {
		if p < 1 || p > 65535 {
			return fmt.Sprintf("must hold port numbers from 1 to 65535, got %d at index %d", p, i)
		}
		if seen[p] {
			return fmt.Sprintf("must not repeat a port, got %d twice", p)
		}
		seen[p] = true
	}
	return ""
}

func nonEmptyString(v any) string {
	if v.(string) == "" {
		return "must not be empty"
	}
	return ""
}

func nonEmptyStrings(v any) string {
	list := v.([]string)
	if len(list) == 0 {
		return "must list at least one entry"
	}
	for i, s := range list {
		if s == "" {
			return fmt.Sprintf("must not hold empty strings, got one at index %d", i)
		}
	}
	return ""
}

func stringOneOf(allowed ...string) func(any) string {
	return func(v any) string {
		if s := v.(string); !slices.Contains(allowed, s) {
			quoted := make([]string, len(allowed))
			for i, a := range allowed {
				quoted[i] = fmt.Sprintf("%q", a)
			}
			return fmt.Sprintf("must be one of %s, got %q", strings.Join(quoted, ", "), s)
		}
		return ""
	}
}
