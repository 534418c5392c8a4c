package gale_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/testutil"
	"github.com/gale-stream/gale/internal/transport"
	"github.com/gale-stream/gale/internal/worker"
)

// workers runs a topology in several Workers of this process, each with
// its own runtime, talking over TCP on 127.0.0.1 as worker processes do.
type workers struct {
	t  *testing.T
	ws []worker.Handle
}

// startWorkers starts n workers of topo. dial, if set, wraps worker i's
// listener address into the address its peers dial (a proxy).
func startWorkers(t *testing.T, n int, topo *gale.Topology, conf gale.Config, obs *bridge.Observer, dial func(i int, addr string) string) *workers {
	t.Helper()
	return startWorkersWith(t, n, topo, conf, workerSetup{obs: func(int) *bridge.Observer { return obs }, dial: dial})
}

// workerSetup is how startWorkersWith starts each worker; every field may
// be left out.
type workerSetup struct {
	execs [][]int                         // worker i's executor map (nil: none given)
	obs   func(i int) *bridge.Observer    // worker i's observer
	dial  func(i int, addr string) string // the address peers dial for worker i's listener
	log   *slog.Logger                    // nil: the test's
	// parallelism is every worker's Assignment.Parallelism.
	parallelism map[string]int
	// secrets[i] is worker i's Assignment.Secret (nil: none).
	secrets []string
}

// startWorkersWith starts n workers of topo in this process, each with its
// own runtime and listener on 127.0.0.1, stopped at the end of the test.
func startWorkersWith(t *testing.T, n int, topo *gale.Topology, conf gale.Config, s workerSetup) *workers {
	t.Helper()
	lns := make([]net.Listener, n)
	addrs := make([]string, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		addrs[i] = ln.Addr().String()
		if s.dial != nil {
			addrs[i] = s.dial(i, addrs[i])
		}
	}
	if s.log == nil {
		s.log = testLogger(t)
	}
	w := &workers{t: t}
	for i := range n {
		asg := worker.Assignment{Worker: i, Workers: addrs, Parallelism: s.parallelism}
		if s.execs != nil {
			asg.Executors = s.execs[i]
		}
		if s.secrets != nil {
			asg.Secret = s.secrets[i]
		}
		var h bridge.Hooks
		if s.obs != nil {
			h.Observer = s.obs(i)
		}
		wk, err := bridge.StartWorker("test", conf, topo, asg, worker.Options{Logger: s.log.With("worker", i), Listener: lns[i]}, h)
		if err != nil {
			for _, ln := range lns[i:] {
				ln.Close()
			}
			w.stop()
			t.Fatalf("StartWorker %d: %v", i, err)
		}
		w.ws = append(w.ws, wk)
	}
	t.Cleanup(w.stop)
	return w
}

// checkExact fails t unless the word count ran exactly: each of total
// sentences acked once, none failed, every word counted once by the one
// task its fields grouping picks.
func checkExact(t *testing.T, rec *recorder, wc *wordCount, total int) {
	t.Helper()
	if got := ints(rec.Acked("sentences")); !equalInts(got, rangeInts(0, total)) {
		t.Fatalf("acked %d ids, not each of 0…%d once", len(got), total-1)
	}
	if f := rec.Failed("sentences"); len(f) > 0 {
		t.Fatalf("%d failed, first %v: %v", len(f), f[0].id, f[0].reason)
	}
	if got, want := wc.counts.snapshot(), expectedCounts(total); !equalMaps(got, want) {
		t.Fatalf("counts differ: got %v, want %v", got, want)
	}
	if n := wc.misrout.Load(); n > 0 {
		t.Fatalf("%d words reached a second count task: the fields grouping differs between workers", n)
	}
}

// stop deactivates every worker, then stops them all at once.
func (w *workers) stop() {
	for _, wk := range w.ws {
		wk.Deactivate()
	}
	var wg sync.WaitGroup
	for _, wk := range w.ws {
		wg.Go(wk.Stop)
	}
	wg.Wait()
	w.ws = nil
}

func (w *workers) status() []worker.Status {
	var out []worker.Status
	for _, wk := range w.ws {
		out = append(out, wk.Status())
	}
	return out
}

// wordCount is an acked word count: spouts emit n sentences each (message
// id = sentence number), split splits them, count counts per word and
// remembers which task saw each word.
type wordCount struct {
	n          int
	countTasks int // the count bolt's tasks; 0: one per executor
	counts     counter[string]
	seenBy     sync.Map // word → task id
	misrout    atomic.Int64
}

func sentence(i int) string {
	return fmt.Sprintf("w%d w%d w%d w%d", i%37, (i+1)%37, (i*7)%37, i%5)
}

func (wc *wordCount) topology(t *testing.T, spouts, splits, counts int) *gale.Topology {
	b := gale.NewTopologyBuilder()
	b.SetSpout("sentences", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("sentence") },
			next: func(s *funcSpout) {
				if s.n < wc.n {
					id := s.tc.TaskIndex()*wc.n + s.n
					if _, err := s.Collector.Emit(id, sentence(id)); err != nil {
						panic(err)
					}
					s.n++
				}
			},
			fail: func(s *funcSpout, id any, _ error) {
				// Replay.
				if _, err := s.Collector.Emit(id, sentence(id.(int))); err != nil {
					panic(err)
				}
			},
		}
	}, spouts)
	b.SetBolt("split", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("word") },
			execute: func(b *funcBolt, in *gale.Tuple) {
				for _, w := range strings.Fields(in.GetString(0)) {
					b.Collector.Emit(in, w)
				}
				b.Collector.Ack(in)
			},
		}
	}, splits).LocalOrShuffleGrouping("sentences")
	count := b.SetBolt("count", func() gale.Bolt {
		return &funcBolt{
			execute: func(b *funcBolt, in *gale.Tuple) {
				w := in.GetString(0)
				if prev, loaded := wc.seenBy.LoadOrStore(w, b.tc.TaskID()); loaded && prev.(int) != b.tc.TaskID() {
					wc.misrout.Add(1)
				}
				wc.counts.inc(w)
				b.Collector.Ack(in)
			},
		}
	}, counts).FieldsGrouping("split", "word")
	if wc.countTasks > 0 {
		count.SetNumTasks(wc.countTasks)
	}
	return build(t, b)
}

// expected is the word counts of sentences 0 … total-1.
func expectedCounts(total int) map[string]int {
	want := map[string]int{}
	for i := range total {
		for _, w := range strings.Fields(sentence(i)) {
			want[w]++
		}
	}
	return want
}

func TestWorkersAckedWordCount(t *testing.T) {
	wc := &wordCount{n: 3000}
	topo := wc.topology(t, 2, 2, 2)
	rec := newRecorder(galetest.NewClock(testEpoch))
	w := startWorkers(t, 2, topo, gale.Config{}, rec.observer(), nil)
	total := 2 * wc.n
	testutil.Eventually(t, 10*time.Second, "every sentence acked", func() bool { return len(rec.Acked("sentences")) >= total })
	checkExact(t, rec, wc, total)
	for i, st := range w.status() {
		if st.WireTuplesSent == 0 || st.WireBytesSent == 0 {
			t.Errorf("worker %d sent nothing to its peer (%+v): the test does not cross processes", i, st)
		}
		if st.Pending != 0 {
			t.Errorf("worker %d has %d trees pending after every ack", i, st.Pending)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalMaps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestWorkersSlowReader: a bolt in one worker stops taking tuples; the
// spout feeding it from the other worker must be throttled (credits run
// out) with a bounded number of tuples emitted, and once the bolt resumes
// every tuple arrives: nothing dropped.
func TestWorkersSlowReader(t *testing.T) {
	const total = 20000
	gate := make(chan struct{})
	var emitted, got atomic.Int64
	b := gale.NewTopologyBuilder()
	// Executors in id order are count (worker 0), sentences (worker 1),
	// split (worker 0): the spout's tuples cross to split, whose output to
	// count stays in worker 0.
	b.SetSpout("sentences", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("n") },
			next: func(s *funcSpout) {
				if s.n < total {
					s.Collector.Emit(nil, s.n)
					s.n++
					emitted.Add(1)
				}
			},
		}
	}, 1)
	b.SetBolt("split", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("n") },
			execute: func(b *funcBolt, in *gale.Tuple) { b.Collector.Emit(in, in.Value(0)) },
		}
	}, 1).ShuffleGrouping("sentences")
	b.SetBolt("count", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
			<-gate
			got.Add(1)
		}}
	}, 1).ShuffleGrouping("split")
	conf := gale.Config{
		gale.TopologyAckerExecutors:            0,
		gale.TopologyProducerBatchSize:         10,
		gale.TopologyExecutorReceiveBufferSize: 100, // 10 batches a queue
	}
	w := startWorkers(t, 2, build(t, b), conf, nil, nil)
	var open sync.Once
	openGate := func() { open.Do(func() { close(gate) }) }
	t.Cleanup(openGate) // before the workers stop, should the test fail
	// What can fill: count's queue (10 batches of 10), the batch count
	// holds and the two split holds; the spout's batches that its worker
	// had credit for (4 × 10; they are in the connection or in split's
	// queue for remote batches), each up to twice the batch size (a spout
	// keeps filling a batch for a round or two before it flushes), and
	// the one the spout holds when it finds no credit.
	const credits = 4 * 10
	const bound = 10*(10+3) + 2*10*(credits+1)
	testutil.Eventually(t, 10*time.Second, "the spout to be held back", func() bool { return emitted.Load() >= bound/4 })
	// Were the spout not held back it would emit all 20,000 in
	// milliseconds: watch it for a while.
	window := time.NewTimer(300 * time.Millisecond)
	defer window.Stop()
	poll := time.NewTicker(100 * time.Microsecond)
	defer poll.Stop()
watch:
	for {
		if n := emitted.Load(); n > bound {
			t.Fatalf("the spout emitted %d tuples into a stopped pipeline; at most %d fit its queues and credits", n, bound)
		}
		select {
		case <-window.C:
			break watch
		case <-poll.C:
		}
	}
	if st := w.ws[1].Status(); st.WireTuplesSent == 0 {
		t.Fatalf("nothing crossed to worker 0: %+v", st)
	}
	openGate()
	testutil.Eventually(t, 10*time.Second, "every tuple counted", func() bool { return got.Load() == total })
	if n := emitted.Load(); n != total {
		t.Fatalf("emitted %d, want %d", n, total)
	}
}

// proxy forwards TCP connections to a worker and can cut them all, as a
// failing network would, in the middle of whatever they carry.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	count  int
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.count++
		p.mu.Unlock()
		p.wg.Go(func() { io.Copy(u, c); u.Close(); c.Close() })
		p.wg.Go(func() { io.Copy(c, u); u.Close(); c.Close() })
	}
}

// cut closes every connection open now.
func (p *proxy) cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	n := len(p.conns) / 2
	p.conns = nil
	return n
}

func (p *proxy) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count
}

func (p *proxy) close() {
	p.ln.Close()
	p.cut()
	p.wg.Wait()
}

// TestWorkersConnectionCut cuts every connection between two workers in
// the middle of an acked word count: the workers reconnect, the trees
// whose tuples were lost time out and are replayed, and every sentence is
// acked in the end.
func TestWorkersConnectionCut(t *testing.T) {
	wc := &wordCount{n: 4000}
	topo := wc.topology(t, 2, 2, 2)
	rec := newRecorder(galetest.NewClock(testEpoch))
	var proxies []*proxy
	conf := gale.Config{gale.TopologyMessageTimeoutSecs: 2}
	startWorkers(t, 2, topo, conf, rec.observer(), func(i int, addr string) string {
		p := newProxy(t, addr)
		proxies = append(proxies, p)
		return p.ln.Addr().String()
	})
	total := 2 * wc.n
	testutil.Eventually(t, 10*time.Second, "a tenth of the sentences acked", func() bool { return len(rec.Acked("sentences")) >= total/10 })
	cut := 0
	for _, p := range proxies {
		cut += p.cut()
	}
	if cut == 0 {
		t.Fatal("no connection to cut")
	}
	testutil.Eventually(t, 60*time.Second, "every sentence acked", func() bool { return len(uniqueInts(rec.Acked("sentences"))) == total })
	for _, p := range proxies {
		if p.connections() < 2 {
			t.Errorf("a worker did not reconnect through its proxy (%d connections)", p.connections())
		}
	}
	for _, f := range rec.Failed("sentences") {
		if !errors.Is(f.reason, gale.ErrTimeout) {
			t.Errorf("sentence %v failed with %v; only timeouts are expected", f.id, f.reason)
		}
	}
	t.Logf("cut %d connections; %d replays after timeouts", cut, len(rec.Failed("sentences")))
}

func uniqueInts(ids []any) []int {
	seen := map[int]bool{}
	for _, id := range ids {
		seen[id.(int)] = true
	}
	out := make([]int, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	return out
}

func TestStartWorkerBadAssignment(t *testing.T) {
	topo := (&wordCount{n: 1}).topology(t, 1, 1, 1)
	for _, asg := range []worker.Assignment{
		{Worker: 0},
		{Worker: 2, Workers: []string{"127.0.0.1:1", "127.0.0.1:2"}},
		{Worker: 0, Workers: []string{"127.0.0.1:1", "no-port"}},
	} {
		_, err := bridge.StartWorker("test", gale.Config{}, topo, asg, worker.Options{}, bridge.Hooks{})
		if !errors.Is(err, worker.ErrInvalidAssignment) {
			t.Errorf("%+v: got %v, want ErrInvalidAssignment", asg, err)
		}
	}
}

// opaque is a type no codec knows.
type opaque struct{ x int }

// TestWorkersUnregisteredTypeFailsEmit: a value that cannot be encoded
// fails the emit itself when the stream has subscribers in another worker,
// with try.serialize off, naming the component, stream and type.
func TestWorkersUnregisteredTypeFailsEmit(t *testing.T) {
	var emitErr atomic.Value
	b := gale.NewTopologyBuilder()
	// Executors in id order: sink (worker 0), source (worker 1).
	b.SetSpout("source", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("v") },
			next: func(s *funcSpout) {
				if s.n == 0 {
					if _, err := s.Collector.Emit(nil, opaque{1}); err != nil {
						emitErr.Store(err)
					}
					s.n++
				}
			},
		}
	}, 1)
	b.SetBolt("sink", func() gale.Bolt { return &funcBolt{} }, 1).ShuffleGrouping("source")
	startWorkers(t, 2, build(t, b), gale.Config{gale.TopologyTestingAlwaysTrySerialize: false}, nil, nil)
	testutil.Eventually(t, 10*time.Second, "the emit to fail", func() bool { return emitErr.Load() != nil })
	err := emitErr.Load().(error)
	if !errors.Is(err, gale.ErrNotSerializable) {
		t.Fatalf("emit error %v, want ErrNotSerializable", err)
	}
	for _, want := range []string{`"source"`, `"default"`, "opaque"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("emit error %q does not name %s", err, want)
		}
	}
}

// TestWorkerSpoutsWaitForPeers: a worker's spouts start only once it is
// connected to every peer, so that nothing it emits waits for a peer that
// is not up.
func TestWorkerSpoutsWaitForPeers(t *testing.T) {
	var calls atomic.Int64
	b := gale.NewTopologyBuilder()
	// Executors in id order: a (worker 0, the spout), b (worker 1).
	b.SetSpout("a", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("v") },
			next:    func(s *funcSpout) { calls.Add(1) },
		}
	}, 1)
	b.SetBolt("b", func() gale.Bolt { return &funcBolt{} }, 1).ShuffleGrouping("a")
	topo := build(t, b)
	var lns [2]net.Listener
	var addrs []string
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		addrs = append(addrs, ln.Addr().String())
	}
	start := func(i int) worker.Handle {
		w, err := bridge.StartWorker("test", gale.Config{}, topo, worker.Assignment{Worker: i, Workers: addrs},
			worker.Options{Logger: testLogger(t).With("worker", i), Listener: lns[i]}, bridge.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w0 := start(0)
	defer w0.Stop()
	// Worker 1's port is bound, so worker 0's connection waits in its
	// backlog, unanswered: watch the spout for a while.
	window := time.NewTimer(200 * time.Millisecond)
	defer window.Stop()
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
watch:
	for {
		if n := calls.Load(); n > 0 {
			t.Fatalf("NextTuple called %d times before the worker reached its peer", n)
		}
		select {
		case <-window.C:
			break watch
		case <-poll.C:
		}
	}
	w1 := start(1)
	defer w1.Stop()
	testutil.Eventually(t, 10*time.Second, "the spout to start once the peer is up", func() bool { return calls.Load() > 0 })
	if st := w0.Status(); st.PeersConnected != 1 {
		t.Errorf("worker 0 reports %d peers connected, want 1", st.PeersConnected)
	}
}

// corruptingProxy forwards connections to a worker frame by frame and
// breaks the nth data frame of the first connection: its payload starts
// with a kind no worker knows.
func corruptingProxy(t *testing.T, target string, nth int) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	var first atomic.Bool
	first.Store(true)
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.count++
			p.mu.Unlock()
			corrupt := first.Swap(false)
			p.wg.Go(func() {
				defer u.Close()
				defer c.Close()
				fr, fw := transport.NewFrameReader(c, 0), transport.NewFrameWriter(u, 0)
				data := 0
				for {
					kind, payload, err := fr.Read()
					if err != nil {
						return
					}
					if kind == transport.FrameData {
						if data++; corrupt && data == nth {
							payload[0] = 0x7F
						}
					}
					if fw.Write(kind, payload) != nil || fw.Flush() != nil {
						return
					}
				}
			})
			p.wg.Go(func() { io.Copy(c, u); u.Close(); c.Close() })
		}
	})
	t.Cleanup(p.close)
	return p
}

// captureLogs records log messages at error level, passing all on to log.
type captureLogs struct {
	slog.Handler
	mu   *sync.Mutex
	errs *[]string
}

func (h captureLogs) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
		h.mu.Lock()
		*h.errs = append(*h.errs, b.String())
		h.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h captureLogs) WithAttrs(as []slog.Attr) slog.Handler {
	return captureLogs{h.Handler.WithAttrs(as), h.mu, h.errs}
}

// TestWorkersGarbageFromPeer: a peer's data frame that does not decode
// closes that connection with a logged error naming the problem; the
// worker keeps running, the peer reconnects, and the trees the frame
// carried are replayed: every sentence is acked in the end.
func TestWorkersGarbageFromPeer(t *testing.T) {
	wc := &wordCount{n: 2000}
	topo := wc.topology(t, 2, 2, 2)
	rec := newRecorder(galetest.NewClock(testEpoch))
	var mu sync.Mutex
	var errs []string
	log := slog.New(captureLogs{testLogger(t).Handler(), &mu, &errs})
	lns := make([]net.Listener, 2)
	addrs := make([]string, 2)
	var proxies []*proxy
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		p := corruptingProxy(t, ln.Addr().String(), 5)
		proxies = append(proxies, p)
		addrs[i] = p.ln.Addr().String()
	}
	w := &workers{t: t}
	for i := range lns {
		wk, err := bridge.StartWorker("test", gale.Config{gale.TopologyMessageTimeoutSecs: 2}, topo,
			worker.Assignment{Worker: i, Workers: addrs},
			worker.Options{Logger: log.With("worker", i), Listener: lns[i]}, bridge.Hooks{Observer: rec.observer()})
		if err != nil {
			t.Fatal(err)
		}
		w.ws = append(w.ws, wk)
	}
	t.Cleanup(w.stop)
	total := 2 * wc.n
	testutil.Eventually(t, 60*time.Second, "every sentence acked", func() bool { return len(uniqueInts(rec.Acked("sentences"))) == total })
	mu.Lock()
	logged := slices.Clone(errs)
	mu.Unlock()
	found := 0
	for _, e := range logged {
		if strings.Contains(e, "closed a connection from a peer worker") && strings.Contains(e, "unknown data frame kind 127") {
			found++
		}
	}
	if found != 2 {
		t.Errorf("want one logged error per corrupted connection (2), got %d in %q", found, logged)
	}
	for i, p := range proxies {
		if p.connections() < 2 {
			t.Errorf("worker %d's peer did not reconnect after the bad frame (%d connections)", i, p.connections())
		}
	}
}
