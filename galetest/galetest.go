// Package galetest runs Gale topologies to completion in tests, as Storm's
// completeTopology does: feed fixed inputs, run until every spout is
// exhausted and every tuple tree has completed, failed or timed out, and
// look at every tuple each component emitted, every message each spout
// task saw acked or failed, and every error the components reported.
//
// Time is simulated: the topology runs on a manual Clock that Complete
// advances whenever the topology is idle with trees still pending, so a
// 30-second message timeout takes milliseconds.
//
// StartWorkers runs a topology multi-process instead, in real time: worker
// processes that are re-runs of the test binary (which must call
// RunWorkerIfChild first in TestMain), exchanging tuples over TCP, which a
// test can kill and have restarted, watching their heartbeats.
package galetest

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bridge"
)

// Options configure Complete.
type Options struct {
	// Name of the topology; default "galetest".
	Name string
	// Config is the topology config layer.
	Config gale.Config
	// Sources replaces spouts by id with fixed inputs: each Values is
	// emitted once on the spout's default stream with its index (an int)
	// as the message id, by one of the spout's tasks (task i of n emits
	// values i, i+n, i+2n...), as Storm's FixedTupleSpout does. Failed
	// tuples are not replayed.
	Sources map[string][]gale.Values
	// Clock, if set, is the clock the topology runs on; Complete advances
	// it while the topology is idle with trees pending. Default: a new
	// Clock at 2026-01-01T00:00:00Z.
	Clock *Clock
	// Horizon, if positive, is the simulated time Complete runs for at
	// least: it returns once the clock has moved Horizon and no tree is
	// pending, rather than as soon as no tree is, so that a topology
	// driven by tick tuples (topology.tick.tuple.freq.secs) does its
	// work. Complete moves the clock in steps of at most
	// topology.message.timeout.secs / 10 and waits for the ticks of each
	// step to be handled: with a 60 s horizon, a bolt ticking every 10 s
	// sees 6 ticks.
	Horizon time.Duration
	// Timeout bounds the real time Complete may take; default 60s.
	Timeout time.Duration
	// Logger receives the runtime's logs; default: discarded.
	Logger *slog.Logger
	// RecycleTuples runs bolts that set topology.tuple.reuse as a worker
	// does, reusing the tuples they are done with. By default Complete
	// poisons those tuples instead, so a bolt that uses a tuple after
	// acking it panics and the test sees it.
	RecycleTuples bool
}

// defaultStart is the time a Clock made by Complete or NewBoltHarness
// starts at.
var defaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Ack is a spout message that was acked: its tree completed.
type Ack struct {
	MsgID any
	// Task is the spout task that emitted the message and saw the ack.
	Task int
}

// Failure is a spout message that failed.
type Failure struct {
	MsgID any
	// Task is the spout task that emitted the message and saw the fail.
	Task   int
	Reason error
}

// Result is what a completed run saw. Its methods are safe for concurrent
// use.
type Result struct {
	mu      sync.Mutex
	emitted map[string]map[string][]gale.Values
	acked   map[string][]Ack
	failed  map[string][]Failure
	errs    []gale.ComponentError
	// Elapsed is how far the simulated clock moved.
	Elapsed time.Duration
}

// Emitted returns every tuple component emitted on stream (default: the
// default stream), in the order each task emitted them.
func (r *Result) Emitted(component string, stream ...string) []gale.Values {
	s := gale.DefaultStream
	if len(stream) > 0 {
		s = stream[0]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.emitted[component][s])
}

// Acked returns the message ids the spout saw acked, in order (each
// task's in the order it saw them). Acks says which task saw each.
func (r *Result) Acked(spout string) []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]any, len(r.acked[spout]))
	for i, a := range r.acked[spout] {
		ids[i] = a.MsgID
	}
	return ids
}

// Acks returns the messages the spout saw acked, with the task that saw
// each, in the order of Acked.
func (r *Result) Acks(spout string) []Ack {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.acked[spout])
}

// Failed returns the messages the spout saw failed, with the task and the
// reason, in order (each task's in the order it saw them).
func (r *Result) Failed(spout string) []Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.failed[spout])
}

// Errors returns every error the components reported (ReportError) or
// caused (panics, rejected emits) during the run, in the order they were
// reported, with the simulated time of each. Complete does not fail on
// them: a test that expects none checks that Errors is empty.
func (r *Result) Errors() []gale.ComponentError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// FixedSpout emits fixed values on its default stream, one per NextTuple,
// with the index as message id. It does not replay. Each value is emitted
// once by the spout as a whole: with n tasks, the task of index i emits
// values i, i+n, i+2n..., so that every task may be given the same Values.
type FixedSpout struct {
	gale.BaseSpout
	Fields []string
	Values []gale.Values
	// next is the index of the next value this task emits; step is the
	// number of the spout's tasks.
	next, step int
}

// Open keeps the collector and picks this task's share of Values.
func (s *FixedSpout) Open(tc *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.Collector = c
	s.next, s.step = tc.TaskIndex(), max(len(tc.ThisComponentTasks()), 1)
	return nil
}

// DeclareOutputFields declares the default stream with Fields.
func (s *FixedSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare(s.Fields...) }

// NextTuple emits the next value.
func (s *FixedSpout) NextTuple() {
	if s.next >= len(s.Values) {
		return
	}
	i := s.next
	s.next += max(s.step, 1)
	s.Collector.Emit(i, s.Values[i]...)
}

// Complete runs topo until it has nothing left to do (and, with
// Options.Horizon, until the horizon has passed) and returns what it saw. The topology is stopped in order before Complete returns.
func Complete(ctx context.Context, topo *gale.Topology, opts Options) (*Result, error) {
	if opts.Name == "" {
		opts.Name = "galetest"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = NewClock(defaultStart)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	for id, vals := range opts.Sources {
		def, ok := topo.Def.Component(id)
		if !ok {
			return nil, fmt.Errorf("galetest: source for unknown spout %q", id)
		}
		st, ok := def.Stream(gale.DefaultStream)
		if !ok {
			return nil, fmt.Errorf("galetest: spout %q has no default stream to feed", id)
		}
		for i, v := range vals {
			if len(v) != len(st.Fields) {
				return nil, fmt.Errorf("galetest: source %q value %d has %d values, the stream declares %d fields %v", id, i, len(v), len(st.Fields), st.Fields)
			}
		}
		fields := st.Fields
		var err error
		replaced, err := bridge.ReplaceSpout(topo, id, func() gale.Spout { return &FixedSpout{Fields: fields, Values: vals} })
		if err != nil {
			return nil, err
		}
		topo = replaced.(*gale.Topology)
	}
	res := &Result{
		emitted: map[string]map[string][]gale.Values{},
		acked:   map[string][]Ack{},
		failed:  map[string][]Failure{},
	}
	obs := &bridge.Observer{
		Emit: func(component, stream string, _ int, values []any) {
			v := slices.Clone(values)
			res.mu.Lock()
			m := res.emitted[component]
			if m == nil {
				m = map[string][]gale.Values{}
				res.emitted[component] = m
			}
			m[stream] = append(m[stream], v)
			res.mu.Unlock()
		},
		Ack: func(spout string, task int, msgID any) {
			res.mu.Lock()
			res.acked[spout] = append(res.acked[spout], Ack{MsgID: msgID, Task: task})
			res.mu.Unlock()
		},
		Fail: func(spout string, task int, msgID any, reason error) {
			res.mu.Lock()
			res.failed[spout] = append(res.failed[spout], Failure{MsgID: msgID, Task: task, Reason: reason})
			res.mu.Unlock()
		},
		Error: func(component string, task int, at time.Time, err error) {
			res.mu.Lock()
			res.errs = append(res.errs, gale.ComponentError{Component: component, Task: task, Time: at, Err: err})
			res.mu.Unlock()
		},
	}
	conf := opts.Config
	if _, set := conf[gale.TopologyTestingAlwaysTrySerialize]; !set {
		// Values that could not cross between workers fail here, in the
		// test, rather than in a multi-worker deployment.
		conf = maps.Clone(conf)
		if conf == nil {
			conf = gale.Config{}
		}
		conf[gale.TopologyTestingAlwaysTrySerialize] = true
	}
	ro := gale.RunOptions{Logger: opts.Logger, Clock: opts.Clock}
	bridge.SetHooks(&ro, bridge.Hooks{Observer: obs, CheckTupleReuse: !opts.RecycleTuples})
	lt, err := gale.StartLocal(opts.Name, conf, topo, ro)
	if err != nil {
		return nil, err
	}
	hooks := bridge.LocalOf(lt)
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	start := opts.Clock.Now()
	runErr := func() error {
		for {
			select {
			case err := <-lt.Failed():
				return err
			default:
			}
			pending, err := hooks.WaitQuiet(ctx)
			// A kill-worker panic during the wait ends the run.
			select {
			case ferr := <-lt.Failed():
				return ferr
			default:
			}
			if err != nil {
				return fmt.Errorf("galetest: topology did not complete within %s (%d trees pending): %w", opts.Timeout, lt.Pending(), err)
			}
			step := hooks.TimeoutTick()
			if pending == 0 {
				left := opts.Horizon - opts.Clock.Now().Sub(start)
				if left <= 0 {
					return nil
				}
				step = min(step, left)
			}
			// Idle with trees pending, or before the horizon: let
			// simulated time pass so that trees time out and tick tuples
			// move things along.
			opts.Clock.Advance(step)
			// Wait until the topology has handled the ticks (timeouts,
			// tick tuples) before looking for quiet again.
			if err := opts.Clock.WaitHandled(ctx); err != nil {
				return fmt.Errorf("galetest: topology did not handle its ticks within %s: %w", opts.Timeout, err)
			}
		}
	}()
	lt.Stop()
	res.Elapsed = opts.Clock.Now().Sub(start)
	if runErr != nil {
		return res, runErr
	}
	return res, nil
}
