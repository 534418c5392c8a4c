package jetstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/retry"
)

// ErrConfig is wrapped by every configuration error; test with errors.Is.
var ErrConfig = errors.New("jetstream: invalid config")

// Defaults of the keys that have one.
const (
	DefaultMaxAckPending     = 1000
	DefaultFetchMaxWait      = 500 * time.Millisecond
	DefaultDataField         = "data"
	DefaultPublishMaxPending = 256
	DefaultPublishTimeout    = 5 * time.Second
)

// Config is the configuration of the spout, the sink bolt and the
// dead-letter sink, as plain data: the json tags name the keys of the map
// form that ParseConfig reads and Map writes (durations there are integers
// of milliseconds; JSON encodes and decodes that form too). The zero
// value of a field means its default. Which keys apply to which part is in
// the package doc.
type Config struct {
	// URL is the server to connect to, or a comma-separated list
	// (default nats://127.0.0.1:4222).
	URL string `json:"url"`
	// Name is the client connection's name, shown by the server (default
	// the topology and component).
	Name string `json:"connection.name"`

	// Stream is the stream the spout reads (required for the spout). The
	// sink, if it is set, makes the server refuse a publish that would be
	// stored in another stream.
	Stream string `json:"stream"`
	// Consumer is the durable pull consumer's name (required for the
	// spout). The spout creates it, or updates it to this config.
	Consumer string `json:"consumer"`
	// FilterSubject narrows the consumer to the subjects matching it
	// (default: all the stream's subjects).
	FilterSubject string `json:"filter.subject"`
	// AckWait is how long the server waits for the spout's ack before it
	// redelivers a message (map key in ms; default twice
	// topology.message.timeout.secs). It must be longer than the
	// topology's message timeout, or a tree still in flight would be
	// redelivered.
	AckWait time.Duration `json:"ack.wait.ms"`
	// MaxAckPending caps the messages delivered to the spout and not yet
	// acked or terminated (default 1000): everything the spout holds,
	// emitted or waiting to be, is within it.
	MaxAckPending int `json:"max.ack.pending"`
	// FetchMaxWait is how long one pull stays open at the server (map key
	// in ms; default 500). Each pull asks for the task's share of
	// MaxAckPending.
	FetchMaxWait time.Duration `json:"fetch.max.wait.ms"`

	// Subject is the subject the sink publishes to, and the dead-letter
	// sink's when DeadLetterSubject is empty (required for the sink
	// unless SubjectField is set).
	Subject string `json:"subject"`
	// SubjectField is the input field holding the subject to publish each
	// tuple to (a string), instead of Subject.
	SubjectField string `json:"subject.field"`
	// DataField is the input field holding the message body, a []byte or a
	// string (default "data").
	DataField string `json:"data.field"`
	// MsgIDField is the input field whose value (formatted with %v) is the
	// message's Nats-Msg-Id header, so that the stream's duplicate window
	// stores a replayed tuple once (default: no id; every publish is
	// stored).
	MsgIDField string `json:"msgid.field"`
	// PublishMaxPending caps the sink's publishes waiting for their PubAck
	// (default 256).
	PublishMaxPending int `json:"publish.max.pending"`
	// PublishTimeout is how long the sink waits for a PubAck before it
	// fails the input (map key in ms; default 5000).
	PublishTimeout time.Duration `json:"publish.timeout.ms"`

	// DeadLetterFile is a JSONL file the spout appends given-up messages
	// to (retry.OpenFile).
	DeadLetterFile string `json:"deadletter.file"`
	// DeadLetterSubject is a subject the spout publishes given-up
	// messages to, as JSON, waiting for the stream to store each. At most
	// one of DeadLetterFile and DeadLetterSubject may be set. With
	// neither, only permanent failures are given up (logged and
	// terminated); a message out of attempts is retried until acked.
	DeadLetterSubject string `json:"deadletter.subject"`
	// DeadLetters, if set, makes the records given up go to a sink of the
	// program's own (a database, another system): it is called in each
	// task's Open, and the sink it returns is closed at that task's
	// Close. It is the Go way to plug a sink in; the map form names the
	// built-in ones. At most one of DeadLetters, DeadLetterFile and
	// DeadLetterSubject may be set.
	DeadLetters func(tc *gale.TopologyContext) (retry.DeadLetterSink, error) `json:"-"`

	// Retry is the spout's retry policy (the retry.* keys; the zero value
	// means retry.DefaultPolicy).
	Retry retry.Policy `json:"-"`
}

// keySetter parses one key's value into the config.
type keySetter func(c *Config, key string, v any) error

var configKeys = map[string]keySetter{
	"url":                 setString(func(c *Config) *string { return &c.URL }),
	"connection.name":     setString(func(c *Config) *string { return &c.Name }),
	"stream":              setString(func(c *Config) *string { return &c.Stream }),
	"consumer":            setString(func(c *Config) *string { return &c.Consumer }),
	"filter.subject":      setString(func(c *Config) *string { return &c.FilterSubject }),
	"ack.wait.ms":         setMillis(func(c *Config) *time.Duration { return &c.AckWait }),
	"max.ack.pending":     setInt(func(c *Config) *int { return &c.MaxAckPending }),
	"fetch.max.wait.ms":   setMillis(func(c *Config) *time.Duration { return &c.FetchMaxWait }),
	"subject":             setString(func(c *Config) *string { return &c.Subject }),
	"subject.field":       setString(func(c *Config) *string { return &c.SubjectField }),
	"data.field":          setString(func(c *Config) *string { return &c.DataField }),
	"msgid.field":         setString(func(c *Config) *string { return &c.MsgIDField }),
	"publish.max.pending": setInt(func(c *Config) *int { return &c.PublishMaxPending }),
	"publish.timeout.ms":  setMillis(func(c *Config) *time.Duration { return &c.PublishTimeout }),
	"deadletter.file":     setString(func(c *Config) *string { return &c.DeadLetterFile }),
	"deadletter.subject":  setString(func(c *Config) *string { return &c.DeadLetterSubject }),
}

// ParseConfig reads the map form of Config: the keys above and the retry.*
// keys of retry.ParsePolicy. An unknown key, a value of the wrong type or
// out of range is an error naming the key; the result is not validated
// for a role (ValidateSpout and ValidateSink do that).
func ParseConfig(m map[string]any) (Config, error) {
	var c Config
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "retry.") {
			continue
		}
		set, ok := configKeys[k]
		if !ok {
			return Config{}, fmt.Errorf("%w: unknown key %q (known: %s, and the retry.* keys)", ErrConfig, k, strings.Join(knownKeys(), ", "))
		}
		if err := set(&c, k, m[k]); err != nil {
			return Config{}, err
		}
	}
	p, err := retry.ParsePolicy(m)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.Retry = p
	return c, nil
}

// Map returns c in its map form, the one ParseConfig reads: the keys of
// the fields set, durations in milliseconds, and a policy other than the
// zero one as all six retry.* keys.
func (c Config) Map() map[string]any {
	m := make(map[string]any)
	str := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	num := func(k string, v int) {
		if v != 0 {
			m[k] = v
		}
	}
	ms := func(k string, v time.Duration) {
		if v != 0 {
			m[k] = v.Milliseconds()
		}
	}
	str("url", c.URL)
	str("connection.name", c.Name)
	str("stream", c.Stream)
	str("consumer", c.Consumer)
	str("filter.subject", c.FilterSubject)
	ms("ack.wait.ms", c.AckWait)
	num("max.ack.pending", c.MaxAckPending)
	ms("fetch.max.wait.ms", c.FetchMaxWait)
	str("subject", c.Subject)
	str("subject.field", c.SubjectField)
	str("data.field", c.DataField)
	str("msgid.field", c.MsgIDField)
	num("publish.max.pending", c.PublishMaxPending)
	ms("publish.timeout.ms", c.PublishTimeout)
	str("deadletter.file", c.DeadLetterFile)
	str("deadletter.subject", c.DeadLetterSubject)
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
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	parsed, err := ParseConfig(m)
	if err != nil {
		return err
	}
	*c = parsed
	return nil
}

func knownKeys() []string {
	ks := make([]string, 0, len(configKeys))
	for k := range configKeys {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func setString(field func(*Config) *string) keySetter {
	return func(c *Config, key string, v any) error {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%w: %s must be a string, got %v (%T)", ErrConfig, key, v, v)
		}
		*field(c) = s
		return nil
	}
}

func setInt(field func(*Config) *int) keySetter {
	return func(c *Config, key string, v any) error {
		n, err := intValue(key, v)
		if err != nil {
			return err
		}
		if n < 1 {
			return fmt.Errorf("%w: %s must be ≥ 1, got %d", ErrConfig, key, n)
		}
		*field(c) = int(n)
		return nil
	}
}

func setMillis(field func(*Config) *time.Duration) keySetter {
	return func(c *Config, key string, v any) error {
		n, err := intValue(key, v)
		if err != nil {
			return err
		}
		if n < 1 || n > math.MaxInt64/int64(time.Millisecond) {
			return fmt.Errorf("%w: %s must be a positive number of milliseconds, got %d", ErrConfig, key, n)
		}
		*field(c) = time.Duration(n) * time.Millisecond
		return nil
	}
}

// intValue accepts the integer types and integral floats (JSON numbers).
func intValue(key string, v any) (int64, error) {
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	case uint32:
		return int64(n), nil
	case uint64:
		if n <= math.MaxInt64 {
			return int64(n), nil
		}
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int64(n), nil
		}
	}
	return 0, fmt.Errorf("%w: %s must be an integer, got %v (%T)", ErrConfig, key, v, v)
}

// withDefaults fills the fields left zero.
func (c Config) withDefaults() Config {
	if c.URL == "" {
		c.URL = nats.DefaultURL
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = DefaultMaxAckPending
	}
	if c.FetchMaxWait == 0 {
		c.FetchMaxWait = DefaultFetchMaxWait
	}
	if c.DataField == "" {
		c.DataField = DefaultDataField
	}
	if c.PublishMaxPending == 0 {
		c.PublishMaxPending = DefaultPublishMaxPending
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.Retry == (retry.Policy{}) {
		c.Retry = retry.DefaultPolicy()
	} else {
		c.Retry = c.Retry.WithDefaults()
	}
	return c
}

// validateCommon checks the fields every role uses.
func (c Config) validateCommon() error {
	if c.MaxAckPending < 0 {
		return fmt.Errorf("%w: max.ack.pending must be ≥ 1, got %d", ErrConfig, c.MaxAckPending)
	}
	if c.PublishMaxPending < 0 {
		return fmt.Errorf("%w: publish.max.pending must be ≥ 1, got %d", ErrConfig, c.PublishMaxPending)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"ack.wait.ms", c.AckWait}, {"fetch.max.wait.ms", c.FetchMaxWait}, {"publish.timeout.ms", c.PublishTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("%w: %s must be positive, got %v", ErrConfig, d.key, d.v)
		}
	}
	return nil
}

// ValidateSpout checks the config for the spout, its defaults filled in
// (NewSpout and NewSpouts call it).
func (c Config) ValidateSpout() error { return c.withDefaults().validateSpout() }

// ValidateSink checks the config for the sink bolt, its defaults filled
// in (NewSink and NewSinks call it).
func (c Config) ValidateSink() error { return c.withDefaults().validateSink() }

// validateSpout checks a config, defaults filled in, for the spout.
func (c Config) validateSpout() error {
	if err := c.validateCommon(); err != nil {
		return err
	}
	if c.Stream == "" {
		return fmt.Errorf("%w: stream is required for the spout: the stream to read", ErrConfig)
	}
	if c.Consumer == "" {
		return fmt.Errorf("%w: consumer is required for the spout: the durable consumer's name, kept across restarts", ErrConfig)
	}
	if strings.ContainsAny(c.Consumer, ".*> \t") {
		return fmt.Errorf("%w: consumer %q must not contain '.', '*', '>' or white space", ErrConfig, c.Consumer)
	}
	if c.DeadLetters != nil && (c.DeadLetterFile != "" || c.DeadLetterSubject != "") {
		return fmt.Errorf("%w: DeadLetters is set and so is deadletter.file or deadletter.subject; choose one dead-letter sink", ErrConfig)
	}
	if c.DeadLetterFile != "" && c.DeadLetterSubject != "" {
		return fmt.Errorf("%w: set at most one of deadletter.file (%q) and deadletter.subject (%q)", ErrConfig, c.DeadLetterFile, c.DeadLetterSubject)
	}
	if err := c.Retry.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// validateSink checks a config, defaults filled in, for the sink bolt.
func (c Config) validateSink() error {
	if err := c.validateCommon(); err != nil {
		return err
	}
	if c.Subject == "" && c.SubjectField == "" {
		return fmt.Errorf("%w: the sink needs subject (the subject to publish to) or subject.field (the input field holding it)", ErrConfig)
	}
	if c.Subject != "" && c.SubjectField != "" {
		return fmt.Errorf("%w: set one of subject (%q) and subject.field (%q), not both", ErrConfig, c.Subject, c.SubjectField)
	}
	return nil
}
