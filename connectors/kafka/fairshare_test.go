package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/kafka"
	"github.com/gale-stream/gale/retry"
)

// blockedSink is a dead-letter sink that stores nothing until released:
// a letter waits in the spout's dead-letter queue meanwhile.
type blockedSink struct {
	released chan struct{}
	mu       sync.Mutex
	letters  []retry.DeadLetter
}

func (b *blockedSink) Send(ctx context.Context, l retry.DeadLetter) error {
	select {
	case <-b.released:
	case <-ctx.Done():
		return ctx.Err()
	}
	b.mu.Lock()
	b.letters = append(b.letters, l)
	b.mu.Unlock()
	return nil
}

func (*blockedSink) Close() error { return nil }

// TestWaitingRecordDoesNotStopNewRecords: at the default
// max.uncommitted.offsets, one record that waits — out a retry backoff
// longer than the test, or in the dead-letter queue of a sink that
// stores nothing yet — holds its partition's commit point, while two and
// a half caps' worth of records behind it are read and acked. Fetching
// never pauses: new records keep coming while the record waits, and
// every other record is processed before it is released. (Before, the
// records acked behind it counted against the cap, so the partition
// paused at 10,000 and new records stopped until the wait ended.)
func TestWaitingRecordDoesNotStopNewRecords(t *testing.T) {
	const n = kafka.DefaultMaxUncommittedOffsets*5/2 + 1
	for _, tc := range []struct {
		name string
		fail error // what record 0 fails with
		dead bool  // a dead-letter sink that stores nothing until released
	}{
		{name: "waiting for a retry", fail: errBadRecord},
		{name: "waiting for its dead letter", fail: gale.Permanent(errBadRecord), dead: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := fmt.Sprintf("wait%v", tc.dead)
			c := newCluster(t, 1, topic)
			produce(t, c, topic, 1, 0, n)
			cfg := spoutConfig(c, topic, "g")
			cfg.OffsetCommitPeriod = 0 // the default
			cfg.Retry = retry.Policy{Initial: time.Hour, Max: time.Hour, MaxAttempts: -1}
			sink := &blockedSink{released: make(chan struct{})}
			if tc.dead {
				cfg.DeadLetters = func(*gale.TopologyContext) (retry.DeadLetterSink, error) { return sink, nil }
			}
			sp := mustSpouts(t, cfg)
			s := newSeen()
			s.decide = func(v string, _ int) error {
				if v == "0" {
					return tc.fail
				}
				return nil
			}
			lt := startTopology(t, "wait", sp, 1, s, gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0})
			defer lt.Stop()
			tk := time.NewTicker(5 * time.Millisecond) // polling interval, not a wait for a condition
			defer tk.Stop()
			for s.distinct() < n || sp.Stats().Acked < n-1 {
				if st := sp.Stats(); st.Pauses > 0 {
					t.Fatalf("the partition paused with %d of %d records processed while record 0 waited (%d acked, lag %d): new records stopped",
						s.distinct(), n, st.Acked, st.Lag)
				}
				<-tk.C
			}
			st := sp.Stats()
			t.Logf("%d records processed, %d acked, %d retries handed out, while record 0 waited; committed %d", s.distinct(), st.Acked, st.Retries, st.Committed)
			if st.Committed != 0 || s.count("0") != 1 {
				t.Errorf("committed %d, record 0 seen %d times; want 0 and 1 (it waits, holding the commit point)", st.Committed, s.count("0"))
			}
			if !tc.dead {
				return
			}
			close(sink.released)
			until(func() bool { return sp.Stats().Committed == n })
			sink.mu.Lock()
			defer sink.mu.Unlock()
			if len(sink.letters) != 1 || sink.letters[0].Source != "kafka:"+topic+"/0@0" {
				t.Errorf("dead letters %+v, want the one of offset 0", sink.letters)
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
	letters  []retry.DeadLetter
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
	b.letters = append(b.letters, ls...)
	b.mu.Unlock()
	return nil
}

func (*batchSink) Close() error { return nil }

// TestDeadLettersAreSentInBatches: the letters given up while one is
// being stored wait and go to the sink in one batch, not one call each.
func TestDeadLettersAreSentInBatches(t *testing.T) {
	const topic, n = "batches", 200
	c := newCluster(t, 1, topic)
	produce(t, c, topic, 1, 0, n)
	cfg := spoutConfig(c, topic, "g")
	sink := &batchSink{released: make(chan struct{})}
	cfg.DeadLetters = func(*gale.TopologyContext) (retry.DeadLetterSink, error) { return sink, nil }
	sp := mustSpouts(t, cfg)
	s := newSeen()
	s.decide = func(string, int) error { return gale.Permanent(errBadRecord) }
	lt := startTopology(t, "batches", sp, 1, s, gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0})
	defer lt.Stop()
	until(func() bool { return sp.Stats().DeadLettered == n })
	close(sink.released)
	until(func() bool { return sp.Stats().Committed == n })
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.letters) != n || sink.calls > 2 {
		t.Errorf("%d letters in %d calls, want %d in at most 2: the first batch, and every one given up while it was stored", len(sink.letters), sink.calls, n)
	}
}
