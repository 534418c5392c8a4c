package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/kafka"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/testutil"
	"github.com/gale-stream/gale/retry"
)

// TestAtLeastOnceEndToEnd: every produced record reaches the bolt, and
// once all are acked the group's committed offsets are the ends of the
// partitions, and Progress counts them.
func TestAtLeastOnceEndToEnd(t *testing.T) {
	const topic, parts, n = "orders", 3, 300
	c := newCluster(t, parts, topic)
	produce(t, c, topic, parts, 0, n)
	sp := mustSpouts(t, spoutConfig(c, topic, "g1"))
	s := newSeen()
	lt := startTopology(t, "alo", sp, 2, s, nil)
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "every record processed", func() bool { return s.distinct() == n })
	testutil.Eventually(t, 20*time.Second, "every offset committed", func() bool { return sp.Stats().Committed == n })
	lt.Stop()
	got := committed(t, c, "g1", topic)
	for p := int32(0); p < parts; p++ {
		if got[p] != n/parts {
			t.Errorf("partition %d: committed %d, want %d (all: %v)", p, got[p], n/parts, got)
		}
	}
	st := sp.Stats()
	if st.Acked < n || st.Emitted < n || st.Lag != 0 {
		t.Errorf("stats %+v: want acked and emitted ≥ %d, lag 0", st, n)
	}
	if missing, _ := s.missing(n); len(missing) > 0 {
		t.Errorf("missing %v", missing)
	}
}

// holdBolt never acks the value hold; it acks everything else at once.
type holdBolt struct {
	gale.BaseBolt
	s    *seen
	hold string
	held *gale.Tuple
}

func (*holdBolt) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *holdBolt) Execute(t *gale.Tuple) {
	v := string(t.GetBytesByField(kafka.FieldValue))
	b.s.see(v)
	if v == b.hold {
		b.held = t
		return
	}
	b.Collector.Ack(t)
}

// TestCommitIsContiguousAckedPrefix: with offset 5 of 20 unacked, the
// group's committed offset stays at 5 although 6..19 are acked, through
// the periodic commits and the final one at shutdown (where the tree of 5
// is failed by the shutdown: that is no attempt, and no dead letter, even
// with one attempt allowed); a new topology of the group reads again from
// 5, reads only 5 (the commit's metadata says 6..19 finished), and
// commits the rest.
func TestCommitIsContiguousAckedPrefix(t *testing.T) {
	const topic = "prefix"
	c := newCluster(t, 1, topic)
	produce(t, c, topic, 1, 0, 20)
	cfg := spoutConfig(c, topic, "g")
	cfg.Retry.MaxAttempts = 1
	cfg.DeadLetterFile = filepath.Join(t.TempDir(), "dead.jsonl")
	sp := mustSpouts(t, cfg)
	s := newSeen()
	b := gale.NewTopologyBuilder()
	b.SetSpout("kafka", sp.New, 1)
	b.SetBolt("hold", func() gale.Bolt { return &holdBolt{s: s, hold: "5"} }, 1).ShuffleGrouping("kafka")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal("prefix", gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0}, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "19 of 20 acked", func() bool { return sp.Stats().Acked == 19 })
	testutil.Eventually(t, 20*time.Second, "the prefix committed", func() bool { return committed(t, c, "g", topic)[0] == 5 })
	if st := sp.Stats(); st.Lag != 15 || st.PartitionLag["prefix/0"] != 15 {
		t.Errorf("lag %d (%v) with 5 of 20 committed, want 15", st.Lag, st.PartitionLag)
	}
	lt.Stop() // commits what the spout has: everything but 5 acked
	if got := committed(t, c, "g", topic)[0]; got != 5 {
		t.Errorf("committed %d with offset 5 unacked, want 5", got)
	}
	if st := sp.Stats(); st.Committed != 5 {
		t.Errorf("Committed %d, want 5", st.Committed)
	}
	if p := sp.Progress(); p != 19 {
		t.Errorf("Progress %d, want 19: the records acked, committed or not", p)
	}
	if letters, err := retry.ReadFile(cfg.DeadLetterFile); err != nil || len(letters) != 0 {
		t.Errorf("dead letters %+v, %v; want none: a shutdown is not the record's failure", letters, err)
	}

	sp2 := mustSpouts(t, spoutConfig(c, topic, "g"))
	s2 := newSeen()
	lt2 := startTopology(t, "prefix2", sp2, 1, s2, nil)
	defer lt2.Stop()
	testutil.Eventually(t, 20*time.Second, "the rest committed", func() bool { return sp2.Stats().Committed == 15 })
	lt2.Stop()
	if s2.distinct() != 1 || s2.count("5") != 1 || sp2.Stats().Skipped != 14 {
		t.Errorf("the second run saw %d values (5: %d times), skipped %d; want only 5 read again, 6..19 skipped as finished",
			s2.distinct(), s2.count("5"), sp2.Stats().Skipped)
	}
	if got := committed(t, c, "g", topic)[0]; got != 20 {
		t.Errorf("committed %d, want 20", got)
	}
}

// offsetCheck is a bolt that, for each tuple, reads the group's committed
// offset of the tuple's partition and records whether it was already
// past the tuple.
type offsetCheck struct {
	gale.BaseBolt
	c             *kfake.Cluster
	group, topic  string
	s             *seen
	before, total *atomic.Int64
}

func (*offsetCheck) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *offsetCheck) Execute(t *gale.Tuple) {
	b.s.see(string(t.GetBytesByField(kafka.FieldValue)))
	p, off := int32(t.GetInt64ByField(kafka.FieldPartition)), t.GetInt64ByField(kafka.FieldOffset)
	if committedNoT(b.c, b.group, b.topic)[p] > off {
		b.before.Add(1)
	}
	b.total.Add(1)
	b.Collector.Ack(t)
}

// TestAtMostOnceCommitsBeforeEmit: every tuple the bolt sees is already
// behind the group's committed offset, and no tuple is tracked.
func TestAtMostOnceCommitsBeforeEmit(t *testing.T) {
	const topic, n = "amo", 30
	c := newCluster(t, 2, topic)
	produce(t, c, topic, 2, 0, n)
	cfg := spoutConfig(c, topic, "g")
	cfg.ProcessingGuarantee = kafka.AtMostOnce
	cfg.MaxPollRecords = 4
	sp := mustSpouts(t, cfg)
	s := newSeen()
	var before, total atomic.Int64
	b := gale.NewTopologyBuilder()
	b.SetSpout("kafka", sp.New, 1)
	b.SetBolt("check", func() gale.Bolt {
		return &offsetCheck{c: c, group: "g", topic: topic, s: s, before: &before, total: &total}
	}, 1).ShuffleGrouping("kafka")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal("amo", gale.Config{}, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "every record seen", func() bool { return s.distinct() == n })
	lt.Stop()
	if before.Load() != total.Load() {
		t.Errorf("%d of %d tuples were seen before their offset was committed", total.Load()-before.Load(), total.Load())
	}
	if st := sp.Stats(); st.Acked != 0 || st.Committed != n {
		t.Errorf("acked %d, committed %d; want 0 acked (untracked), %d committed", st.Acked, st.Committed, n)
	}
}

// committedNoT is committed for use off the test's goroutine.
func committedNoT(c *kfake.Cluster, group, topic string) map[int32]int64 {
	out := make(map[int32]int64)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		return out
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	if err != nil {
		return out
	}
	resps.Each(func(r kadm.OffsetResponse) {
		if r.Topic == topic && r.Err == nil {
			out[r.Partition] = r.At
		}
	})
	return out
}

// TestPoisonPermanentGoesToDeadLetterFile: a record a bolt fails as
// permanent is delivered once, written to the dead-letter file, and the
// records after it in its partition are processed and committed.
func TestPoisonPermanentGoesToDeadLetterFile(t *testing.T) {
	const topic, n = "poison", 20
	c := newCluster(t, 1, topic)
	produce(t, c, topic, 1, 0, n)
	cfg := spoutConfig(c, topic, "g")
	cfg.DeadLetterFile = filepath.Join(t.TempDir(), "dead.jsonl")
	sp := mustSpouts(t, cfg)
	s := newSeen()
	s.decide = func(v string, _ int) error {
		if v == "3" {
			return gale.Permanent(errors.New("bad order"))
		}
		return nil
	}
	lt := startTopology(t, "poison", sp, 1, s, nil)
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "every offset committed", func() bool { return sp.Stats().Committed == n })
	lt.Stop()
	if got := s.count("3"); got != 1 {
		t.Errorf("the permanent failure was delivered %d times, want 1", got)
	}
	letters, err := retry.ReadFile(cfg.DeadLetterFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) != 1 {
		t.Fatalf("%d dead letters, want 1: %+v", len(letters), letters)
	}
	l := letters[0]
	if l.Source != "kafka:poison/0@3" || string(l.Value) != "3" || string(l.Key) != "k3" || l.Attempts != 1 ||
		l.Class != "permanent" || !strings.Contains(l.LastError, "bad order") || l.Component != "kafka" || l.Topology != "poison" {
		t.Errorf("letter %+v", l)
	}
	if st := sp.Stats(); st.DeadLettered != 1 || committed(t, c, "g", topic)[0] != n {
		t.Errorf("dead-lettered %d, committed %v; want 1, %d", st.DeadLettered, committed(t, c, "g", topic), n)
	}
	// The runtime reads them too (gale.RetryReporter): the component's
	// counters show the dead letter.
	if st := bridge.SpoutStats(lt); len(st) != 1 || st[0].DeadLetters != 1 || st[0].Retries != 0 {
		t.Errorf("the spout's component counters %+v, want 1 dead letter and no retry", st)
	}
}

// memorySink is a dead-letter sink of a program's own, for DeadLetters.
type memorySink struct {
	mu      sync.Mutex
	letters []retry.DeadLetter
	closed  int
}

func (m *memorySink) Send(_ context.Context, l retry.DeadLetter) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.letters = append(m.letters, l)
	return nil
}

func (m *memorySink) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed++
	return nil
}

// TestPluggableDeadLetterSink: with DeadLetters set, what is given up goes
// to the program's own sink, one per task, each closed at its Close, and
// running out of attempts gives up (a sink is configured).
func TestPluggableDeadLetterSink(t *testing.T) {
	const topic, n = "plug", 20
	c := newCluster(t, 2, topic)
	produce(t, c, topic, 2, 0, n)
	cfg := spoutConfig(c, topic, "g")
	cfg.Retry = retry.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxAttempts: 2}
	var mu sync.Mutex
	var sinks []*memorySink
	cfg.DeadLetters = func(tc *gale.TopologyContext) (retry.DeadLetterSink, error) {
		mu.Lock()
		defer mu.Unlock()
		m := &memorySink{}
		sinks = append(sinks, m)
		return m, nil
	}
	sp := mustSpouts(t, cfg)
	s := newSeen()
	s.decide = func(v string, _ int) error {
		if v == "5" {
			return errors.New("always")
		}
		return nil
	}
	lt := startTopology(t, "plug", sp, 2, s, nil)
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "every offset committed", func() bool { return sp.Stats().Committed == n })
	lt.Stop()
	mu.Lock()
	defer mu.Unlock()
	var got []retry.DeadLetter
	for _, m := range sinks {
		if m.closed != 1 {
			t.Errorf("a task's sink was closed %d times, want once", m.closed)
		}
		got = append(got, m.letters...)
	}
	if len(sinks) != 2 || len(got) != 1 || string(got[0].Value) != "5" || got[0].Attempts != 2 {
		t.Fatalf("%d sinks, letters %+v; want 2 sinks and the record 5 after 2 attempts", len(sinks), got)
	}
	cfg.DeadLetterFile = "dead.jsonl"
	if err := cfg.ValidateSpout(); err == nil || !strings.Contains(err.Error(), "choose one dead-letter sink") {
		t.Errorf("DeadLetters with deadletter.file: %v, want an error", err)
	}
}

// TestPoisonTransientGoesToDeadLetterTopic: a record failed (transient)
// every time is delivered retry.max.attempts times, then produced to the
// dead-letter topic, and its partition moves on.
func TestPoisonTransientGoesToDeadLetterTopic(t *testing.T) {
	const topic, n = "flaky", 20
	c := newCluster(t, 2, topic, "dead")
	produce(t, c, topic, 2, 0, n)
	cfg := spoutConfig(c, topic, "g")
	cfg.DeadLetterTopic = "dead"
	cfg.Retry = retry.Policy{Initial: time.Millisecond, Max: 4 * time.Millisecond, MaxAttempts: 3}
	sp := mustSpouts(t, cfg)
	s := newSeen()
	s.decide = func(v string, _ int) error {
		if v == "7" {
			return errors.New("database down")
		}
		return nil
	}
	lt := startTopology(t, "flaky", sp, 1, s, nil)
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "every offset committed", func() bool { return sp.Stats().Committed == n })
	lt.Stop()
	if got := s.count("7"); got != 3 {
		t.Errorf("the failing record was delivered %d times, want 3 (retry.max.attempts)", got)
	}
	recs := readAll(t, c, "dead", 1)
	var l retry.DeadLetter
	if err := json.Unmarshal(recs[0].Value, &l); err != nil {
		t.Fatal(err)
	}
	if string(recs[0].Key) != "k7" || l.Source != "kafka:flaky/1@3" || string(l.Value) != "7" || l.Attempts != 3 ||
		l.Class != "transient" || !strings.Contains(l.LastError, "database down") || l.FirstFailed.IsZero() {
		t.Errorf("dead letter key %q: %+v", recs[0].Key, l)
	}
	if st := sp.Stats(); st.Retries != 2 || st.DeadLettered != 1 {
		t.Errorf("retries %d, dead-lettered %d; want 2, 1", st.Retries, st.DeadLettered)
	}
}

// TestNoDeadLetterSinkNeverGivesUp: without a dead-letter sink, a record
// that fails more times than retry.max.attempts is retried until it is
// acked, not given up and lost.
func TestNoDeadLetterSinkNeverGivesUp(t *testing.T) {
	const topic, n = "stubborn", 10
	c := newCluster(t, 1, topic)
	produce(t, c, topic, 1, 0, n)
	cfg := spoutConfig(c, topic, "g")
	cfg.Retry = retry.Policy{Initial: time.Millisecond, Max: 2 * time.Millisecond, MaxAttempts: 2}
	sp := mustSpouts(t, cfg)
	s := newSeen()
	s.decide = func(v string, attempt int) error {
		if v == "4" && attempt < 6 {
			return errors.New("database down")
		}
		return nil
	}
	lt := startTopology(t, "stubborn", sp, 1, s, nil)
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "every offset committed", func() bool { return sp.Stats().Committed == n })
	lt.Stop()
	if got := s.count("4"); got != 6 {
		t.Errorf("the failing record was delivered %d times, want 6: retried until acked", got)
	}
	if st := sp.Stats(); st.DeadLettered != 0 || st.Retries != 5 {
		t.Errorf("dead-lettered %d, retries %d; want 0 and 5", st.DeadLettered, st.Retries)
	}
}

// TestNoGuaranteeCommitsWhatWasEmitted: tuples are untracked (never
// acked, never failed back) and what was emitted gets committed; values
// come as strings with value.format string.
func TestNoGuaranteeCommitsWhatWasEmitted(t *testing.T) {
	const topic, n = "noguarantee", 30
	c := newCluster(t, 3, topic)
	produce(t, c, topic, 3, 0, n)
	cfg := spoutConfig(c, topic, "g")
	cfg.ProcessingGuarantee, cfg.KeyFormat, cfg.ValueFormat = kafka.NoGuarantee, kafka.String, kafka.String
	sp := mustSpouts(t, cfg)
	var strs atomic.Int64
	s := newSeen()
	b := gale.NewTopologyBuilder()
	b.SetSpout("kafka", sp.New, 1)
	b.SetBolt("collect", func() gale.Bolt { return &stringCheck{collect: collect{s: s}, strs: &strs} }, 1).ShuffleGrouping("kafka")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal("noguarantee", gale.Config{}, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "every offset committed", func() bool { return sum(committed(t, c, "g", topic)) == n })
	lt.Stop()
	if st := sp.Stats(); st.Emitted != n || st.Acked != 0 || st.Failed != 0 || st.Committed != n || s.deliveries() != n || strs.Load() != n {
		t.Errorf("stats %+v, %d deliveries, %d with string key and value; want %d emitted, committed and delivered once, as strings, none acked or failed",
			st, s.deliveries(), strs.Load(), n)
	}
}

// stringCheck is collect, counting the tuples whose key and value are
// strings.
type stringCheck struct {
	collect
	strs *atomic.Int64
}

func (b *stringCheck) Execute(t *gale.Tuple) {
	_, k := t.ValueByField(kafka.FieldKey).(string)
	v, ok := t.ValueByField(kafka.FieldValue).(string)
	if k && ok {
		b.strs.Add(1)
	}
	b.s.see(v)
	b.Collector.Fail(t, errors.New("failed: no-guarantee tuples are not replayed"))
}

// TestSeveralTopics: topic may name several topics, comma-separated.
func TestSeveralTopics(t *testing.T) {
	c := newCluster(t, 1, "a", "b")
	produce(t, c, "a", 1, 0, 5)
	produce(t, c, "b", 1, 5, 5)
	sp := mustSpouts(t, spoutConfig(c, "a, b", "g"))
	s := newSeen()
	lt := startTopology(t, "topics", sp, 1, s, nil)
	defer lt.Stop()
	testutil.Eventually(t, 20*time.Second, "both topics read and committed", func() bool { return sp.Stats().Committed == 10 })
	lt.Stop()
	if missing, dups := s.missing(10); len(missing) > 0 || dups > 0 {
		t.Errorf("missing %v, %d duplicates", missing, dups)
	}
	if a, b := committed(t, c, "g", "a")[0], committed(t, c, "g", "b")[0]; a != 5 || b != 5 {
		t.Errorf("committed a %d, b %d; want 5, 5", a, b)
	}
}

// TestProgressCountsRecordsAsTheyFinish: Progress, which the
// max-spout-pending auto-tuner reads, counts each record once its tree is
// acked, not once its offset is committed. Commits come once a
// offset.commit.period, so a tuner interval would see one, two or three
// periods' worth of progress whatever max spout pending was, take that
// for falls in progress and cut the value to the floor (issue 22: 208/s
// against 3,104/s fixed).
func TestProgressCountsRecordsAsTheyFinish(t *testing.T) {
	const topic, n = "progress", 20
	c := newCluster(t, 1, topic)
	produce(t, c, topic, 1, 0, n)
	cfg := spoutConfig(c, topic, "g")
	cfg.OffsetCommitPeriod = time.Hour // no periodic commit during the test
	sp := mustSpouts(t, cfg)
	lt := startTopology(t, "progress", sp, 1, newSeen(), nil)
	defer lt.Stop()
	until(func() bool { return sp.Stats().Acked == n })
	if p, st := sp.Progress(), sp.Stats(); p != n || st.Committed != 0 {
		t.Errorf("Progress %d with %d committed, want %d with 0: every record finished, none committed yet", p, st.Committed, n)
	}
}
