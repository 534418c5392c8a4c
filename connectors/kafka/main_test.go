package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/kafka"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tWriter sends log output to t.Log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

var logLevel = slog.LevelWarn

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: logLevel}))
}

// newCluster starts an in-process Kafka (kfake) with topic, of
// partitions partitions, closed when the test ends.
func newCluster(t testing.TB, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// produce writes values "<from>".."<from+n-1>" to topic, spread over
// partitions round-robin, each keyed "k<i>".
func produce(t testing.TB, c *kfake.Cluster, topic string, partitions int32, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, n)
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Key: []byte("k" + strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// committed returns the group's committed offsets of topic by partition.
func committed(t testing.TB, c *kfake.Cluster, group, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	out := make(map[int32]int64)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return out // nothing committed yet
	}
	if err != nil {
		t.Fatalf("fetch offsets of group %s: %v", group, err)
	}
	resps.Each(func(r kadm.OffsetResponse) {
		if r.Topic == topic && r.Err == nil {
			out[r.Partition] = r.At
		}
	})
	return out
}

// seen records what a bolt saw, shared by its tasks.
type seen struct {
	mu     sync.Mutex
	counts map[string]int // value → deliveries
	// decide says what to do with a delivery (attempt from 1): nil acks.
	decide func(value string, attempt int) error
}

func newSeen() *seen { return &seen{counts: make(map[string]int)} }

func (s *seen) see(v string) (attempt int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[v]++
	return s.counts[v]
}

func (s *seen) deliveries() (n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.counts {
		n += c
	}
	return n
}

func (s *seen) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.counts)
}

func (s *seen) count(v string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[v]
}

// missing returns the values in [0,n) never seen, and the deliveries
// beyond the first of the others.
func (s *seen) missing(n int) (missing []int, duplicates int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < n; i++ {
		c := s.counts[strconv.Itoa(i)]
		if c == 0 {
			missing = append(missing, i)
		} else {
			duplicates += c - 1
		}
	}
	return missing, duplicates
}

// collect is a bolt that records each value and acks it, or fails it as
// seen.decide says.
type collect struct {
	gale.BaseBolt
	s *seen
}

func (*collect) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *collect) Execute(t *gale.Tuple) {
	v := string(t.GetBytesByField(kafka.FieldValue))
	n := b.s.see(v)
	if b.s.decide != nil {
		if err := b.s.decide(v, n); err != nil {
			b.Collector.Fail(t, err)
			return
		}
	}
	b.Collector.Ack(t)
}

// startTopology runs spouts → collect in this process.
func startTopology(t testing.TB, name string, spouts *kafka.Spouts, parallelism int, s *seen, conf gale.Config) *gale.LocalTopology {
	t.Helper()
	b := gale.NewTopologyBuilder()
	b.SetSpout("kafka", spouts.New, parallelism)
	b.SetBolt("collect", func() gale.Bolt { return &collect{s: s} }, 2).ShuffleGrouping("kafka")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if conf == nil {
		conf = gale.Config{}
	}
	lt, err := gale.StartLocal(name, conf, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return lt
}

func spoutConfig(c *kfake.Cluster, topic, group string) kafka.Config {
	return kafka.Config{
		BootstrapServers:   c.ListenAddrs(),
		Topic:              topic,
		GroupID:            group,
		OffsetCommitPeriod: 20 * time.Millisecond,
		FetchMaxWait:       50 * time.Millisecond,
		SessionTimeout:     2 * time.Second,
		HeartbeatInterval:  100 * time.Millisecond,
	}
}

func mustSpouts(t testing.TB, cfg kafka.Config) *kafka.Spouts {
	t.Helper()
	sp, err := kafka.NewSpouts(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// sum adds the committed offsets.
func sum(m map[int32]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

var _ = fmt.Sprint

var errBadRecord = errors.New("bad record")

// until polls cond every 5 ms until it holds, with no deadline: a test
// that never gets there is ended by go test's -timeout, which names it,
// and a busy machine only makes it slower.
func until(cond func() bool) {
	tk := time.NewTicker(5 * time.Millisecond) // polling interval, not a wait for a condition
	defer tk.Stop()
	for !cond() {
		<-tk.C
	}
}
