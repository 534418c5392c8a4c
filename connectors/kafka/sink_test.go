package kafka_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/kafka"
	"github.com/gale-stream/gale/internal/testutil"
)

// sinkTopology runs kafka spout (topic in) → kafka sink (topic out).
func sinkTopology(t *testing.T, c *kfake.Cluster, in, out string) (*kafka.Spouts, *kafka.Sinks, *gale.LocalTopology) {
	t.Helper()
	cfg := spoutConfig(c, in, "sink-"+in)
	cfg.Retry.Initial, cfg.Retry.Max = time.Millisecond, 5*time.Millisecond
	sp := mustSpouts(t, cfg)
	sk, err := kafka.NewSinks(kafka.Config{BootstrapServers: c.ListenAddrs(), Topic: out, MaxBufferedRecords: 16})
	if err != nil {
		t.Fatal(err)
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout("in", sp.New, 1)
	b.SetBolt("out", sk.New, 1).ShuffleGrouping("in")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal("sink", gale.Config{}, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return sp, sk, lt
}

// produceResponse answers req with code for every partition.
func produceResponse(req *kmsg.ProduceRequest, code int16) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// readAll consumes topic from the start until it has n records.
func readAll(t *testing.T, c *kfake.Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from %s", len(out), n, topic)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// TestSinkAcksOnlyAfterBroker: while the broker holds the sink's
// produce request, neither the sink nor the spout has acked the tuple and
// nothing is committed; once the broker answers, the tuple is acked, its
// offset committed, and the record is in the output topic.
func TestSinkAcksOnlyAfterBroker(t *testing.T) {
	c := newCluster(t, 1, "in", "out")
	produce(t, c, "in", 1, 0, 1) // before the control: only the sink produces below
	arrived, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		if once.Swap(true) {
			return nil, nil, false
		}
		close(arrived)
		c.SleepControl(func() { <-release })
		return nil, nil, false // then handled as usual
	})
	sp, sk, lt := sinkTopology(t, c, "in", "out")
	defer lt.Stop()
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatal("the sink's produce request never reached the broker")
	}
	if st, kst := sp.Stats(), sk.Stats(); st.Acked != 0 || kst.Acked != 0 || st.Committed != 0 {
		t.Errorf("with the produce unanswered: spout acked %d, committed %d; sink acked %d; want all 0", st.Acked, st.Committed, kst.Acked)
	}
	close(release)
	testutil.Eventually(t, 20*time.Second, "the tuple acked and committed", func() bool { return sp.Stats().Committed == 1 })
	if kst := sk.Stats(); kst.Acked != 1 || kst.Failed != 0 {
		t.Errorf("sink stats %+v, want 1 acked, 0 failed", kst)
	}
	lt.Stop()
	if recs := readAll(t, c, "out", 1); string(recs[0].Value) != "0" || string(recs[0].Key) != "k0" {
		t.Errorf("out has key %q value %q, want k0, 0", recs[0].Key, recs[0].Value)
	}
}

// TestSinkFailsOnProduceError: a produce the broker refuses fails the
// input (transient); the spout retries it and the retry lands, so the
// record reaches the output topic and is committed.
func TestSinkFailsOnProduceError(t *testing.T) {
	c := newCluster(t, 1, "in", "out")
	produce(t, c, "in", 1, 0, 1)
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		refused.Add(1)
		return produceResponse(req.(*kmsg.ProduceRequest), kerr.InvalidRecord.Code), nil, true
	})
	sp, sk, lt := sinkTopology(t, c, "in", "out")
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "the record committed after a retry", func() bool { return sp.Stats().Committed == 1 })
	st, kst := sp.Stats(), sk.Stats()
	if refused.Load() != 1 || kst.Failed != 1 || kst.Acked != 1 || st.Failed != 1 || st.Retried != 1 {
		t.Errorf("refused %d; sink %+v; spout failed %d, retried %d: want 1 refused, 1 failed then 1 acked, 1 retry",
			refused.Load(), kst, st.Failed, st.Retried)
	}
	lt.Stop()
	if recs := readAll(t, c, "out", 1); string(recs[0].Value) != "0" {
		t.Errorf("out has %q, want 0", recs[0].Value)
	}
}

// TestSinkBoundsOutstandingRecords: while the broker holds the sink's
// produce requests, the sink takes at most max.buffered.records inputs
// (and one more, blocked in Execute); once the broker answers, every
// input is acked.
func TestSinkBoundsOutstandingRecords(t *testing.T) {
	const n, limit = 40, 4
	c := newCluster(t, 1, "in", "out")
	produce(t, c, "in", 1, 0, n)
	release := make(chan struct{})
	var held atomic.Int32
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		held.Add(1)
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	cfg := spoutConfig(c, "in", "bound")
	sp := mustSpouts(t, cfg)
	sk, err := kafka.NewSinks(kafka.Config{BootstrapServers: c.ListenAddrs(), Topic: "out", MaxBufferedRecords: limit})
	if err != nil {
		t.Fatal(err)
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout("in", sp.New, 1)
	b.SetBolt("out", sk.New, 1).ShuffleGrouping("in")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal("bound", gale.Config{}, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "the sink full", func() bool { return held.Load() > 0 && sk.Stats().Produced == limit+1 })
	if st := sp.Stats(); st.Emitted <= limit+1 {
		t.Fatalf("the spout emitted %d, want more than the sink may take", st.Emitted)
	}
	if p := sk.Stats().Produced; p != limit+1 {
		t.Errorf("%d inputs taken with the broker holding, want %d", p, limit+1)
	}
	close(release)
	testutil.Eventually(t, 20*time.Second, "every input acked and committed", func() bool { return sp.Stats().Committed == n })
	if st := sk.Stats(); st.Acked != n || st.Failed != 0 {
		t.Errorf("sink %+v, want %d acked", st, n)
	}
}
