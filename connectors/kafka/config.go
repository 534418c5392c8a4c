package kafka

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/retry"
)

// Guarantee is a spout's processing guarantee, as in Storm's KafkaSpout.
type Guarantee string

const (
	// AtLeastOnce tracks every record and commits, per partition, only
	// the contiguous prefix of acked records (and given-up ones, once
	// their dead letter is stored): periodically and when the partition
	// is revoked. A crash replays what was not committed; nothing is lost.
	AtLeastOnce Guarantee = "at-least-once"
	// AtMostOnce commits each polled batch before emitting it; its
	// tuples are not tracked. A crash loses what was committed but not
	// processed; nothing is processed twice.
	AtMostOnce Guarantee = "at-most-once"
	// NoGuarantee emits untracked tuples and commits what was emitted,
	// periodically. A crash may lose or replay records.
	NoGuarantee Guarantee = "no-guarantee"
)

// Format is how a record's key or value is put in the tuple.
type Format string

const (
	Bytes  Format = "bytes"  // as []byte (a nil key stays nil)
	String Format = "string" // as string (a nil key is "")
)

// Config configures a Spout, a Sink and the dead-letter topic. It is
// plain data: the json tags are the keys of the map form ParseConfig
// reads (and of YAML and multilang configurations), and durations are
// whole milliseconds there. Zero fields take the defaults listed below.
type Config struct {
	// BootstrapServers are the seed brokers, host:port. Map form: a list
	// of strings, or one string of comma-separated addresses. Required.
	BootstrapServers []string `json:"bootstrap.servers"`
	// Topic is the topic the spout consumes (several, comma-separated,
	// are allowed) or the sink produces to. Required.
	Topic string `json:"topic"`
	// GroupID is the spout's consumer group: the spout tasks of a
	// component, and of every topology with the same group, share the
	// topic's partitions. Required by the spout.
	GroupID string `json:"group.id"`
	// ClientID names the client to the brokers. Default "gale".
	ClientID string `json:"client.id"`

	// ProcessingGuarantee is at-least-once (default), at-most-once or
	// no-guarantee (Storm's AT_LEAST_ONCE, AT_MOST_ONCE and NO_GUARANTEE
	// are accepted too).
	ProcessingGuarantee Guarantee `json:"processing.guarantee"`
	// AutoOffsetReset is where a partition with no committed offset is
	// read from: earliest (default) or latest.
	AutoOffsetReset string `json:"auto.offset.reset"`
	// MaxUncommittedOffsets caps the records of one partition the spout
	// holds open: emitted and not finished (in flight, waiting for a
	// retry, or waiting for the dead-letter sink), or fetched and not yet
	// emitted. At the cap the partition's fetching pauses until records
	// finish. Records finished behind an open one (acked, but not yet
	// committable) do not count: the spout keeps no memory for them, so
	// a record waiting out its retry backoff never stops new records
	// (a failure storm never starves new messages), and only the records
	// that wait for retries themselves can fill the cap. Records fetched
	// before the pause took effect are still emitted, so the cap may be
	// passed by up to a poll's worth. Default 10000.
	MaxUncommittedOffsets int `json:"max.uncommitted.offsets"`
	// MaxPollRecords is the most records handed from the fetcher to the
	// spout at once. Default 500.
	MaxPollRecords int `json:"max.poll.records"`
	// OffsetCommitPeriod is how often the spout commits. Map form:
	// offset.commit.period.ms. Default 1s.
	OffsetCommitPeriod time.Duration `json:"offset.commit.period.ms"`
	// FetchMaxWait is how long a broker may hold a fetch waiting for
	// data; it bounds how long a paused partition takes to resume.
	// Map form: fetch.max.wait.ms. Default 500ms.
	FetchMaxWait time.Duration `json:"fetch.max.wait.ms"`
	// SessionTimeout and HeartbeatInterval are the consumer group's
	// (map form: session.timeout.ms, heartbeat.interval.ms). Defaults
	// 10s and 3s: a member that dies (a worker killed) holds its
	// partitions until its session times out, and Kafka's own 45s would
	// stall them that long.
	SessionTimeout    time.Duration `json:"session.timeout.ms"`
	HeartbeatInterval time.Duration `json:"heartbeat.interval.ms"`
	// KeyFormat and ValueFormat say how the spout puts a record's key and
	// value in the tuple: bytes (default) or string.
	KeyFormat   Format `json:"key.format"`
	ValueFormat Format `json:"value.format"`

	// Retry is the spout's retry policy: the retry.* keys of the map form
	// (retry.ParsePolicy). The zero Policy is retry.DefaultPolicy();
	// otherwise zero fields but Jitter take retry's defaults.
	Retry retry.Policy `json:"-"`
	// DeadLetterFile is a JSONL file (retry.OpenFile) the spout sends
	// the records it gives up to.
	DeadLetterFile string `json:"deadletter.file"`
	// DeadLetterTopic is a topic (on the same cluster) the spout sends
	// the records it gives up to, each as a DeadLetter in JSON with the
	// record's key. Without a dead-letter file or topic the spout never
	// gives a record up for running out of attempts (retry.max.attempts
	// is ignored: it retries until the record is acked), and a record
	// failed as permanent is logged at error level, with its key and
	// value, and committed.
	DeadLetterTopic string `json:"deadletter.topic"`
	// DeadLetters, if set, makes the records given up go to a sink of the
	// program's own (a database, another system): it is called in each
	// task's Open, and the sink it returns is closed at that task's
	// Close. It is the Go way to plug a sink in; the map form names the
	// built-in ones. At most one of DeadLetters, DeadLetterFile and
	// DeadLetterTopic may be set.
	DeadLetters func(tc *gale.TopologyContext) (retry.DeadLetterSink, error) `json:"-"`

	// MaxBufferedRecords caps the records the sink has produced and not
	// yet had acknowledged; Execute blocks at the cap. Default 10000.
	MaxBufferedRecords int `json:"max.buffered.records"`
	// DeliveryTimeout bounds how long the sink tries to produce a record
	// before it fails the input (transient). Map form:
	// delivery.timeout.ms. Default 30s.
	DeliveryTimeout time.Duration `json:"delivery.timeout.ms"`
	// KeyField and ValueField name the input fields the sink produces as
	// the record's key and value ([]byte or string). Defaults "key" and
	// "value"; an input without the key field is produced with no key,
	// one without the value field is failed as permanent.
	KeyField   string `json:"key.field"`
	ValueField string `json:"value.field"`
}

// Defaults of Config's fields.
const (
	DefaultClientID              = "gale"
	DefaultMaxUncommittedOffsets = 10000
	DefaultMaxPollRecords        = 500
	DefaultOffsetCommitPeriod    = time.Second
	DefaultFetchMaxWait          = 500 * time.Millisecond
	DefaultMaxBufferedRecords    = 10000
	DefaultDeliveryTimeout       = 30 * time.Second
)

// withDefaults returns c with each zero field set to its default.
// DefaultSessionTimeout is the consumer group session's default timeout.
const DefaultSessionTimeout = 10 * time.Second

func (c Config) withDefaults() Config {
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.ProcessingGuarantee == "" {
		c.ProcessingGuarantee = AtLeastOnce
	}
	if c.AutoOffsetReset == "" {
		c.AutoOffsetReset = "earliest"
	}
	if c.MaxUncommittedOffsets == 0 {
		c.MaxUncommittedOffsets = DefaultMaxUncommittedOffsets
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = DefaultMaxPollRecords
	}
	if c.OffsetCommitPeriod == 0 {
		c.OffsetCommitPeriod = DefaultOffsetCommitPeriod
	}
	if c.FetchMaxWait == 0 {
		c.FetchMaxWait = DefaultFetchMaxWait
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.KeyFormat == "" {
		c.KeyFormat = Bytes
	}
	if c.ValueFormat == "" {
		c.ValueFormat = Bytes
	}
	if c.Retry == (retry.Policy{}) {
		c.Retry = retry.DefaultPolicy()
	} else {
		c.Retry = c.Retry.WithDefaults()
	}
	if c.MaxBufferedRecords == 0 {
		c.MaxBufferedRecords = DefaultMaxBufferedRecords
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = DefaultDeliveryTimeout
	}
	if c.KeyField == "" {
		c.KeyField = "key"
	}
	if c.ValueField == "" {
		c.ValueField = "value"
	}
	return c
}

// topics is the list the spout subscribes to.
func (c Config) topics() []string {
	var ts []string
	for t := range strings.SplitSeq(c.Topic, ",") {
		if t = strings.TrimSpace(t); t != "" {
			ts = append(ts, t)
		}
	}
	return ts
}

// validateCommon checks the keys every user of a Config needs.
func (c Config) validateCommon() error {
	if len(c.BootstrapServers) == 0 {
		return errors.New("kafka: bootstrap.servers is empty; set it to the brokers' host:port addresses")
	}
	for _, s := range c.BootstrapServers {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("kafka: bootstrap.servers %q has an empty address", c.BootstrapServers)
		}
	}
	if len(c.topics()) == 0 {
		return errors.New("kafka: topic is empty; set the topic to consume or produce to")
	}
	return nil
}

// ValidateSpout names the first key of c (after defaults) that a Spout
// cannot work with.
func (c Config) ValidateSpout() error {
	c = c.withDefaults()
	if err := c.validateCommon(); err != nil {
		return err
	}
	if c.GroupID == "" {
		return errors.New("kafka: group.id is empty; the spout commits its offsets to a consumer group, set group.id")
	}
	switch c.ProcessingGuarantee {
	case AtLeastOnce, AtMostOnce, NoGuarantee:
	default:
		return fmt.Errorf("kafka: processing.guarantee %q is not one of %s, %s, %s", c.ProcessingGuarantee, AtLeastOnce, AtMostOnce, NoGuarantee)
	}
	if c.AutoOffsetReset != "earliest" && c.AutoOffsetReset != "latest" {
		return fmt.Errorf("kafka: auto.offset.reset %q is not earliest or latest", c.AutoOffsetReset)
	}
	switch {
	case c.MaxUncommittedOffsets < 1:
		return fmt.Errorf("kafka: max.uncommitted.offsets must be ≥ 1, got %d", c.MaxUncommittedOffsets)
	case c.MaxPollRecords < 1:
		return fmt.Errorf("kafka: max.poll.records must be ≥ 1, got %d", c.MaxPollRecords)
	case c.OffsetCommitPeriod < time.Millisecond:
		return fmt.Errorf("kafka: offset.commit.period.ms must be ≥ 1, got %s", c.OffsetCommitPeriod)
	case c.FetchMaxWait < time.Millisecond:
		return fmt.Errorf("kafka: fetch.max.wait.ms must be ≥ 1, got %s", c.FetchMaxWait)
	case c.SessionTimeout < 0:
		return fmt.Errorf("kafka: session.timeout.ms must be ≥ 0, got %s", c.SessionTimeout)
	case c.HeartbeatInterval < 0:
		return fmt.Errorf("kafka: heartbeat.interval.ms must be ≥ 0, got %s", c.HeartbeatInterval)
	}
	for key, f := range map[string]Format{"key.format": c.KeyFormat, "value.format": c.ValueFormat} {
		if f != Bytes && f != String {
			return fmt.Errorf("kafka: %s %q is not bytes or string", key, f)
		}
	}
	if c.DeadLetterFile != "" && c.DeadLetterTopic != "" {
		return errors.New("kafka: deadletter.file and deadletter.topic are both set; choose one dead-letter sink")
	}
	if c.DeadLetters != nil && (c.DeadLetterFile != "" || c.DeadLetterTopic != "") {
		return errors.New("kafka: DeadLetters is set and so is deadletter.file or deadletter.topic; choose one dead-letter sink")
	}
	if err := c.Retry.Validate(); err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	return nil
}

// ValidateSink names the first key of c (after defaults) that a Sink
// cannot work with.
func (c Config) ValidateSink() error {
	c = c.withDefaults()
	if err := c.validateCommon(); err != nil {
		return err
	}
	if ts := c.topics(); len(ts) != 1 {
		return fmt.Errorf("kafka: the sink produces to one topic, topic names %d: %q", len(ts), c.Topic)
	}
	switch {
	case c.MaxBufferedRecords < 1:
		return fmt.Errorf("kafka: max.buffered.records must be ≥ 1, got %d", c.MaxBufferedRecords)
	case c.DeliveryTimeout < time.Millisecond:
		return fmt.Errorf("kafka: delivery.timeout.ms must be ≥ 1, got %s", c.DeliveryTimeout)
	}
	return nil
}

// configKeys are the keys ParseConfig knows, besides the retry.* ones.
var configKeys = []string{
	"bootstrap.servers", "topic", "group.id", "client.id", "processing.guarantee",
	"auto.offset.reset", "max.uncommitted.offsets", "max.poll.records",
	"offset.commit.period.ms", "fetch.max.wait.ms", "session.timeout.ms",
	"heartbeat.interval.ms", "key.format", "value.format", "deadletter.file",
	"deadletter.topic", "max.buffered.records", "delivery.timeout.ms",
	"key.field", "value.field",
}

// ParseConfig reads a Config from its map form (decoded YAML or JSON, a
// multilang handshake): the keys are Config's json tags and the retry.*
// keys of retry.ParsePolicy. An unknown key or a value of the wrong type
// is an error naming the key. It does not validate the values: the Spout
// and Sink constructors do (ValidateSpout, ValidateSink).
func ParseConfig(m map[string]any) (Config, error) {
	var c Config
	pol, err := retry.ParsePolicy(m)
	if err != nil {
		return Config{}, fmt.Errorf("kafka: %w", err)
	}
	c.Retry = pol
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad key, in a stable order
	for _, k := range keys {
		if strings.HasPrefix(k, "retry.") {
			continue
		}
		v := m[k]
		var err error
		switch k {
		case "bootstrap.servers":
			c.BootstrapServers, err = stringList(v)
		case "topic":
			c.Topic, err = str(v)
		case "group.id":
			c.GroupID, err = str(v)
		case "client.id":
			c.ClientID, err = str(v)
		case "processing.guarantee":
			var s string
			s, err = str(v)
			c.ProcessingGuarantee = parseGuarantee(s)
		case "auto.offset.reset":
			c.AutoOffsetReset, err = str(v)
		case "max.uncommitted.offsets":
			c.MaxUncommittedOffsets, err = integer(v)
		case "max.poll.records":
			c.MaxPollRecords, err = integer(v)
		case "offset.commit.period.ms":
			c.OffsetCommitPeriod, err = millis(v)
		case "fetch.max.wait.ms":
			c.FetchMaxWait, err = millis(v)
		case "session.timeout.ms":
			c.SessionTimeout, err = millis(v)
		case "heartbeat.interval.ms":
			c.HeartbeatInterval, err = millis(v)
		case "key.format":
			var s string
			s, err = str(v)
			c.KeyFormat = Format(s)
		case "value.format":
			var s string
			s, err = str(v)
			c.ValueFormat = Format(s)
		case "deadletter.file":
			c.DeadLetterFile, err = str(v)
		case "deadletter.topic":
			c.DeadLetterTopic, err = str(v)
		case "max.buffered.records":
			c.MaxBufferedRecords, err = integer(v)
		case "delivery.timeout.ms":
			c.DeliveryTimeout, err = millis(v)
		case "key.field":
			c.KeyField, err = str(v)
		case "value.field":
			c.ValueField, err = str(v)
		default:
			return Config{}, fmt.Errorf("kafka: unknown key %q; the keys are %s and the retry.* keys", k, strings.Join(configKeys, ", "))
		}
		if err != nil {
			return Config{}, fmt.Errorf("kafka: key %q: %w", k, err)
		}
	}
	return c, nil
}

// Map returns c in its map form, the one ParseConfig reads: the keys of
// the fields set, durations in milliseconds, and a policy other than the
// zero one as all six retry.* keys.
func (c Config) Map() map[string]any {
	m := make(map[string]any)
	set := func(k string, v any, ok bool) {
		if ok {
			m[k] = v
		}
	}
	set("bootstrap.servers", slices.Clone(c.BootstrapServers), len(c.BootstrapServers) > 0)
	set("topic", c.Topic, c.Topic != "")
	set("group.id", c.GroupID, c.GroupID != "")
	set("client.id", c.ClientID, c.ClientID != "")
	set("processing.guarantee", string(c.ProcessingGuarantee), c.ProcessingGuarantee != "")
	set("auto.offset.reset", c.AutoOffsetReset, c.AutoOffsetReset != "")
	set("max.uncommitted.offsets", c.MaxUncommittedOffsets, c.MaxUncommittedOffsets != 0)
	set("max.poll.records", c.MaxPollRecords, c.MaxPollRecords != 0)
	set("offset.commit.period.ms", c.OffsetCommitPeriod.Milliseconds(), c.OffsetCommitPeriod != 0)
	set("fetch.max.wait.ms", c.FetchMaxWait.Milliseconds(), c.FetchMaxWait != 0)
	set("session.timeout.ms", c.SessionTimeout.Milliseconds(), c.SessionTimeout != 0)
	set("heartbeat.interval.ms", c.HeartbeatInterval.Milliseconds(), c.HeartbeatInterval != 0)
	set("key.format", string(c.KeyFormat), c.KeyFormat != "")
	set("value.format", string(c.ValueFormat), c.ValueFormat != "")
	set("deadletter.file", c.DeadLetterFile, c.DeadLetterFile != "")
	set("deadletter.topic", c.DeadLetterTopic, c.DeadLetterTopic != "")
	set("max.buffered.records", c.MaxBufferedRecords, c.MaxBufferedRecords != 0)
	set("delivery.timeout.ms", c.DeliveryTimeout.Milliseconds(), c.DeliveryTimeout != 0)
	set("key.field", c.KeyField, c.KeyField != "")
	set("value.field", c.ValueField, c.ValueField != "")
	if c.Retry != (retry.Policy{}) {
		maps.Copy(m, c.Retry.Map())
	}
	return m
}

// MarshalJSON encodes c in its map form (Map).
func (c Config) MarshalJSON() ([]byte, error) { return json.Marshal(c.Map()) }

// UnmarshalJSON decodes the map form, as ParseConfig does.
func (c *Config) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("kafka: config: %w", err)
	}
	parsed, err := ParseConfig(m)
	if err != nil {
		return err
	}
	*c = parsed
	return nil
}

// parseGuarantee accepts Storm's spelling (AT_LEAST_ONCE) too.
func parseGuarantee(s string) Guarantee {
	switch strings.ToLower(strings.ReplaceAll(s, "_", "-")) {
	case "at-least-once":
		return AtLeastOnce
	case "at-most-once":
		return AtMostOnce
	case "no-guarantee":
		return NoGuarantee
	}
	return Guarantee(s)
}

func str(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %T %v", v, v)
	}
	return s, nil
}

func stringList(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		var out []string
		for s := range strings.SplitSeq(x, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	case []string:
		return slices.Clone(x), nil
	case []any:
		out := make([]string, 0, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("element %d: want a string, got %T %v", i, e, e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a list of host:port strings or one comma-separated string, got %T %v", v, v)
}

func integer(v any) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case int64:
		if x >= math.MinInt32 && x <= math.MaxInt32 {
			return int(x), nil
		}
		return 0, fmt.Errorf("%d is out of range", x)
	case int32:
		return int(x), nil
	case uint64:
		if x <= math.MaxInt32 {
			return int(x), nil
		}
		return 0, fmt.Errorf("%d is out of range", x)
	case float64: // JSON numbers
		if x == math.Trunc(x) && math.Abs(x) <= math.MaxInt32 {
			return int(x), nil
		}
		return 0, fmt.Errorf("want an integer, got %v", x)
	}
	return 0, fmt.Errorf("want an integer, got %T %v", v, v)
}

func millis(v any) (time.Duration, error) {
	n, err := integer(v)
	if err != nil {
		return 0, fmt.Errorf("%w (milliseconds)", err)
	}
	return time.Duration(n) * time.Millisecond, nil
}
