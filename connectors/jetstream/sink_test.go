package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/jetstream"
	"github.com/gale-stream/gale/internal/testutil"
)

// listSpout emits its rows once each, (id, subject, data), with the row's
// index as the message id, and records each tree's end. onAck, if set,
// runs on the spout's goroutine when a tree completes.
type listSpout struct {
	gale.BaseSpout
	rows [][3]any
	next int
	gate chan struct{} // if set, each row waits for a value on it
	// replay: a failed row is emitted again
	replay bool
	again  []int
	mu     sync.Mutex
	acked  []int
	fails  map[int]error
	onAck  func(i int)
}

func (s *listSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("id", "subject", "data") }

func (s *listSpout) NextTuple() {
	if len(s.again) > 0 {
		i := s.again[0]
		s.again = s.again[1:]
		r := s.rows[i]
		s.Collector.Emit(i, r[0], r[1], r[2])
		return
	}
	if s.next >= len(s.rows) {
		return
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		default:
			return
		}
	}
	r := s.rows[s.next]
	s.Collector.Emit(s.next, r[0], r[1], r[2])
	s.next++
}

func (s *listSpout) Ack(id any) {
	if s.onAck != nil {
		s.onAck(id.(int))
	}
	s.mu.Lock()
	s.acked = append(s.acked, id.(int))
	s.mu.Unlock()
}

func (s *listSpout) Fail(id any, reason error) {
	s.mu.Lock()
	if s.fails == nil {
		s.fails = make(map[int]error)
	}
	s.fails[id.(int)] = reason
	s.mu.Unlock()
	if s.replay {
		s.again = append(s.again, id.(int))
	}
}

func (s *listSpout) ends() (acked int, failed map[int]error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := make(map[int]error, len(s.fails))
	for k, v := range s.fails {
		f[k] = v
	}
	return len(s.acked), f
}

func newSink(t testing.TB, cfg jetstream.Config) *jetstream.Sinks {
	t.Helper()
	s, err := jetstream.NewSinks(cfg)
	if err != nil {
		t.Fatalf("NewSinks: %v", err)
	}
	return s
}

// runSink runs spout → sink until the test ends.
func runSink(t testing.TB, sp *listSpout, sink *jetstream.Sinks, conf gale.Config) *gale.LocalTopology {
	t.Helper()
	b := gale.NewTopologyBuilder()
	b.SetSpout("rows", func() gale.Spout { return sp }, 1)
	b.SetBolt("sink", sink.New, 1).ShuffleGrouping("rows")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal("sink", conf, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(lt.Stop)
	return lt
}

func TestSinkAcksItsInputOnlyOnceTheStreamStoredIt(t *testing.T) {
	ts := startServer(t)
	_, js := ts.client(t)
	st := createStream(t, js, "OUT", "out.>")
	const n = 200
	sp := &listSpout{}
	for i := range n {
		sp.rows = append(sp.rows, [3]any{fmt.Sprint(i), fmt.Sprintf("out.%d", i), []byte(fmt.Sprintf("body-%d", i))})
	}
	// When the spout hears a tree completed, the stream must hold the
	// message already.
	var mu sync.Mutex
	var missing []int
	sp.onAck = func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := st.GetLastMsgForSubject(ctx, fmt.Sprintf("out.%d", i))
		if err != nil || string(m.Data) != fmt.Sprintf("body-%d", i) {
			mu.Lock()
			missing = append(missing, i)
			mu.Unlock()
		}
	}
	sink := newSink(t, jetstream.Config{URL: ts.URL, SubjectField: "subject", MsgIDField: "id", Stream: "OUT", PublishMaxPending: 16})
	runSink(t, sp, sink, nil)

	testutil.Eventually(t, 60*time.Second, "every input acked", func() bool { a, _ := sp.ends(); return a == n })
	mu.Lock()
	defer mu.Unlock()
	if len(missing) > 0 {
		t.Fatalf("%d inputs acked before the stream stored them: %v", len(missing), missing)
	}
	if got := sink.Stats(); got.Published != n || got.Acked != n || got.Failed != 0 {
		t.Fatalf("sink stats %+v, want %d published and acked", got, n)
	}
}

func TestSinkFailsItsInputWhenNoStreamStoresIt(t *testing.T) {
	ts := startServer(t)
	sp := &listSpout{rows: [][3]any{{"a", "", []byte("x")}, {"b", "", []byte("y")}}}
	sink := newSink(t, jetstream.Config{URL: ts.URL, Subject: "nowhere.at.all", PublishTimeout: 2 * time.Second})
	runSink(t, sp, sink, nil)

	testutil.Eventually(t, 60*time.Second, "both inputs failed", func() bool { _, f := sp.ends(); return len(f) == 2 })
	acked, fails := sp.ends()
	if acked != 0 {
		t.Fatalf("%d inputs acked with no stream to store them", acked)
	}
	for i, err := range fails {
		if c, _ := gale.ClassOf(err); c != gale.ClassTransient || !errors.Is(err, njs.ErrNoStreamResponse) {
			t.Errorf("input %d failed with %v (class %v), want a transient failure wrapping ErrNoStreamResponse", i, err, c)
		}
	}
}

func TestSinkFailsItsInputWhileTheServerIsDownAndAcksAgainOnceItIsBack(t *testing.T) {
	ts := startServer(t)
	_, js := ts.client(t)
	createStream(t, js, "OUT", "out.>")

	gate := make(chan struct{}, 2)
	sp := &listSpout{gate: gate, replay: true, rows: [][3]any{{"a", "", []byte("while down")}, {"b", "", []byte("once back")}}}
	sink := newSink(t, jetstream.Config{URL: ts.URL, Subject: "out.x", MsgIDField: "id", PublishTimeout: 500 * time.Millisecond})
	runSink(t, sp, sink, nil)

	ts.stop()
	gate <- struct{}{}
	testutil.Eventually(t, 60*time.Second, "the input sent while the server was down failed", func() bool { _, f := sp.ends(); return len(f) >= 1 })
	if a, f := sp.ends(); a != 0 {
		t.Fatalf("%d acked while the server was down", a)
	} else if c, _ := gale.ClassOf(f[0]); c != gale.ClassTransient {
		t.Fatalf("failed with %v (class %v), want transient", f[0], c)
	}

	// Back: the replayed input and the next one are stored, once each,
	// and acked.
	ts.start()
	gate <- struct{}{}
	testutil.Eventually(t, 60*time.Second, "both inputs acked once the server was back", func() bool { a, _ := sp.ends(); return a == 2 })
	if got := streamMsgs(t, js, "OUT"); len(got) != 2 || got[0] == got[1] {
		t.Fatalf("stream holds %q, want \"while down\" and \"once back\" once each", got)
	}
}

func TestSinkStoresAReplayedTupleOnceByItsMessageID(t *testing.T) {
	ts := startServer(t)
	_, js := ts.client(t)
	createStream(t, js, "OUT", "out.>")
	sp := &listSpout{rows: [][3]any{{"order-7", "", "first"}, {"order-7", "", "replayed"}, {"order-8", "", "other"}}}
	sink := newSink(t, jetstream.Config{URL: ts.URL, Subject: "out.orders", MsgIDField: "id"})
	runSink(t, sp, sink, nil)

	testutil.Eventually(t, 60*time.Second, "every input acked", func() bool { a, _ := sp.ends(); return a == 3 })
	if got := streamMsgs(t, js, "OUT"); len(got) != 2 || got[0] != "first" || got[1] != "other" {
		t.Fatalf("stream holds %q, want the first of order-7 and order-8", got)
	}
	if st := sink.Stats(); st.Duplicates != 1 || st.Acked != 3 {
		t.Fatalf("sink stats %+v, want 3 acked, 1 of them a duplicate", st)
	}
}

func TestSinkFailsAnUnusableInputAsPermanent(t *testing.T) {
	ts := startServer(t)
	sp := &listSpout{rows: [][3]any{{"a", "", 42}}}
	sink := newSink(t, jetstream.Config{URL: ts.URL, Subject: "out.x"})
	runSink(t, sp, sink, nil)
	testutil.Eventually(t, 60*time.Second, "the input failed", func() bool { _, f := sp.ends(); return len(f) == 1 })
	_, f := sp.ends()
	if c, _ := gale.ClassOf(f[0]); c != gale.ClassPermanent || !strings.Contains(f[0].Error(), `data.field "data"`) {
		t.Fatalf("failed with %v (class %v), want a permanent failure naming data.field", f[0], c)
	}
}
