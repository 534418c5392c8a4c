package jetstream_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale/connectors/jetstream"
	"github.com/gale-stream/gale/retry"
)

func TestParseConfigReadsEveryKey(t *testing.T) {
	c, err := jetstream.ParseConfig(map[string]any{
		"url": "nats://a:4222", "connection.name": "orders", "stream": "ORDERS", "consumer": "work",
		"filter.subject": "orders.new", "ack.wait.ms": 90000, "max.ack.pending": 64.0, "fetch.max.wait.ms": int64(250),
		"subject": "out", "data.field": "body", "msgid.field": "id", "publish.max.pending": 8, "publish.timeout.ms": 1500,
		"deadletter.subject": "dlq", "retry.initial.delay.ms": 20, "retry.max.attempts": 7, "retry.retries.per.new": 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := jetstream.Config{
		URL: "nats://a:4222", Name: "orders", Stream: "ORDERS", Consumer: "work", FilterSubject: "orders.new",
		AckWait: 90 * time.Second, MaxAckPending: 64, FetchMaxWait: 250 * time.Millisecond,
		Subject: "out", DataField: "body", MsgIDField: "id", PublishMaxPending: 8, PublishTimeout: 1500 * time.Millisecond,
		DeadLetterSubject: "dlq",
	}
	want.Retry = retry.DefaultPolicy()
	want.Retry.Initial, want.Retry.MaxAttempts, want.Retry.RetriesPerNew = 20*time.Millisecond, 7, 2
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
}

func TestParseConfigNamesTheKeyAtFault(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    map[string]any
		want string
	}{
		{"unknown key", map[string]any{"stream": "S", "consumr": "c"}, `unknown key "consumr"`},
		{"string key given a number", map[string]any{"stream": 3}, "stream must be a string"},
		{"int key given a string", map[string]any{"max.ack.pending": "many"}, "max.ack.pending must be an integer"},
		{"int key given a fraction", map[string]any{"max.ack.pending": 1.5}, "max.ack.pending must be an integer"},
		{"int key below 1", map[string]any{"publish.max.pending": 0}, "publish.max.pending must be ≥ 1"},
		{"duration not positive", map[string]any{"ack.wait.ms": -5}, "ack.wait.ms must be a positive number of milliseconds"},
		{"retry key wrong type", map[string]any{"retry.multiplier": "x"}, `"retry.multiplier"`},
		{"unknown retry key", map[string]any{"retry.attempts": 3}, `"retry.attempts"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jetstream.ParseConfig(tc.m)
			if !errors.Is(err, jetstream.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseConfig(%v) = %v; want an ErrConfig containing %q", tc.m, err, tc.want)
			}
		})
	}
}

func TestSpoutAndSinkConstructorsCheckTheirKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  jetstream.Config
		sink bool
		want string
	}{
		{"spout without stream", jetstream.Config{Consumer: "c"}, false, "stream is required"},
		{"spout without consumer", jetstream.Config{Stream: "S"}, false, "consumer is required"},
		{"consumer with a dot", jetstream.Config{Stream: "S", Consumer: "a.b"}, false, `consumer "a.b"`},
		{"two dead-letter sinks", jetstream.Config{Stream: "S", Consumer: "c", DeadLetterFile: "f", DeadLetterSubject: "d"}, false, "deadletter.file"},
		{"bad retry policy", jetstream.Config{Stream: "S", Consumer: "c", Retry: retry.Policy{Multiplier: 0.5}}, false, "multiplier"},
		{"sink without subject", jetstream.Config{}, true, "subject"},
		{"sink with both subjects", jetstream.Config{Subject: "a", SubjectField: "b"}, true, "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errs [3]error
			if tc.sink {
				_, errs[0] = jetstream.NewSink(tc.cfg)
				_, errs[1] = jetstream.NewSinks(tc.cfg)
				errs[2] = tc.cfg.ValidateSink()
			} else {
				_, errs[0] = jetstream.NewSpout(tc.cfg)
				_, errs[1] = jetstream.NewSpouts(tc.cfg)
				errs[2] = tc.cfg.ValidateSpout()
			}
			for _, err := range errs {
				if !errors.Is(err, jetstream.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v; want an ErrConfig containing %q", err, tc.want)
				}
			}
		})
	}
}

func TestConfigMapAndJSONRoundTrip(t *testing.T) {
	in := map[string]any{
		"url": "nats://a:4222", "stream": "ORDERS", "consumer": "work", "ack.wait.ms": 90000,
		"max.ack.pending": 64, "fetch.max.wait.ms": 250, "msgid.field": "id", "publish.timeout.ms": 1500,
		"deadletter.file": "/tmp/dead.jsonl", "retry.initial.delay.ms": 20, "retry.jitter": 0.5,
	}
	c, err := jetstream.ParseConfig(in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := jetstream.ParseConfig(c.Map())
	if err != nil || !reflect.DeepEqual(again, c) {
		t.Fatalf("ParseConfig(Map()) = %+v, %v; want %+v", again, err, c)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"ack.wait.ms":90000`) {
		t.Fatalf("JSON %s: durations must be milliseconds under their .ms keys", b)
	}
	var decoded jetstream.Config
	if err := json.Unmarshal(b, &decoded); err != nil || !reflect.DeepEqual(decoded, c) {
		t.Fatalf("JSON round trip: %+v, %v; want %+v", decoded, err, c)
	}
	if err := json.Unmarshal([]byte(`{"stream": "S", "acks": 1}`), &decoded); !errors.Is(err, jetstream.ErrConfig) || !strings.Contains(err.Error(), `"acks"`) {
		t.Fatalf("unmarshal of an unknown key: %v, want an ErrConfig naming it", err)
	}
}
