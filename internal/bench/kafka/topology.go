package kafka

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/kafka"
)

// TopologyName is the name the gale binary knows the crash tests'
// topology by (Build).
const TopologyName = "bench-kafka"

// The topology's components.
const (
	SpoutID   = "events"
	DecoderID = "decode"
	SinkID    = "sink"
)

// retryAttempts is the crash topology's retry.max.attempts: a record
// whose tree fails (it went through a killed worker) is retried until it
// completes, never given up.
const retryAttempts = 1000

// Build builds the crash tests' topology, bench-kafka: the Kafka spout
// reading parameter topic in consumer group group from the brokers
// (host:port, comma-separated) → Decode, which decodes each event and
// forwards its id and JSON → the Kafka sink, writing them to topic
// output, so that what was processed is visible outside every worker.
// Parameters spouts, decoders and sinks (whole numbers ≥ 1, default 1)
// are the parallelisms; guarantee is the spout's processing.guarantee
// (default at-least-once); session.timeout.ms the consumer group's
// session timeout (how soon a killed worker's partitions go to another
// member; default the client's). The spout retries a failed record
// until it completes. The config it returns asks for nothing: workers,
// ackers and timeouts are set at submit.
func Build(params map[string]string) (*gale.Topology, gale.Config, error) {
	ints := map[string]int{"spouts": 1, "decoders": 1, "sinks": 1, "session.timeout.ms": 0}
	strs := map[string]string{"brokers": "", "topic": "", "group": "", "output": "", "guarantee": string(kafka.AtLeastOnce)}
	known := append(slices.Collect(maps.Keys(ints)), slices.Collect(maps.Keys(strs))...)
	slices.Sort(known)
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		if _, ok := strs[k]; ok {
			strs[k] = v
			continue
		}
		if _, ok := ints[k]; !ok {
			errs = append(errs, fmt.Errorf("unknown parameter %q (%s takes %s)", k, TopologyName, strings.Join(known, ", ")))
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("parameter %s: want a whole number ≥ 1, got %q", k, v))
			continue
		}
		ints[k] = n
	}
	for _, k := range []string{"brokers", "topic", "group", "output"} {
		if strs[k] == "" {
			errs = append(errs, fmt.Errorf("parameter %s is required (%s takes brokers, topic, group and output)", k, TopologyName))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	var brokers []string
	for b := range strings.SplitSeq(strs["brokers"], ",") {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	in := kafka.Config{BootstrapServers: brokers, Topic: strs["topic"], GroupID: strs["group"],
		ProcessingGuarantee: kafka.Guarantee(strs["guarantee"]),
		SessionTimeout:      time.Duration(ints["session.timeout.ms"]) * time.Millisecond}
	in.Retry.MaxAttempts = retryAttempts
	spouts, err := kafka.NewSpouts(in)
	if err != nil {
		return nil, nil, err
	}
	out := kafka.Config{BootstrapServers: brokers, Topic: strs["output"]}
	sinks, err := kafka.NewSinks(out)
	if err != nil {
		return nil, nil, err
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout(SpoutID, spouts.New, ints["spouts"])
	b.SetBolt(DecoderID, func() gale.Bolt { return &Decode{Field: kafka.FieldValue, Forward: true} }, ints["decoders"]).ShuffleGrouping(SpoutID)
	b.SetBolt(SinkID, sinks.New, ints["sinks"]).ShuffleGrouping(DecoderID)
	topo, err := b.Build()
	return topo, nil, err
}

// BenchTopology builds the topology of mode noack or ack: the Kafka
// spout reading topic in group from the brokers → Decode, counting the
// ids in tally. noack runs the spout with no-guarantee and no ackers;
// ack at-least-once with one acker, and sh's decoding executors, latency
// and max spout pending (noack ignores them). The spouts' factory is
// returned for their counters.
func BenchTopology(mode string, brokers []string, topic, group string, tally *Tally, sh Shape) (*gale.Topology, gale.Config, *kafka.Spouts, error) {
	cfg := kafka.Config{BootstrapServers: brokers, Topic: topic, GroupID: group}
	conf := gale.Config{}
	switch mode {
	case ModeNoAck:
		cfg.ProcessingGuarantee = kafka.NoGuarantee
		conf[gale.TopologyAckerExecutors] = 0
	case ModeAck:
		cfg.ProcessingGuarantee = kafka.AtLeastOnce
		conf[gale.TopologyAckerExecutors] = 1
		if sh.MaxSpoutPending > 0 {
			conf[gale.TopologyMaxSpoutPending] = sh.MaxSpoutPending
		}
		if sh.AutotuneInterval > 0 {
			conf[gale.TopologyMaxSpoutPendingAutotune] = true
			conf[gale.TopologyMaxSpoutPendingAutotuneIntervalSecs] = int(sh.AutotuneInterval / time.Second)
		}
	default:
		return nil, nil, nil, fmt.Errorf("benchkafka: mode %q has no topology", mode)
	}
	spouts, err := kafka.NewSpouts(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout(SpoutID, spouts.New, 1)
	bolts, latency := 1, time.Duration(0)
	if mode == ModeAck {
		bolts, latency = max(sh.Bolts, 1), sh.BoltLatency
	}
	b.SetBolt(DecoderID, func() gale.Bolt { return &Decode{Field: kafka.FieldValue, Tally: tally, Latency: latency} }, bolts).ShuffleGrouping(SpoutID)
	topo, err := b.Build()
	return topo, conf, spouts, err
}
