package kafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/retry"
)

// exactHeaders are record headers a map of strings cannot keep: a key
// twice (values in order), a binary value, a null value and an empty one.
var exactHeaders = []kgo.RecordHeader{
	{Key: "trace", Value: []byte("a")},
	{Key: "bin", Value: []byte{0xff, 0x00, 0xfe, '\n'}},
	{Key: "trace", Value: []byte("b")},
	{Key: "null", Value: nil},
	{Key: "empty", Value: []byte{}},
}

// sameHeaders reports whether got are want exactly: keys, order, bytes,
// and a null value told from an empty one.
func sameHeaders(got, want []kgo.RecordHeader) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].Key != want[i].Key || (got[i].Value == nil) != (want[i].Value == nil) ||
			string(got[i].Value) != string(want[i].Value) {
			return false
		}
	}
	return true
}

// TestDeadLetterKeepsHeadersExactly: a record given up with headers a
// map would mangle reaches the dead-letter file and the dead-letter
// topic with them byte for byte, in order, the null one null; the topic's
// record carries them as its own headers too.
func TestDeadLetterKeepsHeadersExactly(t *testing.T) {
	for _, sink := range []string{"file", "topic"} {
		t.Run(sink, func(t *testing.T) {
			topic := "headers-" + sink
			c := newCluster(t, 1, topic, "dead")
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
			if err != nil {
				t.Fatal(err)
			}
			err = cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("poison"), Headers: exactHeaders}).FirstErr()
			cl.Close()
			if err != nil {
				t.Fatal(err)
			}
			cfg := spoutConfig(c, topic, "g")
			if sink == "file" {
				cfg.DeadLetterFile = filepath.Join(t.TempDir(), "dead.jsonl")
			} else {
				cfg.DeadLetterTopic = "dead"
			}
			sp := mustSpouts(t, cfg)
			s := newSeen()
			s.decide = func(string, int) error { return gale.Permanent(errBadRecord) }
			lt := startTopology(t, topic, sp, 1, s, nil)
			defer lt.Stop()
			until(func() bool { return sp.Stats().Committed == 1 })
			lt.Stop()
			var letter []byte // the letter's JSON
			if sink == "file" {
				b, err := os.ReadFile(cfg.DeadLetterFile)
				if err != nil {
					t.Fatal(err)
				}
				if letter = bytes.TrimSpace(b); bytes.Count(letter, []byte("\n")) != 0 {
					t.Fatalf("dead-letter file: %s; want one letter", b)
				}
				if letters, err := retry.ReadFile(cfg.DeadLetterFile); err != nil || len(letters) != 1 {
					t.Fatalf("ReadFile: %d letters, %v; want 1", len(letters), err)
				}
			} else {
				recs := readAll(t, c, "dead", 1)
				letter = recs[0].Value
				if !sameHeaders(recs[0].Headers, exactHeaders) {
					t.Errorf("the dead-letter record's headers %q, want %q", recs[0].Headers, exactHeaders)
				}
			}
			// The letter's headers as JSON has them: a list of key and
			// base64 value, null for a null value.
			var l struct {
				Headers []kgo.RecordHeader `json:"headers"`
			}
			if err := json.Unmarshal(letter, &l); err != nil {
				t.Fatalf("the letter's headers are not a list of key and value: %v: %s", err, letter)
			}
			if !sameHeaders(l.Headers, exactHeaders) {
				t.Errorf("the letter's headers %q, want %q", l.Headers, exactHeaders)
			}
		})
	}
}
