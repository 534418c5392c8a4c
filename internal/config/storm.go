package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Keys of three kinds reach a configuration layer:
//   - Gale's keys (configKeySpecs), Storm's names where Storm has the key;
//   - Storm's keys Gale does not implement (stormKeys, refused): refused
//     with ErrUnsupportedKey, saying why and what to use instead, rather
//     than as unknown;
//   - user keys, outside the reserved namespaces (reservedNamespaces):
//     carried as they are to every task, which reads them with
//     Effective.Lookup, as Storm topologies read their own keys in
//     prepare. A key in a reserved namespace that is none of the above is
//     unknown, with a did-you-mean.

// reservedNamespaces are the prefixes of Gale's and Storm's keys (Storm's
// Config.java and DaemonConfig.java). A key under one of them, or named as
// one of them without the dot ("topology"), is not a user key.
var reservedNamespaces = []string{
	"topology.", "storm.", "nimbus.", "supervisor.", "worker.", "gale.", "drpc.",
	"transactional.", "ui.", "logviewer.", "pacemaker.", "dev.zookeeper.", "blobstore.",
	"client.", "isolation.", "task.", "executor.", "java.library.path.", "num.stat.buckets.",
	"resource.aware.scheduler.", "scheduler.",
}

// misspeltNamespaces are the namespaces long and unusual enough that a
// key whose first word is one edit or two from one ("toplogy.workers") is
// a typo rather than a user's own key.
var misspeltNamespaces = []string{"topology", "nimbus", "supervisor", "transactional", "logviewer", "pacemaker", "blobstore"}

// Bounds of user keys' values, encoded as JSON: they travel to every
// worker with the topology's config.
const (
	maxUserValueBytes  = 64 << 10 // one key's value
	maxUserConfigBytes = 1 << 20  // every user key of one layer
)

// reservedKey reports whether key is in a reserved namespace.
func reservedKey(key string) bool {
	k := strings.ToLower(key) + "."
	for _, ns := range reservedNamespaces {
		if strings.HasPrefix(k, ns) {
			return true
		}
	}
	return false
}

// misspeltNamespace returns the reserved namespace (with its dot) that
// key's first word is a typo of, or "".
func misspeltNamespace(key string) string {
	first, _, ok := strings.Cut(strings.ToLower(key), ".")
	if !ok {
		return ""
	}
	for _, ns := range misspeltNamespaces {
		limit := 1
		if len(ns) >= 8 {
			limit = 2
		}
		if d := configEditDistance(first, ns); d > 0 && d <= limit {
			return ns + "."
		}
	}
	return ""
}

// normaliseUserValue converts a user key's value to what a JSON decoder
// gives, so that a task reads the same value in one process and in a
// worker process, whose config arrived as JSON: nil, bool, string, int
// (an integral number that fits), float64 (any other number), []any and
// map[string]any. A Go struct becomes the mapping encoding/json writes.
// It returns a sentinel and a message for a value that has no JSON form
// (ErrWrongType) or is too large (ErrOutOfRange).
func normaliseUserValue(raw any) (v any, size int, sentinel error, msg string) {
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, 0, ErrWrongType, fmt.Sprintf("must be a value JSON can carry (a user key's value travels to every worker as JSON), got %s: %v", describeConfigValue(raw), err)
	}
	if len(b) > maxUserValueBytes {
		return nil, 0, ErrOutOfRange, fmt.Sprintf("is %d bytes as JSON, over the limit of %d KiB for a user key's value; put large data in a file or a store and the key's value its name", len(b), maxUserValueBytes>>10)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, 0, ErrWrongType, fmt.Sprintf("could not be read back from JSON: %v", err)
	}
	return jsonNumbers(v), len(b), nil, ""
}

// jsonNumbers replaces the json.Numbers in v with int where they are
// integers that fit, float64 otherwise.
func jsonNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil && int64(int(n)) == n {
			return int(n)
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = jsonNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = jsonNumbers(x[k])
		}
	}
	return v
}

// cloneJSONValue returns a deep copy of a normalised user value.
func cloneJSONValue(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = cloneJSONValue(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneJSONValue(e)
		}
		return out
	}
	return v
}

// MarshalJSON writes a number too large for its Go type as a JSON
// number, so that it stays a number as a user key's value.
func (n yamlNumber) MarshalJSON() ([]byte, error) {
	s := strings.ReplaceAll(string(n), "_", "")
	if json.Valid([]byte(s)) && !strings.HasPrefix(s, "+") {
		return []byte(s), nil
	}
	return json.Marshal(string(n))
}

// stormStatus is what Gale does with one of Storm's keys.
type stormStatus int

const (
	// stormAccepted: Gale implements the key as Storm does.
	stormAccepted stormStatus = iota + 1
	// stormDiffers: Gale implements the key, with the difference noted.
	stormDiffers
	// stormRefused: Gale refuses the key, saying why and what instead.
	stormRefused
)

// String is the status as docs/storm-keys.md gives it.
func (s stormStatus) String() string {
	switch s {
	case stormAccepted:
		return "accepted"
	case stormDiffers:
		return "accepted, differs"
	case stormRefused:
		return "refused"
	}
	return fmt.Sprintf("stormStatus(%d)", int(s))
}

// stormKey is one of Storm's keys and what Gale does with it.
type stormKey struct {
	name   string
	status stormStatus
	// note says how Gale differs (stormDiffers) or why it refuses the key
	// and what to use instead (stormRefused); the refusal quotes it.
	note string
}

// Reasons shared by several refused keys.
const (
	noteKryo       = "Gale serializes tuples with its own codec, not Kryo or Java serialization: register a user type with TopologyBuilder.RegisterType and a TypeCodec, and remove the key"
	noteMultilang  = "multilang (shell) components are not built yet (a later issue): write the component in Go"
	noteState      = "exactly-once state (stateful bolts, checkpoints) is not built yet: keep the state in the bolt or in an external store"
	noteWindow     = "windowed bolts are not built yet: keep the window in the bolt, driven by tick tuples (topology.tick.tuple.freq.secs)"
	noteTrident    = "Trident and transactional topologies are not built"
	noteRAS        = "Gale schedules as Storm's even scheduler does (with isolation.scheduler.machines), not by resources: size a worker with worker.heap.memory.mb in gale.yaml, and remove the key"
	noteWait       = "Gale's executors spin briefly, then park on their queues until work arrives: there is no wait strategy to choose; remove the key"
	noteLoadAware  = "Gale's shuffle is not load-aware; LocalOrShuffle prefers the emitter's worker. Remove the key"
	noteMetrics    = "Gale has no metrics consumers: its counters are in `gale list`, the UI's REST API and each worker's Prometheus /metrics (topology.stats.enabled turns most off). Remove the key"
	noteEventLog   = "Gale has no event logger: topology.debug logs every emit. Remove the key"
	noteJVM        = "a Gale worker is a Go process, not a JVM: its runtime is set in gale.yaml (worker.gogc, worker.gc.floor.mb, worker.heap.memory.mb). Remove the key"
	noteAuth       = "Gale's access control is one bearer token for the cluster (nimbus.auth.token), not per-topology users or credentials. Remove the key"
	noteErrorLimit = "a component keeps its last errors for `gale list` and the UI, without throttling. Remove the key"
	noteLogging    = "workers log with log/slog to stderr, which their supervisor keeps; remove the key"
)

// stormKeys lists Storm 2.x's topology.* keys (storm-client's Config.java,
// apache/storm commit 013654d) and the other Storm keys Gale refuses by
// name, each with what Gale does with it. docs/storm-keys.md gives the
// same table (TestStormKeysDocumented). An accepted key is one of Gale's
// keys (configKeySpecs); a refused key is not.
var stormKeys = []stormKey{
	{TopologyAckerExecutors, stormDiffers, "0 turns acking off, as in Storm; any other value (or none) turns it on, but Gale runs no acker executors: each spout task keeps the XOR ledger of its own trees, so acking scales with the spouts and no __acker component shows"},
	{TopologyDebug, stormAccepted, "each emit is logged at INFO by the emitting task's logger"},
	{TopologyExecutorReceiveBufferSize, stormDiffers, "default 1024, not 32768: Gale's queues move batches of up to topology.producer.batch.size tuples, so a smaller queue keeps the throughput with less memory and queueing delay"},
	{TopologyMaxReplicationWaitTimeSec, stormAccepted, ""},
	{TopologyMaxSpoutPending, stormAccepted, "Gale adds topology.max.spout.pending.autotune"},
	{TopologyMaxTaskParallelism, stormAccepted, ""},
	{TopologyMessageTimeoutSecs, stormAccepted, ""},
	{TopologyMinReplicationCount, stormAccepted, ""},
	{TopologyName, stormAccepted, "set by Gale at submission; no layer may set it"},
	{TopologyProducerBatchSize, stormAccepted, ""},
	{TopologyStatsSampleRate, stormDiffers, "unset by default, which times 1 Execute in 64 (Storm: 0.05); a rate r times one call in round(1/r)"},
	{TopologyTestingAlwaysTrySerialize, stormAccepted, "galetest turns it on unless the config sets it"},
	{TopologyTickTupleFreqSecs, stormAccepted, ""},
	{TopologyTransferBufferSize, stormDiffers, "the frames, not tuples, queued for each peer worker (a frame carries a batch of up to topology.producer.batch.size tuples); default 256, not 1000"},
	{TopologyWorkers, stormAccepted, ""},

	{"topology.acker.cpu.pcore.percent", stormRefused, noteRAS},
	{"topology.acker.resources.offheap.memory.mb", stormRefused, noteRAS},
	{"topology.acker.resources.onheap.memory.mb", stormRefused, noteRAS},
	{"topology.auto-credentials", stormRefused, noteAuth},
	{"topology.auto.task.hooks", stormRefused, "Gale has no task hooks: wrap the component, or watch it through `gale list` and the UI. Remove the key"},
	{"topology.backpressure.check.millis", stormRefused, "Gale's backpressure is credit-based and needs no periodic check; remove the key"},
	{"topology.backpressure.enable", stormRefused, "Gale always applies backpressure (bounded queues, credits between workers); remove the key"},
	{"topology.backpressure.wait.park.microsec", stormRefused, noteWait},
	{"topology.backpressure.wait.progressive.level1.count", stormRefused, noteWait},
	{"topology.backpressure.wait.progressive.level2.count", stormRefused, noteWait},
	{"topology.backpressure.wait.progressive.level3.sleep.millis", stormRefused, noteWait},
	{"topology.backpressure.wait.strategy", stormRefused, noteWait},
	{"topology.batch.flush.interval.millis", stormRefused, "a producer sends its batch as soon as it runs out of input, without a timer; remove the key"},
	{"topology.blobstore.map", stormRefused, "Gale has no user blobstore: ship files with the topology binary or fetch them in Open or Prepare"},
	{"topology.bolt.wait.park.microsec", stormRefused, noteWait},
	{"topology.bolt.wait.progressive.level1.count", stormRefused, noteWait},
	{"topology.bolt.wait.progressive.level2.count", stormRefused, noteWait},
	{"topology.bolt.wait.progressive.level3.sleep.millis", stormRefused, noteWait},
	{"topology.bolt.wait.strategy", stormRefused, noteWait},
	{"topology.bolts.late.tuple.stream", stormRefused, noteWindow},
	{"topology.bolts.message.id.field.name", stormRefused, noteWindow},
	{"topology.bolts.tuple.timestamp.max.lag.ms", stormRefused, noteWindow},
	{"topology.bolts.watermark.event.interval.ms", stormRefused, noteWindow},
	{"topology.bolts.window.length.count", stormRefused, noteWindow},
	{"topology.bolts.window.length.duration.ms", stormRefused, noteWindow},
	{"topology.bolts.window.sliding.interval.count", stormRefused, noteWindow},
	{"topology.bolts.window.sliding.interval.duration.ms", stormRefused, noteWindow},
	{"topology.builtin.metrics.bucket.size.secs", stormRefused, noteMetrics},
	{"topology.classpath", stormRefused, noteJVM},
	{"topology.classpath.beginning", stormRefused, noteJVM},
	{"topology.component.cpu.pcore.percent", stormRefused, noteRAS},
	{"topology.component.resources.map", stormRefused, noteRAS},
	{"topology.component.resources.offheap.memory.mb", stormRefused, noteRAS},
	{"topology.component.resources.onheap.memory.mb", stormRefused, noteRAS},
	{"topology.disable.loadaware.messaging", stormRefused, noteLoadAware},
	{"topology.enable.message.timeouts", stormRefused, "tuple trees always time out in Gale: raise topology.message.timeout.secs, or run tests on galetest's simulated clock"},
	{"topology.enable.v2.metrics.tick", stormRefused, noteMetrics},
	{"topology.environment", stormRefused, "a worker inherits its supervisor's environment: pass settings to the tasks as user keys of the topology config instead"},
	{"topology.error.throttle.interval.secs", stormRefused, noteErrorLimit},
	{"topology.event.logger.register", stormRefused, noteEventLog},
	{"topology.eventlogger.executors", stormRefused, noteEventLog},
	{"topology.executor.overflow.limit", stormRefused, "Gale's queues are bounded and never drop tuples from other workers: the sender waits for credit. Remove the key"},
	{"topology.fall.back.on.java.serialization", stormRefused, noteKryo},
	{"topology.groups", stormRefused, noteAuth},
	{"topology.isolate.machines", stormRefused, "set isolation.scheduler.machines in gale.yaml, mapping the topology's name to its machines"},
	{"topology.kryo.decorators", stormRefused, noteKryo},
	{"topology.kryo.factory", stormRefused, noteKryo},
	{"topology.kryo.register", stormRefused, noteKryo},
	{"topology.localityaware.higher.bound", stormRefused, noteLoadAware},
	{"topology.localityaware.lower.bound", stormRefused, noteLoadAware},
	{"topology.logging.config", stormRefused, noteLogging},
	{"topology.logging.sensitivity", stormRefused, noteLogging},
	{"topology.max.error.report.per.interval", stormRefused, noteErrorLimit},
	{"topology.metrics.consumer.cpu.pcore.percent", stormRefused, noteRAS},
	{"topology.metrics.consumer.register", stormRefused, noteMetrics},
	{"topology.metrics.consumer.resources.offheap.memory.mb", stormRefused, noteRAS},
	{"topology.metrics.consumer.resources.onheap.memory.mb", stormRefused, noteRAS},
	{"topology.multilang.log.handler", stormRefused, noteMultilang},
	{"topology.multilang.serializer", stormRefused, noteMultilang},
	{"topology.priority", stormRefused, noteRAS},
	{"topology.ras.constraint.max.state.search", stormRefused, noteRAS},
	{"topology.ras.constraint.max.time.secs", stormRefused, noteRAS},
	{"topology.ras.constraints", stormRefused, noteRAS},
	{"topology.ras.one.component.per.worker", stormRefused, noteRAS},
	{"topology.ras.one.executor.per.worker", stormRefused, noteRAS},
	{"topology.ras.order.executors.by.proximity.needs", stormRefused, noteRAS},
	{"topology.readonly.groups", stormRefused, noteAuth},
	{"topology.readonly.users", stormRefused, noteAuth},
	{"topology.scheduler.favored.nodes", stormRefused, noteRAS},
	{"topology.scheduler.strategy", stormRefused, noteRAS},
	{"topology.scheduler.unfavored.nodes", stormRefused, noteRAS},
	{"topology.serialized.message.size.metrics", stormRefused, noteMetrics},
	{"topology.shellbolt.max.pending", stormRefused, noteMultilang},
	{"topology.skip.missing.kryo.registrations", stormRefused, noteKryo},
	{"topology.sleep.spout.wait.strategy.time.ms", stormRefused, noteWait},
	{"topology.spout.recvq.skips", stormRefused, noteWait},
	{"topology.spout.wait.park.microsec", stormRefused, noteWait},
	{"topology.spout.wait.progressive.level1.count", stormRefused, noteWait},
	{"topology.spout.wait.progressive.level2.count", stormRefused, noteWait},
	{"topology.spout.wait.progressive.level3.sleep.millis", stormRefused, noteWait},
	{"topology.spout.wait.strategy", stormRefused, noteWait},
	{"topology.spread.components", stormRefused, noteRAS},
	{"topology.state.checkpoint.interval.ms", stormRefused, noteState},
	{"topology.state.kryo.register", stormRefused, noteState},
	{"topology.state.provider", stormRefused, noteState},
	{"topology.state.provider.config", stormRefused, noteState},
	{"topology.state.synchronization.timeout.secs", stormRefused, noteState},
	{"topology.submitter.principal", stormRefused, noteAuth},
	{"topology.submitter.user", stormRefused, noteAuth},
	{"topology.subprocess.timeout.secs", stormRefused, noteMultilang},
	{"topology.tasks", stormRefused, "set a component's tasks with SetNumTasks on its declarer"},
	{"topology.transactional.id", stormRefused, noteTrident},
	{"topology.transfer.batch.size", stormRefused, "a worker's frames carry a producer's batch, of up to topology.producer.batch.size tuples: set that instead"},
	{"topology.trident.batch.emit.interval.millis", stormRefused, noteTrident},
	{"topology.trident.windowing.cache.tuple.limit", stormRefused, noteTrident},
	{"topology.tuple.serializer", stormRefused, noteKryo},
	{"topology.users", stormRefused, noteAuth},
	{"topology.version", stormRefused, "a topology's version is its binary, named by its SHA-256 at submission: remove the key, or keep your own version under a user key"},
	{"topology.worker.childopts", stormRefused, noteJVM},
	{"topology.worker.gc.childopts", stormRefused, noteJVM},
	{"topology.worker.logwriter.childopts", stormRefused, noteJVM},
	{"topology.worker.max.heap.size.mb", stormRefused, "a worker's heap budget is worker.heap.memory.mb, set in gale.yaml for every worker"},
	{"topology.worker.metrics", stormRefused, noteMetrics},
	{"topology.worker.shared.thread.pool.size", stormRefused, "Gale has no shared thread pool: start goroutines in Open or Prepare and end them when TopologyContext.Context is done"},
	{"topology.worker.timeout.secs", stormRefused, "a worker's heartbeat timeout is supervisor.worker.timeout.secs, set in gale.yaml"},

	{"nimbus.task.timeout.secs", stormRefused, "nimbus does not watch executors: a worker's supervisor restarts it after supervisor.worker.timeout.secs without a heartbeat, and a lost machine's workers move after nimbus.supervisor.timeout.secs. Remove the key"},
	{"storm.zookeeper.port", stormRefused, "Gale's coordination store is etcd: set gale.etcd.endpoints"},
	{"storm.zookeeper.servers", stormRefused, "Gale's coordination store is etcd: set gale.etcd.endpoints"},
}

// refusedStormKeys maps each refused Storm key to its entry.
var refusedStormKeys = func() map[string]*stormKey {
	m := make(map[string]*stormKey)
	for i := range stormKeys {
		if stormKeys[i].status == stormRefused {
			m[stormKeys[i].name] = &stormKeys[i]
		}
	}
	return m
}()
