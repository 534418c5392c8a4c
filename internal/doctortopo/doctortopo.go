// Package doctortopo is a topology whose faults are set by its
// parameters, for `gale doctor`'s staged-fault tests and for trying the
// doctor and `gale monitor` by hand:
//
//	gale submit doctor-faults -p rate=50 -p delay=20ms -p max-spout-pending=50   # a bolt too slow
//	gale submit doctor-faults -p max-spout-pending=1 -p delay=5ms -p work-executors=8   # max spout pending far too low
//	gale submit doctor-faults -p delay=1500ms -p timeout=1 -p rate=1 -p work-executors=4   # timeouts shorter than the processing
//
// The topology is source → parse → work: the spout emits numbered
// tuples reliably (a failed one is emitted again, as from a durable
// source), parse passes each on, work sleeps delay per tuple (holding
// its executor as slow work does, without burning a core) and acks.
package doctortopo

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
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
	// reporting an error with it.
	FailEvery int
}

// DefaultParams are the parameters of a topology without faults.
func DefaultParams() Params { return Params{WorkExecutors: 1, WorkTasks: 4} }

// ParseParams reads `-p KEY=VALUE` parameters: delay (a Go duration),
// work-executors, work-tasks, max-spout-pending, timeout (seconds), rate
// (tuples per second) and fail-every.
func ParseParams(params map[string]string) (Params, error) {
	p := DefaultParams()
	ints := map[string]*int{"work-executors": &p.WorkExecutors, "work-tasks": &p.WorkTasks,
		"max-spout-pending": &p.MaxSpoutPending, "timeout": &p.TimeoutSecs, "fail-every": &p.FailEvery}
	known := append(slices.Collect(maps.Keys(ints)), "delay", "rate")
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
	b.SetBolt("parse", func() gale.Bolt { return &parse{} }, 1).ShuffleGrouping("source")
	b.SetBolt("work", func() gale.Bolt { return &work{delay: p.Delay, failEvery: p.FailEvery} }, p.WorkExecutors).
		SetNumTasks(p.WorkTasks).ShuffleGrouping("parse")
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

// parse passes each tuple on, anchored.
type parse struct{ gale.BaseBolt }

func (*parse) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("n") }

func (b *parse) Execute(t *gale.Tuple) {
	b.Collector.Emit(t, t.GetInt64(0))
	b.Collector.Ack(t)
}

// work takes delay per tuple, then acks it (or fails every failEvery-th).
type work struct {
	gale.BaseBolt
	delay     time.Duration
	failEvery int
	seen      int
}

func (*work) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *work) Execute(t *gale.Tuple) {
	if b.delay > 0 {
		time.Sleep(b.delay)
	}
	b.seen++
	if b.failEvery > 0 && b.seen%b.failEvery == 0 {
		err := fmt.Errorf("work: tuple %d failed on purpose (fail-every=%d)", t.GetInt64(0), b.failEvery)
		b.Collector.ReportError(err)
		b.Collector.Fail(t, err)
		return
	}
	b.Collector.Ack(t)
}
