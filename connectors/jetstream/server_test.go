package jetstream_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/gale-stream/gale"
)

// testServer is an embedded nats-server with JetStream on 127.0.0.1,
// storing in a temporary directory. It shuts down (and waits) when the
// test ends.
type testServer struct {
	t    testing.TB
	opts *server.Options
	s    *server.Server
	URL  string
}

func startServer(t testing.TB) *testServer {
	t.Helper()
	ts := &testServer{t: t, opts: &server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	}}
	ts.start()
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) start() {
	ts.t.Helper()
	s, err := server.NewServer(ts.opts)
	if err != nil {
		ts.t.Fatalf("nats-server: %v", err)
	}
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		s.WaitForShutdown()
		ts.t.Fatal("nats-server not ready in 30s")
	}
	ts.s = s
	ts.URL = s.ClientURL()
	// A restart keeps the port, so clients reconnect.
	ts.opts.Port = s.Addr().(*net.TCPAddr).Port
}

func (ts *testServer) stop() {
	if ts.s == nil {
		return
	}
	ts.s.Shutdown()
	ts.s.WaitForShutdown()
	ts.s = nil
}

// client connects to the server; the connection closes when the test ends.
func (ts *testServer) client(t testing.TB) (*nats.Conn, njs.JetStream) {
	t.Helper()
	nc, err := nats.Connect(ts.URL, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := njs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// createStream creates a stream capturing subjects.
func createStream(t testing.TB, js njs.JetStream, name string, subjects ...string) njs.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, njs.StreamConfig{Name: name, Subjects: subjects, Storage: njs.FileStorage})
	if err != nil {
		t.Fatalf("create stream %s: %v", name, err)
	}
	return st
}

// publish publishes each body to subject and waits for the stream.
func publish(t testing.TB, js njs.JetStream, subject string, bodies ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, b := range bodies {
		if _, err := js.Publish(ctx, subject, []byte(b)); err != nil {
			t.Fatalf("publish %q: %v", b, err)
		}
	}
}

// consumerInfo returns the durable consumer's state on the server.
func consumerInfo(t testing.TB, js njs.JetStream, stream, consumer string) *njs.ConsumerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		t.Fatalf("consumer %s/%s: %v", stream, consumer, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatalf("consumer %s/%s info: %v", stream, consumer, err)
	}
	return info
}

// streamMsgs returns the bodies stored in a stream, in order.
func streamMsgs(t testing.TB, js njs.JetStream, stream string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		out = append(out, string(m.Data))
	}
	return out
}

// testLogger routes logs to t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var _ io.Writer = tWriter{}

// delivery is what the test bolt saw of one tuple.
type delivery struct {
	Subject  string
	Data     string
	Sequence uint64
	Attempt  int
	At       time.Time
}

// recorder collects the deliveries a test bolt saw and decides each one's
// fate by its body's prefix:
//
//	ok-…       acked
//	hold-…     held until release, then acked
//	perm-…     failed as permanent
//	fail-…     failed as transient, every time
//	flaky<N>-… failed as transient until attempt N, then acked
//	late-…     failed as delayable, asking for 150ms
type recorder struct {
	mu    sync.Mutex
	seen  []delivery
	holdN int // with recBolt.holdHalf: after this many, hold every other tuple
}

func (r *recorder) add(d delivery) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, d)
	return len(r.seen)
}

func (r *recorder) snapshot() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.seen...)
}

func (r *recorder) count(pred func(delivery) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, d := range r.seen {
		if pred(d) {
			n++
		}
	}
	return n
}

// recBolt is the test bolt. Held tuples are acked on the task's goroutine
// through Wakeup when release is called.
type recBolt struct {
	gale.BaseBolt
	rec      *recorder
	held     []*gale.Tuple
	mu       sync.Mutex
	released bool
	wake     func()
	holdHalf bool           // after rec.holdN deliveries, hold every other tuple
	acked    map[uint64]int // with holdHalf: the sequences acked, and how often
}

func (b *recBolt) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *recBolt) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	b.wake = c.Wakeup(b.flush)
	return b.BaseBolt.Prepare(tc, c)
}

func (b *recBolt) release() {
	b.mu.Lock()
	b.released = true
	b.mu.Unlock()
	b.wake()
}

func (b *recBolt) flush() {
	b.mu.Lock()
	rel := b.released
	b.mu.Unlock()
	if !rel {
		return
	}
	for _, t := range b.held {
		b.Collector.Ack(t)
	}
	b.held = nil
}

func (b *recBolt) Execute(t *gale.Tuple) {
	d := delivery{
		Subject:  t.GetStringByField("subject"),
		Data:     string(t.ValueByField("data").([]byte)),
		Sequence: t.ValueByField("sequence").(uint64),
		Attempt:  t.GetIntByField("attempt"),
		At:       time.Now(),
	}
	n := b.rec.add(d)
	if b.holdHalf {
		if n > b.rec.holdN && n%2 == 0 {
			b.held = append(b.held, t)
			return
		}
		b.rec.mu.Lock()
		b.acked[d.Sequence]++
		b.rec.mu.Unlock()
		b.Collector.Ack(t)
		return
	}
	switch body := d.Data; {
	case strings.HasPrefix(body, "hold-"):
		b.mu.Lock()
		rel := b.released
		b.mu.Unlock()
		if rel {
			b.Collector.Ack(t)
			return
		}
		b.held = append(b.held, t)
	case strings.HasPrefix(body, "perm-"):
		b.Collector.Fail(t, gale.Permanent(fmt.Errorf("malformed %q", body)))
	case strings.HasPrefix(body, "fail-"):
		b.Collector.Fail(t, gale.Transient(fmt.Errorf("downstream down for %q", body)))
	case strings.HasPrefix(body, "late-"):
		if d.Attempt < 2 {
			b.Collector.Fail(t, gale.Delayed(fmt.Errorf("rate limited"), 150*time.Millisecond))
			return
		}
		b.Collector.Ack(t)
	case strings.HasPrefix(body, "flaky"):
		var n int
		fmt.Sscanf(body, "flaky%d-", &n)
		if d.Attempt < n {
			b.Collector.Fail(t, gale.Transient(fmt.Errorf("blip %d for %q", d.Attempt, body)))
			return
		}
		b.Collector.Ack(t)
	default:
		b.Collector.Ack(t)
	}
}

// runTopology runs spout → recBolt in this process until stop (or the
// test's end). conf adds to the topology config.
func runTopology(t testing.TB, name string, spout func() gale.Spout, bolt *recBolt, conf gale.Config) *gale.LocalTopology {
	t.Helper()
	b := gale.NewTopologyBuilder()
	b.SetSpout("in", spout, 1)
	b.SetBolt("work", func() gale.Bolt { return bolt }, 1).ShuffleGrouping("in")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if conf == nil {
		conf = gale.Config{}
	}
	lt, err := gale.StartLocal(name, conf, topo, gale.RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("start topology: %v", err)
	}
	t.Cleanup(lt.Stop)
	return lt
}

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
