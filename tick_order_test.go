package gale_test

import (
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
)

// handClock is a gale.Clock whose tickers fire only when the test sends
// on them, so a test knows a tick is waiting before the bolt looks.
type handClock struct {
	mu      sync.Mutex
	tickers map[time.Duration][]chan time.Time
}

func (c *handClock) Now() time.Time { return time.Unix(0, 0) }

func (c *handClock) NewTicker(d time.Duration) gale.Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.tickers[d] = append(c.tickers[d], ch)
	return handTicker(ch)
}

// fire sends one tick on every ticker of period d, which must exist.
func (c *handClock) fire(t *testing.T, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tickers[d]) == 0 {
		t.Fatalf("no ticker of period %s", d)
	}
	for _, ch := range c.tickers[d] {
		ch <- time.Unix(0, 0)
	}
}

type handTicker chan time.Time

func (h handTicker) C() <-chan time.Time { return h }
func (handTicker) Stop()                 {}

// burstSpout emits one tuple in a round of its own; once the bolt holds
// it, n more in the next round; and closes flushed in the round after,
// when those n have been sent to the bolt's queue. (A round calls
// NextTuple until a call emits nothing, then sends what it emitted.)
type burstSpout struct {
	gale.BaseSpout
	n       int
	calls   int
	holding <-chan struct{}
	flushed chan struct{}
}

func (*burstSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("i") }

func (s *burstSpout) NextTuple() {
	s.calls++
	switch s.calls {
	case 1:
		s.Collector.Emit(nil, 0)
	case 3:
		<-s.holding
		for i := 1; i <= s.n; i++ {
			s.Collector.Emit(nil, i)
		}
	case 4:
		close(s.flushed)
	}
}

// execBolt is a Bolt made of its Execute.
type execBolt struct {
	gale.BaseBolt
	execute func(b *execBolt, in *gale.Tuple)
}

func (*execBolt) DeclareOutputFields(gale.OutputDeclarer) {}
func (b *execBolt) Execute(in *gale.Tuple)                { b.execute(b, in) }

// TestTickWaitsBehindQueuedInput: a tick is delivered after the tuples
// queued before it, as in Storm, not ahead of them. The bolt holds its
// first tuple until n more are queued and a tick is waiting; then it sees
// the n tuples, then the tick.
func TestTickWaitsBehindQueuedInput(t *testing.T) {
	const n = 200
	const freq = 7 * time.Second
	clock := &handClock{tickers: map[time.Duration][]chan time.Time{}}
	release, holding := make(chan struct{}), make(chan struct{})
	spout := &burstSpout{n: n, holding: holding, flushed: make(chan struct{})}
	var seen []string // "t" per tuple, "tick" per tick: the bolt's goroutine, then read after done
	done := make(chan struct{})
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", func() gale.Spout { return spout }, 1)
	b.SetBolt("b", func() gale.Bolt {
		return &execBolt{execute: func(b *execBolt, in *gale.Tuple) {
			if in.IsTick() {
				seen = append(seen, "tick")
				close(done)
				return
			}
			if len(seen) == 0 {
				close(holding)
				<-release
			}
			seen = append(seen, "t")
			b.Collector.Ack(in)
		}}
	}, 1).ShuffleGrouping("s").AddConfiguration(gale.TopologyTickTupleFreqSecs, int(freq/time.Second))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	lt, err := gale.StartLocal("tick-order", gale.Config{gale.TopologyAckerExecutors: 0}, topo,
		gale.RunOptions{Logger: testLogger(t), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	<-holding
	<-spout.flushed
	clock.fire(t, freq) // the tick is now waiting on the ticker's channel
	close(release)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the bolt never saw the tick")
	}
	tick := -1
	for i, s := range seen {
		if s == "tick" {
			tick = i
		}
	}
	if tick != n+1 {
		t.Errorf("the tick came after %d tuples, want after all %d queued before it (the held one and %d)", tick, n+1, n)
	}
}
