package gale_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/internal/testutil"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
)

// TestMain is the root package's only TestMain; it covers the in-package
// tests (package gale) too.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testSeed returns the seed for a randomized test and logs how to replay it.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	return testutil.Seed(t)
}

// tWriter sends log output to t.Log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// testLogger routes the runtime's logs to t.Log (shown on failure or -v).
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// complete runs topo with galetest.Complete, failing the test on error.
func complete(t *testing.T, topo *gale.Topology, opts galetest.Options) *galetest.Result {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 20 * time.Second
	}
	res, err := galetest.Complete(context.Background(), topo, opts)
	if err != nil {
		t.Fatalf("galetest.Complete: %v", err)
	}
	return res
}

func build(t *testing.T, b *gale.TopologyBuilder) *gale.Topology {
	t.Helper()
	topo, err := b.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return topo
}

// funcSpout is a spout whose behaviour is given by functions; a nil
// function does nothing. The fields of one instance belong to its task.
type funcSpout struct {
	gale.BaseSpout
	declare func(d gale.OutputDeclarer)
	open    func(s *funcSpout) error
	next    func(s *funcSpout)
	ack     func(s *funcSpout, id any)
	fail    func(s *funcSpout, id any, reason error)
	close   func(s *funcSpout)

	tc *gale.TopologyContext
	n  int // for next's use
}

func (s *funcSpout) DeclareOutputFields(d gale.OutputDeclarer) {
	if s.declare != nil {
		s.declare(d)
	}
}

func (s *funcSpout) Open(tc *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.BaseSpout.Open(tc, c)
	s.tc = tc
	if s.open != nil {
		return s.open(s)
	}
	return nil
}

func (s *funcSpout) NextTuple() {
	if s.next != nil {
		s.next(s)
	}
}

func (s *funcSpout) Ack(id any) {
	if s.ack != nil {
		s.ack(s, id)
	}
}

func (s *funcSpout) Fail(id any, reason error) {
	if s.fail != nil {
		s.fail(s, id, reason)
	}
}

func (s *funcSpout) Close() {
	if s.close != nil {
		s.close(s)
	}
}

// funcBolt is a bolt whose behaviour is given by functions; a nil execute
// acks the input.
type funcBolt struct {
	gale.BaseBolt
	declare func(d gale.OutputDeclarer)
	prepare func(b *funcBolt) error
	execute func(b *funcBolt, t *gale.Tuple)
	cleanup func(b *funcBolt)

	tc   *gale.TopologyContext
	held []*gale.Tuple // for execute's use
	n    int
}

func (b *funcBolt) DeclareOutputFields(d gale.OutputDeclarer) {
	if b.declare != nil {
		b.declare(d)
	}
}

func (b *funcBolt) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	b.BaseBolt.Prepare(tc, c)
	b.tc = tc
	if b.prepare != nil {
		return b.prepare(b)
	}
	return nil
}

func (b *funcBolt) Execute(t *gale.Tuple) {
	if b.execute == nil {
		b.Collector.Ack(t)
		return
	}
	b.execute(b, t)
}

func (b *funcBolt) Cleanup() {
	if b.cleanup != nil {
		b.cleanup(b)
	}
}

// seqSpout emits n tuples (seq) with seq as the message id, on the default
// stream declared with fields.
func seqSpout(n int, fields ...string) func() gale.Spout {
	if len(fields) == 0 {
		fields = []string{"seq"}
	}
	return func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare(fields...) },
			next: func(s *funcSpout) {
				if s.n < n {
					vals := make([]any, len(fields))
					vals[0] = s.n
					for i := 1; i < len(vals); i++ {
						vals[i] = s.n
					}
					if _, err := s.Collector.Emit(s.n, vals...); err != nil {
						panic(err)
					}
					s.n++
				}
			},
		}
	}
}

// list is a concurrency-safe list of values, for callbacks running in
// executor goroutines.
type list[T any] struct {
	mu sync.Mutex
	xs []T
}

func (l *list[T]) add(x T) {
	l.mu.Lock()
	l.xs = append(l.xs, x)
	l.mu.Unlock()
}

func (l *list[T]) all() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.xs)
}

// counter counts occurrences of keys, concurrently.
type counter[K comparable] struct {
	mu sync.Mutex
	m  map[K]int
}

func (c *counter[K]) inc(k K) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]int{}
	}
	c.m[k]++
	c.mu.Unlock()
}

func (c *counter[K]) get(k K) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *counter[K]) snapshot() map[K]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[K]int, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// ints converts message ids to ints, sorted.
func ints(ids []any) []int {
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		out = append(out, id.(int))
	}
	slices.Sort(out)
	return out
}

func rangeInts(lo, hi int) []int {
	var out []int
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// failure is a spout message that failed, seen by an Observer.
type failure struct {
	id     any
	reason error
	at     time.Time // the clock's time when Fail was called
}

// recorder records what an Observer sees, per spout.
type recorder struct {
	mu     sync.Mutex
	clock  gale.Clock
	acked  map[string][]any
	ackAt  map[string][]time.Time
	failed map[string][]failure
}

func newRecorder(clock gale.Clock) *recorder {
	return &recorder{clock: clock, acked: map[string][]any{}, ackAt: map[string][]time.Time{}, failed: map[string][]failure{}}
}

func (r *recorder) observer() *bridge.Observer {
	return &bridge.Observer{
		Ack: func(spout string, _ int, id any) {
			r.mu.Lock()
			r.acked[spout] = append(r.acked[spout], id)
			r.ackAt[spout] = append(r.ackAt[spout], r.clock.Now())
			r.mu.Unlock()
		},
		Fail: func(spout string, _ int, id any, reason error) {
			r.mu.Lock()
			r.failed[spout] = append(r.failed[spout], failure{id, reason, r.clock.Now()})
			r.mu.Unlock()
		},
	}
}

func (r *recorder) Acked(spout string) []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.acked[spout])
}

func (r *recorder) Failed(spout string) []failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.failed[spout])
}

var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// startLocal starts topo on clk (a new manual clock if nil); the topology
// is stopped when the test ends.
func startLocal(t *testing.T, topo *gale.Topology, conf gale.Config, clk *galetest.Clock) (*gale.LocalTopology, *recorder, *galetest.Clock) {
	t.Helper()
	if clk == nil {
		clk = galetest.NewClock(testEpoch)
	}
	rec := newRecorder(clk)
	opts := gale.RunOptions{Logger: testLogger(t), Clock: clk}
	bridge.SetHooks(&opts, bridge.Hooks{Observer: rec.observer()})
	lt, err := gale.StartLocal("test", conf, topo, opts)
	if err != nil {
		t.Fatalf("StartLocal: %v", err)
	}
	t.Cleanup(lt.Stop)
	return lt, rec, clk
}
