// Package doctorfaults is a topology whose faults are set by its
// parameters, for `gale doctor`'s staged-fault tests and for trying the
// doctor and `gale monitor` by hand:
//
//	gale submit doctor-faults -p rate=50 -p delay=20ms -p max-spout-pending=50   # a bolt too slow
//	gale submit doctor-faults -p max-spout-pending=1 -p delay=5ms -p work-executors=8   # max spout pending far too low
//	gale submit doctor-faults -p delay=1500ms -p timeout=1 -p rate=1 -p work-executors=4   # timeouts shorter than the processing
//	gale submit doctor-faults -p hot-key=0.9 -p rate=100 -p delay=12ms -p work-executors=8 -p max-spout-pending=50   # a hot key
//	gale submit doctor-faults -p live-mb=120 -p rate=100   # GC pressure, in a cluster with worker.heap.memory.mb: 100
//	gale submit doctor-faults -p no-ack=true -p rate=50   # a bolt that never acks
//
// The topology is source → parse → work: the spout emits numbered
// tuples reliably (a failed one is emitted again, as from a durable
// source), parse passes each on with a key, work sleeps delay per tuple
// (holding its executor as slow work does, without burning a core) and
// acks. With hot-key, work's input is grouped by the key (fields
// grouping) and that share of the tuples carries key 0; with live-mb,
// each worker process keeps that many MiB live in its work tasks, which
// make some garbage per tuple; with no-ack, work neither acks nor fails
// its input.
package doctorfaults

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gale-stream/gale"
)

// TopologyName is the topology's name in the gale binary.
const TopologyName = "doctor-faults"

// Params are the topology's parameters.
type Params struct {
	// Delay is work's time per tuple.
	Delay time.Duration
	// WorkExecutors and WorkTasks are work's executors and tasks (tasks
	// above executors leave room for a rebalance).
	WorkExecutors, WorkTasks int
	// MaxSpoutPending is topology.max.spout.pending (0: unset).
	MaxSpoutPending int
	// TimeoutSecs is topology.message.timeout.secs (0: unset).
	TimeoutSecs int
	// Rate paces the spout, tuples per second (0: as fast as it may).
	Rate float64
	// FailEvery makes work fail every n-th tuple it gets (0: none),
	// with an error.
	FailEvery int
	// HotKey is the share of tuples (0 to 1) that carry key 0; with it set
	// work's input is grouped by the key (fields grouping), else shuffled.
	// The other tuples carry keys 1 to 1000.
	HotKey float64
	// LiveMB is how many MiB each worker process keeps live in its work
	// tasks (0: none); each tuple then also makes 64 KiB of garbage.
	LiveMB int
	// NoAck has work neither ack nor fail its input.
	NoAck bool
}

// DefaultParams are the parameters of a topology without faults.
func DefaultParams() Params { return Params{WorkExecutors: 1, WorkTasks: 4} }

// ParseParams reads `-p KEY=VALUE` parameters: delay (a Go duration),
// work-executors, work-tasks, max-spout-pending, timeout (seconds), rate
// (tuples per second), fail-every, hot-key (a share), live-mb and
// no-ack (true or false).
func ParseParams(params map[string]string) (Params, error) {
	p := DefaultParams()
	ints := map[string]*int{"work-executors": &p.WorkExecutors, "work-tasks": &p.WorkTasks,
		"max-spout-pending": &p.MaxSpoutPending, "timeout": &p.TimeoutSecs, "fail-every": &p.FailEvery, "live-mb": &p.LiveMB}
	known := append(slices.Collect(maps.Keys(ints)), "delay", "rate", "hot-key", "no-ack")
	slices.Sort(known)
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		switch ip := ints[k]; {
		case k == "delay":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				errs = append(errs, fmt.Errorf("parameter delay: want a duration ≥ 0 such as 20ms, got %q", v))
			}
			p.Delay = d
		case k == "rate":
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || r < 0 {
				errs = append(errs, fmt.Errorf("parameter rate: want tuples per second ≥ 0, got %q", v))
			}
			p.Rate = r
		case k == "hot-key":
			h, err := strconv.ParseFloat(v, 64)
			if err != nil || h < 0 || h > 1 {
				errs = append(errs, fmt.Errorf("parameter hot-key: want the share of tuples with the hot key, 0 to 1, got %q", v))
			}
			p.HotKey = h
		case k == "no-ack":
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("parameter no-ack: want true or false, got %q", v))
			}
			p.NoAck = b
		case ip != nil:
			n, err := strconv.Atoi(v)
			least := 0
			if k == "work-executors" || k == "work-tasks" {
				least = 1
			}
			if err != nil || n < least {
				errs = append(errs, fmt.Errorf("parameter %s: want a whole number ≥ %d, got %q", k, least, v))
			}
			*ip = n
		default:
			errs = append(errs, fmt.Errorf("unknown parameter %q (%s takes %s)", k, TopologyName, strings.Join(known, ", ")))
		}
	}
	if p.WorkTasks < p.WorkExecutors {
		if _, set := params["work-tasks"]; set {
			errs = append(errs, fmt.Errorf("parameter work-tasks (%d) must be ≥ work-executors (%d)", p.WorkTasks, p.WorkExecutors))
		}
		p.WorkTasks = p.WorkExecutors
	}
	return p, errors.Join(errs...)
}

// Build builds the topology for `gale submit doctor-faults -p …`.
func Build(params map[string]string) (*gale.Topology, gale.Config, error) {
	p, err := ParseParams(params)
	if err != nil {
		return nil, nil, err
	}
	return Topology(p)
}

// Topology builds source → parse → work with p's faults.
func Topology(p Params) (*gale.Topology, gale.Config, error) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("source", func() gale.Spout { return &source{rate: p.Rate} }, 1)
	b.SetBolt("parse", func() gale.Bolt { return &parse{hot: p.HotKey} }, 1).ShuffleGrouping("source")
	w := b.SetBolt("work", func() gale.Bolt {
		return &work{delay: p.Delay, failEvery: p.FailEvery, liveMB: p.LiveMB, noAck: p.NoAck}
	}, p.WorkExecutors).SetNumTasks(p.WorkTasks)
	if p.HotKey > 0 {
		w.FieldsGrouping("parse", "key")
	} else {
		w.ShuffleGrouping("parse")
	}
	topo, err := b.Build()
	if err != nil {
		return nil, nil, err
	}
	conf := gale.Config{}
	if p.MaxSpoutPending > 0 {
		conf[gale.TopologyMaxSpoutPending] = p.MaxSpoutPending
	}
	if p.TimeoutSecs > 0 {
		conf[gale.TopologyMessageTimeoutSecs] = p.TimeoutSecs
	}
	return topo, conf, nil
}

// source emits 0, 1, 2, … with themselves as message ids; a failed one
// is emitted again before new ones. With a rate, replays count against
// it as new tuples do.
type source struct {
	gale.BaseSpout
	rate   float64
	next   int64
	replay []int64
	start  time.Time
	sent   int64 // tuples emitted since start, replays included, for the pacing
}

func (*source) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("n") }

func (s *source) Activate() {
	s.start, s.sent = time.Now(), 0
}

func (s *source) NextTuple() {
	if s.rate > 0 {
		if s.start.IsZero() {
			s.start = time.Now()
		}
		if float64(s.sent) >= s.rate*time.Since(s.start).Seconds() {
			return // not due yet
		}
	}
	s.sent++
	if n := len(s.replay); n > 0 {
		id := s.replay[n-1]
		s.replay = s.replay[:n-1]
		s.Collector.Emit(id, id)
		return
	}
	s.Collector.Emit(s.next, s.next)
	s.next++
}

func (s *source) Fail(msgID any, reason error) {
	if errors.Is(reason, gale.ErrShutdown) {
		return
	}
	s.replay = append(s.replay, msgID.(int64))
}

// parse passes each tuple on, anchored, with its key: 0 for a hot share
// of them (spread evenly over the numbers), else 1 to 1000.
type parse struct {
	gale.BaseBolt
	hot float64
}

func (*parse) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("n", "key") }

func (b *parse) Execute(t *gale.Tuple) {
	n := t.GetInt64(0)
	b.Collector.Emit(t, n, key(n, b.hot))
	b.Collector.Ack(t)
}

// key is tuple n's key: 0 for a share hot of the numbers, else 1 to
// 1000.
func key(n int64, hot float64) int64 {
	// n × the golden ratio, mod 1, spreads any run of numbers evenly.
	if f := math.Mod(float64(n)*0.6180339887498949, 1); f < hot {
		return 0
	}
	return 1 + n%1000
}

// work takes delay per tuple, then acks it (or fails every failEvery-th,
// or neither with noAck). With liveMB it keeps that much live and makes
// garbage per tuple.
type work struct {
	gale.BaseBolt
	delay     time.Duration
	failEvery int
	liveMB    int
	noAck     bool
	seen      int
	live      [][]byte
	garbage   []byte
}

func (*work) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *work) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	if err := b.BaseBolt.Prepare(tc, c); err != nil {
		return err
	}
	// The process keeps liveMB in all, in the first task to ask.
	liveMu.Lock()
	n := max(b.liveMB-liveKept, 0)
	liveKept += n
	liveMu.Unlock()
	for range n {
		chunk := make([]byte, 1<<20)
		for i := range chunk {
			chunk[i] = byte(i) // in use: faulted in, not zero pages
		}
		b.live = append(b.live, chunk)
	}
	return nil
}

func (b *work) Cleanup() {
	liveMu.Lock()
	liveKept -= len(b.live)
	liveMu.Unlock()
	b.live = nil
}

// liveKept is the MiB the process's work tasks keep live (liveMB), under
// liveMu.
var (
	liveMu   sync.Mutex
	liveKept int
)

func (b *work) Execute(t *gale.Tuple) {
	if b.delay > 0 {
		time.Sleep(b.delay)
	}
	if b.liveMB > 0 {
		b.garbage = make([]byte, 64<<10) // the last one stays reachable; the rest is garbage
		b.garbage[0] = byte(b.seen)
	}
	b.seen++
	if b.noAck {
		return
	}
	if b.failEvery > 0 && b.seen%b.failEvery == 0 {
		b.Collector.Fail(t, fmt.Errorf("work: tuple %d failed on purpose (fail-every=%d)", t.GetInt64(0), b.failEvery))
		return
	}
	b.Collector.Ack(t)
}
