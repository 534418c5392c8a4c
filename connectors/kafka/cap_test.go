package kafka_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/kafka"
	"github.com/gale-stream/gale/internal/testutil"
	"github.com/gale-stream/gale/retry"
)

// holdAll holds every tuple unacked until the test releases them; it
// records the most it held at once.
type holdAll struct {
	gale.BaseBolt
	s       *seen
	held    []*gale.Tuple
	most    *atomic.Int64
	release *atomic.Pointer[func()]
}

func (*holdAll) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *holdAll) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	b.Collector = c
	wake := c.Wakeup(func() {
		for _, t := range b.held {
			b.Collector.Ack(t)
		}
		b.held = b.held[:0]
	})
	b.release.Store(&wake)
	return nil
}

func (b *holdAll) Execute(t *gale.Tuple) {
	b.s.see(string(t.GetBytesByField(kafka.FieldValue)))
	b.held = append(b.held, t)
	if n := int64(len(b.held)); n > b.most.Load() {
		b.most.Store(n)
	}
}

// TestMaxUncommittedOffsetsPausesFetching: with no acks, a partition's
// fetching pauses at max.uncommitted.offsets (passed by at most a poll's
// worth); each release of the held records resumes it, until the topic
// is read.
func TestMaxUncommittedOffsetsPausesFetching(t *testing.T) {
	const topic, n, limit, poll = "capped", 200, 10, 5
	c := newCluster(t, 1, topic)
	produce(t, c, topic, 1, 0, n)
	cfg := spoutConfig(c, topic, "g")
	cfg.MaxUncommittedOffsets, cfg.MaxPollRecords = limit, poll
	sp := mustSpouts(t, cfg)
	s := newSeen()
	var most atomic.Int64
	var release atomic.Pointer[func()]
	b := gale.NewTopologyBuilder()
	b.SetSpout("kafka", sp.New, 1)
	b.SetBolt("hold", func() gale.Bolt { return &holdAll{s: s, most: &most, release: &release} }, 1).ShuffleGrouping("kafka")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal("capped", gale.Config{}, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	var pauses int64
	for s.distinct() < n {
		testutil.Eventually(t, 20*time.Second, "a pause at the cap", func() bool {
			return sp.Stats().Pauses > pauses || s.distinct() == n
		})
		pauses = sp.Stats().Pauses
		if p := sp.Stats().Emitted - sp.Stats().Acked; p > limit+poll-1 {
			t.Fatalf("%d records in flight at the pause, want ≤ %d", p, limit+poll-1)
		}
		// Release a cap's worth of records once they reached the bolt:
		// that takes the partition below the cap.
		testutil.Eventually(t, 20*time.Second, "the records up to the cap at the bolt", func() bool {
			st := sp.Stats()
			return st.Emitted-st.Acked >= limit && int64(s.deliveries()) == st.Emitted || s.distinct() == n
		})
		(*release.Load())()
	}
	testutil.Eventually(t, 20*time.Second, "every offset committed", func() bool { return sp.Stats().Committed == n })
	if m := most.Load(); m > limit+poll-1 || pauses < n/(limit+poll) {
		t.Errorf("the bolt held up to %d records, %d pauses; want ≤ %d held, ≥ %d pauses", m, pauses, limit+poll-1, n/(limit+poll))
	}
}

// TestDeadLetterFailureHoldsTheCommit: when the dead-letter topic refuses
// a given-up record, the failure is counted, the record's offset stays
// uncommitted, and the send is tried again until it lands; then the
// partition is committed to its end.
func TestDeadLetterFailureHoldsTheCommit(t *testing.T) {
	const topic, n = "dlfail", 10
	c := newCluster(t, 1, topic, "dead")
	produce(t, c, topic, 1, 0, n)
	var mu sync.Mutex
	refused := 0
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		if refused > 0 {
			return nil, nil, false
		}
		refused++
		return produceResponse(req.(*kmsg.ProduceRequest), kerr.InvalidRecord.Code), nil, true
	})
	cfg := spoutConfig(c, topic, "g")
	cfg.DeadLetterTopic = "dead"
	cfg.Retry = retry.Policy{MaxAttempts: 1}
	sp := mustSpouts(t, cfg)
	s := newSeen()
	s.decide = func(v string, _ int) error {
		if v == "4" {
			return gale.Permanent(errBadRecord)
		}
		return nil
	}
	lt := startTopology(t, "dlfail", sp, 1, s, nil)
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "the refused dead letter counted", func() bool { return sp.Stats().DeadLetterFailures == 1 })
	if got := committed(t, c, "g", topic)[0]; got > 4 {
		t.Errorf("committed %d while the dead letter of offset 4 was refused, want ≤ 4", got)
	}
	testutil.Eventually(t, 20*time.Second, "every offset committed", func() bool { return sp.Stats().Committed == n })
	lt.Stop()
	if recs := readAll(t, c, "dead", 1); len(recs) != 1 || string(recs[0].Key) != "k4" {
		t.Errorf("dead-letter topic: %d records, key %q; want 1, k4", len(recs), recs[0].Key)
	}
}

// holdTopology runs spouts → holdAll.
func holdTopology(t *testing.T, name string, sp *kafka.Spouts, s *seen, release *atomic.Pointer[func()]) *gale.LocalTopology {
	t.Helper()
	var most atomic.Int64
	b := gale.NewTopologyBuilder()
	b.SetSpout("kafka", sp.New, 1)
	b.SetBolt("hold", func() gale.Bolt { return &holdAll{s: s, most: &most, release: release} }, 1).ShuffleGrouping("kafka")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal(name, gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0}, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return lt
}

// TestLateAcksOfARevokedPartitionCommitNothing: a member that held the
// records of a partition when it was revoked acks them afterwards; the
// acks commit nothing for it, so the partition's new owner, which has
// not acked them, still finds them uncommitted.
func TestLateAcksOfARevokedPartitionCommitNothing(t *testing.T) {
	const topic, n = "late", 40
	c := newCluster(t, 2, topic)
	produce(t, c, topic, 2, 0, n)
	sA, sB := newSeen(), newSeen()
	var relA, relB atomic.Pointer[func()]
	spA := mustSpouts(t, spoutConfig(c, topic, "g"))
	a := holdTopology(t, "a", spA, sA, &relA)
	defer a.Stop()
	testutil.Eventually(t, 20*time.Second, "a holding every record", func() bool { return sA.deliveries() == n })

	spB := mustSpouts(t, spoutConfig(c, topic, "g"))
	b := holdTopology(t, "b", spB, sB, &relB)
	defer b.Stop()
	testutil.Eventually(t, 20*time.Second, "b holding its partition's records", func() bool { return sB.deliveries() == n/2 })
	if pa, pb := spA.Stats().Partitions, spB.Stats().Partitions; pa != 1 || pb != 1 {
		t.Fatalf("partitions a %d, b %d; want 1 each", pa, pb)
	}
	(*relA.Load())() // a acks all 40, half of them of b's partition now
	testutil.Eventually(t, 20*time.Second, "a's acks", func() bool { return spA.Stats().Acked == n })
	testutil.Eventually(t, 20*time.Second, "a's own partition committed", func() bool {
		for _, off := range committed(t, c, "g", topic) {
			if off == n/2 {
				return true
			}
		}
		return false
	})
	a.Stop() // leaves: b gets a's partition too, already committed
	got := committed(t, c, "g", topic)
	var bPart int32 = -1
	for k := range spB.Stats().PartitionLag {
		bPart = int32(k[len(k)-1] - '0')
	}
	if bPart < 0 || got[bPart] != 0 || got[1-bPart] != n/2 {
		t.Fatalf("committed %v with b (partition %d) holding its records unacked, want 0 for b's, %d for a's", got, bPart, n/2)
	}
	(*relB.Load())()
	testutil.Eventually(t, 20*time.Second, "everything committed", func() bool { return sum(committed(t, c, "g", topic)) == n })
}
