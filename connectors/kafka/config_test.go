package kafka_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/connectors/kafka"
	"github.com/gale-stream/gale/retry"
)

func TestParseConfig(t *testing.T) {
	c, err := kafka.ParseConfig(map[string]any{
		"bootstrap.servers":       "a:9092, b:9092",
		"topic":                   "orders",
		"group.id":                "g",
		"processing.guarantee":    "AT_MOST_ONCE",
		"offset.commit.period.ms": 250,
		"max.uncommitted.offsets": float64(50), // as JSON decodes it
		"value.format":            "string",
		"retry.max.attempts":      3,
		"deadletter.file":         "/tmp/dl.jsonl",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.BootstrapServers) != 2 || c.BootstrapServers[1] != "b:9092" || c.ProcessingGuarantee != kafka.AtMostOnce ||
		c.OffsetCommitPeriod != 250*time.Millisecond || c.MaxUncommittedOffsets != 50 || c.ValueFormat != kafka.String ||
		c.Retry.MaxAttempts != 3 || c.DeadLetterFile != "/tmp/dl.jsonl" {
		t.Errorf("got %+v", c)
	}
	if err := c.ValidateSpout(); err != nil {
		t.Errorf("ValidateSpout: %v", err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		m    map[string]any
		want string // in the error
	}{
		{"unknown key", map[string]any{"bootstrap.server": "a:1"}, `"bootstrap.server"`},
		{"wrong type", map[string]any{"max.poll.records": "many"}, `"max.poll.records"`},
		{"fractional ms", map[string]any{"offset.commit.period.ms": 1.5}, `"offset.commit.period.ms"`},
		{"servers of the wrong type", map[string]any{"bootstrap.servers": []any{"a:1", 2}}, `"bootstrap.servers"`},
		{"unknown retry key", map[string]any{"retry.maxattempts": 3}, `retry.maxattempts`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kafka.ParseConfig(tc.m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := kafka.Config{BootstrapServers: []string{"a:1"}, Topic: "t", GroupID: "g"}
	cases := []struct {
		name  string
		edit  func(*kafka.Config)
		sink  bool
		wants string
	}{
		{"no servers", func(c *kafka.Config) { c.BootstrapServers = nil }, false, "bootstrap.servers"},
		{"no topic", func(c *kafka.Config) { c.Topic = " , " }, false, "topic"},
		{"no group", func(c *kafka.Config) { c.GroupID = "" }, false, "group.id"},
		{"bad guarantee", func(c *kafka.Config) { c.ProcessingGuarantee = "exactly-once" }, false, "processing.guarantee"},
		{"bad reset", func(c *kafka.Config) { c.AutoOffsetReset = "middle" }, false, "auto.offset.reset"},
		{"negative cap", func(c *kafka.Config) { c.MaxUncommittedOffsets = -1 }, false, "max.uncommitted.offsets"},
		{"bad format", func(c *kafka.Config) { c.ValueFormat = "json" }, false, "value.format"},
		{"two dead-letter sinks", func(c *kafka.Config) { c.DeadLetterFile, c.DeadLetterTopic = "f", "t" }, false, "deadletter"},
		{"sink to two topics", func(c *kafka.Config) { c.Topic = "a,b" }, true, "one topic"},
		{"sink buffer", func(c *kafka.Config) { c.MaxBufferedRecords = -3 }, true, "max.buffered.records"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			var err error
			if tc.sink {
				err = c.ValidateSink()
			} else {
				err = c.ValidateSpout()
			}
			if err == nil || !strings.Contains(err.Error(), tc.wants) {
				t.Errorf("got %v, want an error naming %s", err, tc.wants)
			}
		})
	}
	if err := ok.ValidateSpout(); err != nil {
		t.Errorf("valid spout config: %v", err)
	}
	if err := ok.ValidateSink(); err != nil {
		t.Errorf("valid sink config: %v", err)
	}
	if _, err := kafka.NewSpout(kafka.Config{}); err == nil {
		t.Error("NewSpout of an empty config succeeded")
	}
}

// TestConfigMapRoundTrip: Map gives the map form ParseConfig reads back,
// and JSON carries it (durations in ms under the dotted keys).
func TestConfigMapRoundTrip(t *testing.T) {
	c := kafka.Config{
		BootstrapServers: []string{"a:1", "b:2"}, Topic: "t", GroupID: "g", ClientID: "c",
		ProcessingGuarantee: kafka.NoGuarantee, AutoOffsetReset: "latest", MaxUncommittedOffsets: 7,
		MaxPollRecords: 8, OffsetCommitPeriod: 9 * time.Millisecond, FetchMaxWait: 10 * time.Millisecond,
		SessionTimeout: 11 * time.Second, HeartbeatInterval: 12 * time.Millisecond, KeyFormat: kafka.String,
		ValueFormat: kafka.Bytes, DeadLetterTopic: "dead", MaxBufferedRecords: 13,
		DeliveryTimeout: 14 * time.Second, KeyField: "k", ValueField: "v",
		Retry: retry.Policy{Initial: time.Millisecond, Multiplier: 3, Max: time.Second, Jitter: 0, MaxAttempts: -1, RetriesPerNew: 2},
	}
	back, err := kafka.ParseConfig(c.Map())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("ParseConfig(Map()):\n got %+v\nwant %+v", back, c)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"offset.commit.period.ms":9`) {
		t.Errorf("JSON %s: want offset.commit.period.ms in milliseconds", b)
	}
	var fromJSON kafka.Config
	if err := json.Unmarshal(b, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, c) {
		t.Errorf("JSON round trip:\n got %+v\nwant %+v", fromJSON, c)
	}
	if err := json.Unmarshal([]byte(`{"topic": 3}`), &fromJSON); err == nil || !strings.Contains(err.Error(), `"topic"`) {
		t.Errorf("decoding a number as topic: %v, want an error naming topic", err)
	}
}
