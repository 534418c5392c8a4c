package jetstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/jetstream"
	"github.com/gale-stream/gale/retry"
)

// letterHeader is a dead letter's header as its JSON has it.
type letterHeader struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// TestDeadLetterKeepsHeadersExactly: a message given up with headers a
// map of single strings would mangle — a key with two values, a value
// that is not UTF-8, an empty one — reaches the dead-letter file and the
// dead-letter subject with every value, in order, byte for byte.
func TestDeadLetterKeepsHeadersExactly(t *testing.T) {
	bin := string([]byte{0xff, 0x01, 0xfe})
	want := []letterHeader{ // keys sorted (a nats.Header is a map), values in order
		{"Bin", []byte(bin)},
		{"Empty", []byte{}},
		{"Trace", []byte("a")},
		{"Trace", []byte("b")},
	}
	for _, sink := range []string{"file", "subject"} {
		t.Run(sink, func(t *testing.T) {
			ts := startServer(t)
			_, js := ts.client(t)
			createStream(t, js, "ORDERS", "orders.>")
			createStream(t, js, "DLQ", "dlq.orders")
			m := nats.NewMsg("orders.new")
			m.Data = []byte("perm-1")
			m.Header.Add("Trace", "a")
			m.Header.Add("Trace", "b")
			m.Header.Add("Bin", bin)
			m.Header.Add("Empty", "")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
			cfg := jetstream.Config{URL: ts.URL, Stream: "ORDERS", Consumer: "work"}
			path := filepath.Join(t.TempDir(), "dead.jsonl")
			if sink == "file" {
				cfg.DeadLetterFile = path
			} else {
				cfg.DeadLetterSubject = "dlq.orders"
			}
			sp := newSpout(t, cfg)
			runTopology(t, "headers", sp.New, &recBolt{rec: &recorder{}}, nil)
			until(func() bool {
				st := sp.Stats()
				return st.DeadLettered == 1 && st.Terminated == 1
			})
			var letter []byte
			if sink == "file" {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				letter = bytes.TrimSpace(b)
			} else {
				dead := streamMsgs(t, js, "DLQ")
				if len(dead) != 1 {
					t.Fatalf("the dead-letter stream holds %d letters, want 1", len(dead))
				}
				letter = []byte(dead[0])
			}
			var l struct {
				Headers []letterHeader `json:"headers"`
			}
			if err := json.Unmarshal(letter, &l); err != nil {
				t.Fatalf("the letter's headers are not a list of key and value: %v: %s", err, letter)
			}
			ok := len(l.Headers) == len(want)
			for i := 0; ok && i < len(want); i++ {
				ok = l.Headers[i].Key == want[i].Key && l.Headers[i].Value != nil && bytes.Equal(l.Headers[i].Value, want[i].Value)
			}
			if !ok {
				t.Errorf("the letter's headers %q, want %q", l.Headers, want)
			}
		})
	}
}

// batchSink is a retry.BatchSink that holds its first call until
// released and counts the calls and letters.
type batchSink struct {
	released chan struct{}
	mu       sync.Mutex
	calls    int
	letters  int
}

func (b *batchSink) Send(ctx context.Context, l retry.DeadLetter) error {
	return b.SendBatch(ctx, []retry.DeadLetter{l})
}

func (b *batchSink) SendBatch(ctx context.Context, ls []retry.DeadLetter) error {
	b.mu.Lock()
	b.calls++
	first := b.calls == 1
	b.mu.Unlock()
	if first {
		select {
		case <-b.released:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	b.mu.Lock()
	b.letters += len(ls)
	b.mu.Unlock()
	return nil
}

func (*batchSink) Close() error { return nil }

// TestDeadLettersAreSentInBatches: the letters given up while one is
// being stored wait and go to the sink together, not one call each.
func TestDeadLettersAreSentInBatches(t *testing.T) {
	const n = 50
	ts := startServer(t)
	_, js := ts.client(t)
	createStream(t, js, "ORDERS", "orders.>")
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprintf("perm-%d", i)
	}
	publishBulk(t, js, "orders.new", bodies)
	sink := &batchSink{released: make(chan struct{})}
	sp := newSpout(t, jetstream.Config{URL: ts.URL, Stream: "ORDERS", Consumer: "work",
		DeadLetters: func(*gale.TopologyContext) (retry.DeadLetterSink, error) { return sink, nil }})
	runTopology(t, "batches", sp.New, &recBolt{rec: &recorder{}}, nil)
	until(func() bool { return sp.Stats().Permanent == n })
	close(sink.released)
	until(func() bool { return sp.Stats().Terminated == n })
	sink.mu.Lock()
	defer sink.mu.Unlock()
	// The first call, the letters given up while it was held, and at most
	// one more: the last failure is counted just before its letter is
	// queued, so it may miss the second batch.
	if sink.letters != n || sink.calls > 3 {
		t.Errorf("%d letters in %d calls, want %d in at most 3", sink.letters, sink.calls, n)
	}
}
