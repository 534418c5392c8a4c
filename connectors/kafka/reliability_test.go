package kafka_test

import (
	"errors"
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

// TestRebalanceLosesNothing: a second topology joins the group mid-stream
// (the partitions are shared), then the first is killed with no drain
// (the second takes them all); every record produced before, between and
// after is processed (written in a batch, then acked: see batchAck) at
// least once.
func TestRebalanceLosesNothing(t *testing.T) {
	const topic, parts = "rebalance", 4
	c := newCluster(t, parts, topic)
	s := newSeen()
	produce(t, c, topic, parts, 0, 400)
	spA := mustSpouts(t, spoutConfig(c, topic, "g"))
	a := batchTopology(t, "a", spA, s, gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0})
	defer a.Stop()
	testutil.Eventually(t, 20*time.Second, "the first topology processing", func() bool { return s.distinct() >= 100 })

	spB := mustSpouts(t, spoutConfig(c, topic, "g"))
	b := batchTopology(t, "b", spB, s, nil)
	defer b.Stop()
	testutil.Eventually(t, 20*time.Second, "the partitions shared", func() bool {
		return spB.Stats().Partitions > 0 && spA.Stats().Partitions+spB.Stats().Partitions == parts
	})
	produce(t, c, topic, parts, 400, 400)
	testutil.Eventually(t, 20*time.Second, "the second topology processing", func() bool { return spB.Stats().Emitted > 0 })
	testutil.Eventually(t, 20*time.Second, "processing under way", func() bool { return s.distinct() >= 600 })

	a.Stop() // killed with no drain, batches unwritten; its partitions move to b
	produce(t, c, topic, parts, 800, 200)
	testutil.Eventually(t, 20*time.Second, "every record processed", func() bool { return s.distinct() == 1000 })
	testutil.Eventually(t, 20*time.Second, "every offset committed", func() bool { return sum(committed(t, c, "g", topic)) == 1000 })
	b.Stop()
	missing, dups := s.missing(1000)
	if len(missing) > 0 {
		t.Errorf("lost across the rebalance: %v", missing)
	}
	stA, stB := spA.Stats(), spB.Stats()
	t.Logf("1000 records: %d duplicates; a emitted %d, committed %d; b emitted %d, committed %d, dropped %d",
		dups, stA.Emitted, stA.Committed, stB.Emitted, stB.Committed, stA.Dropped+stB.Dropped)
	if stA.Committed+stB.Committed < 1000 {
		t.Errorf("the spouts committed %d+%d offsets, want ≥ 1000", stA.Committed, stB.Committed)
	}
}

// batchAck is a bolt that writes its inputs in batches of 32 (or what it
// holds at a tick, every second), as a bolt writing to a store would:
// an input counts as processed once its batch is written, and it is
// acked then. A kill finds trees in flight, held in unwritten batches.
type batchAck struct {
	gale.BaseBolt
	s    *seen
	held []*gale.Tuple
}

func (*batchAck) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *batchAck) Execute(t *gale.Tuple) {
	if !t.IsTick() {
		b.held = append(b.held, t)
	}
	if len(b.held) == 32 || t.IsTick() {
		for _, h := range b.held {
			b.s.see(string(h.GetBytesByField(kafka.FieldValue)))
			b.Collector.Ack(h)
		}
		b.held = b.held[:0]
	}
}

func batchTopology(t *testing.T, name string, sp *kafka.Spouts, s *seen, conf gale.Config) *gale.LocalTopology {
	t.Helper()
	b := gale.NewTopologyBuilder()
	// Room for the batches the bolt tasks hold, however the partitions
	// fall on the spout tasks.
	b.SetSpout("kafka", sp.New, 2).SetMaxSpoutPending(1000)
	b.SetBolt("batch", func() gale.Bolt { return &batchAck{s: s} }, 3).ShuffleGrouping("kafka").
		AddConfiguration(gale.TopologyTickTupleFreqSecs, 1)
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal(name, conf, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return lt
}

// TestKillWithoutDrainLosesNothing is the in-process crash test: the
// topology is stopped mid-stream with no drain (the trees in flight, up to
// a batch per bolt task, are failed and nothing waits for them),
// restarted with the same group, and every record produced is processed
// at least once.
func TestKillWithoutDrainLosesNothing(t *testing.T) {
	const topic, parts, n = "crash", 3, 3000
	c := newCluster(t, parts, topic)
	s := newSeen()
	produce(t, c, topic, parts, 0, n/3)
	kill := gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0}
	sp1 := mustSpouts(t, spoutConfig(c, topic, "g"))
	lt1 := batchTopology(t, "crash", sp1, s, kill)
	defer lt1.Stop()
	testutil.Eventually(t, 20*time.Second, "processing under way", func() bool { return s.distinct() >= n/6 })
	produce(t, c, topic, parts, n/3, n/3)
	lt1.Stop() // no drain
	before := s.distinct()
	produce(t, c, topic, parts, 2*n/3, n-2*n/3)

	sp2 := mustSpouts(t, spoutConfig(c, topic, "g"))
	lt2 := batchTopology(t, "crash", sp2, s, kill)
	defer lt2.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for s.distinct() < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	if s.distinct() < n {
		missing, _ := s.missing(n)
		t.Fatalf("after the restart, %d records never processed, first %v; stats before %+v, after %+v; committed %v",
			len(missing), missing[:min(len(missing), 20)], sp1.Stats(), sp2.Stats(), committed(t, c, "g", topic))
	}
	lt2.Stop()
	missing, dups := s.missing(n)
	if len(missing) > 0 {
		t.Errorf("lost in the crash: %d records, first %v", len(missing), missing[:min(len(missing), 10)])
	}
	t.Logf("%d records, %d processed before the kill: %d duplicates (%.1f%%); committed %d before, %d after",
		n, before, dups, 100*float64(dups)/n, sp1.Stats().Committed, sp2.Stats().Committed)
}

// TestCommitFailureIsRetried: the broker refuses the first three offset
// commits; each is counted, the topology keeps running, and the offsets
// are committed by a later attempt.
func TestCommitFailureIsRetried(t *testing.T) {
	const topic, n = "commitfail", 50
	c := newCluster(t, 1, topic)
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if refused.Load() >= 3 {
			return nil, nil, false
		}
		c.KeepControl()
		refused.Add(1)
		r := req.(*kmsg.OffsetCommitRequest)
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.OffsetMetadataTooLarge.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	produce(t, c, topic, 1, 0, n/2)
	sp := mustSpouts(t, spoutConfig(c, topic, "g"))
	s := newSeen()
	lt := startTopology(t, "commitfail", sp, 1, s, nil)
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "three refused commits", func() bool { return sp.Stats().CommitFailures >= 3 })
	produce(t, c, topic, 1, n/2, n/2)
	// The broker stores a commit before the spout reads its answer and
	// counts it: wait for both, or Stats can lag what the group shows.
	testutil.Eventually(t, 20*time.Second, "every offset committed and counted", func() bool {
		return committed(t, c, "g", topic)[0] == n && sp.Stats().Committed == n
	})
	select {
	case err := <-lt.Failed():
		t.Fatalf("the topology failed: %v", err)
	default:
	}
	if st := sp.Stats(); st.CommitFailures != 3 || st.Committed != n || s.distinct() != n {
		t.Errorf("commit failures %d, committed %d, processed %d; want 3, %d, %d", st.CommitFailures, st.Committed, s.distinct(), n, n)
	}
}

// TestFailureStormDoesNotStarveNewRecords: a third of the records fail
// (transient) every time, with no backoff to speak of and no limit on
// attempts, so a retry is always due. New records still flow: until the
// last new record is emitted, retries take at most retry.retries.per.new
// emits per new one — and, the storm being real, they do take most of
// their share.
func TestFailureStormDoesNotStarveNewRecords(t *testing.T) {
	const topic, n, failing = "storm", 600, 200
	c := newCluster(t, 1, topic)
	produce(t, c, topic, 1, 0, n)
	cfg := spoutConfig(c, topic, "g")
	cfg.Retry = retry.Policy{Initial: time.Nanosecond, Max: time.Nanosecond, MaxAttempts: -1, RetriesPerNew: 3}
	sp := mustSpouts(t, cfg)
	s := newSeen()
	// On the bolt's one task, in the order the spout emitted.
	var fresh, retried, run, longest int
	var atLastNew atomic.Int64
	atLastNew.Store(-1)
	s.decide = func(v string, attempt int) error {
		if atLastNew.Load() < 0 {
			if attempt == 1 {
				fresh++
				run = 0
				if fresh == n {
					atLastNew.Store(int64(retried))
				}
			} else {
				retried++
				run++
				longest = max(longest, run)
			}
		}
		if len(v) < 3 || v < "200" && len(v) == 3 { // values 0..199
			return errors.New("downstream overloaded")
		}
		return nil
	}
	b := gale.NewTopologyBuilder()
	// Few trees in flight: each emit waits for a completion, so the
	// failures are back (and due) when the spout picks what to emit.
	b.SetSpout("kafka", sp.New, 1).SetMaxSpoutPending(8)
	b.SetBolt("collect", func() gale.Bolt { return &collect{s: s} }, 1).ShuffleGrouping("kafka")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal("storm", gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0}, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	testutil.Eventually(t, 30*time.Second, "every new record emitted", func() bool { return atLastNew.Load() >= 0 })
	testutil.Eventually(t, 30*time.Second, "the storm going on", func() bool { return sp.Stats().Retried >= atLastNew.Load()+100 })
	lt.Stop()
	r := atLastNew.Load()
	ratio := float64(r) / n
	t.Logf("until the last of %d new records: %d retries, %.2f retries per new record (fair share %d), longest run of retries %d; storm total %d retries",
		n, r, ratio, cfg.Retry.RetriesPerNew, longest, sp.Stats().Retried)
	if ratio > float64(cfg.Retry.RetriesPerNew) {
		t.Errorf("%.2f retries per new record while new records waited, want ≤ %d", ratio, cfg.Retry.RetriesPerNew)
	}
	if longest > cfg.Retry.RetriesPerNew {
		t.Errorf("%d retries in a row while new records waited, want ≤ %d", longest, cfg.Retry.RetriesPerNew)
	}
	if ratio < float64(cfg.Retry.RetriesPerNew)/2 {
		t.Errorf("only %d retries competed with %d new records; the storm did not happen", r, n)
	}
	_ = kafka.Fields
}
