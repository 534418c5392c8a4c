package autotune

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/testutil"
)

// step is one call of Step and what it must decide.
type step struct {
	progress int64
	action   Action
	value    int
}

func TestStep(t *testing.T) {
	for _, c := range []struct {
		name  string
		conf  Config
		steps []step
	}{
		{"the first step increases by 25%", Config{Start: 100}, []step{
			{1000, Increase, 125},
		}},
		{"an increase that brought a gain increases again", Config{Start: 100}, []step{
			{1000, Increase, 125}, {1250, Increase, 156}, {1500, Increase, 195},
		}},
		{"an increase adds at least 1", Config{Start: 1}, []step{
			{10, Increase, 2}, {20, Increase, 3}, {30, Increase, 4}, {40, Increase, 5}, {50, Increase, 6},
		}},
		{"an increase that brought no gain goes back", Config{Start: 100}, []step{
			{1000, Increase, 125}, {1040, Back, 100},
		}},
		{"a fall in progress after no change decreases by 25%", Config{Start: 100}, []step{
			{1000, Increase, 125}, {1000, Back, 100}, {1000, NoChange, 100}, {900, Decrease, 75},
		}},
		{"a decrease follows a larger fall in progress", Config{Start: 100}, []step{
			{1000, Increase, 125}, {1000, Back, 100}, {100, Decrease, 10},
		}},
		{"progress falling to nothing cuts the value to Min", Config{Start: 1000}, []step{
			{1000, Increase, 1250}, {0, Decrease, 1},
		}},
		{"an increase that cost progress decreases", Config{Start: 100}, []step{
			{1000, Increase, 125}, {800, Decrease, 93},
		}},
		{"a decrease that cost nothing decreases again; one that cost progress goes back", Config{Start: 100}, []step{
			{1000, Increase, 125}, {1000, Back, 100}, {800, Decrease, 75},
			{800, Decrease, 56}, {820, Decrease, 42}, {500, Back, 56},
			// Compared with the progress at 56, not the 500 at 42.
			{820, NoChange, 56},
		}},
		{"a decrease answering a fall, then a steeper fall without time-outs, goes back", Config{Start: 1000}, []step{
			{1000, Increase, 1250}, {500, Decrease, 625}, {0, Back, 1250},
		}},
		{"a decrease answering a fall, then a fall no steeper than the cut, goes back", Config{Start: 100}, []step{
			{1000, Increase, 125}, {1000, Back, 100}, {900, Decrease, 75}, {700, Back, 100},
		}},
		{"a decrease that brought a gain decreases again", Config{Start: 100}, []step{
			{1000, Increase, 125}, {1000, Back, 100}, {800, Decrease, 75}, {1000, Decrease, 56},
		}},
		{"a gain after no change increases", Config{Start: 100}, []step{
			{1000, Increase, 125}, {1000, Back, 100}, {1000, NoChange, 100}, {1200, Increase, 125},
		}},
		{"after an increase went back, five no-changes probe with a decrease", Config{Start: 100}, []step{
			{1000, Increase, 125}, {1000, Back, 100}, // the first no-change
			{1000, NoChange, 100}, {1000, NoChange, 100}, {1000, NoChange, 100}, {1000, NoChange, 100},
			{1000, Decrease, 75},
		}},
		{"after a decreasing probe went back, five no-changes probe with an increase", Config{Start: 100}, []step{
			{1000, Increase, 125}, {1000, Back, 100},
			{1000, NoChange, 100}, {1000, NoChange, 100}, {1000, NoChange, 100}, {1000, NoChange, 100},
			{1000, Decrease, 75}, {750, Back, 100},
			{1000, NoChange, 100}, {1000, NoChange, 100}, {1000, NoChange, 100}, {1000, NoChange, 100},
			{1000, Increase, 125}, {1010, Back, 100},
		}},
		{"flat progress far above the best slides down by probing", Config{Start: 100000}, []step{
			{0, Increase, 125000}, {0, Back, 100000},
			{0, NoChange, 100000}, {0, NoChange, 100000}, {0, NoChange, 100000}, {0, NoChange, 100000},
			{0, Decrease, 75000}, {0, Decrease, 56250}, {0, Decrease, 42187}, {300, Decrease, 31640},
		}},
		{"an increase at Max is a no-change, and the probe there decreases", Config{Start: 100, Max: 100}, []step{
			{1000, NoChange, 100}, {1000, NoChange, 100}, {1000, NoChange, 100}, {1000, NoChange, 100},
			{1000, NoChange, 100}, {1000, Decrease, 75},
		}},
		{"a decrease at Min is a no-change, and the probe there increases", Config{Start: 1}, []step{
			{0, Increase, 2}, {0, Back, 1}, // upFailed: the next probe would decrease
			{0, NoChange, 1}, {0, NoChange, 1}, {0, NoChange, 1}, {0, NoChange, 1},
			{0, Increase, 2},
		}},
		{"Start is clamped into the bounds", Config{Start: 5000, Min: 10, Max: 1000}, []step{
			{10, NoChange, 1000},
		}},
		{"a negative progress counts as none", Config{Start: 100}, []step{
			{1000, Increase, 125}, {-5, Decrease, 1},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tu, err := New(c.conf)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range c.steps {
				old := tu.Value()
				d := tu.Step(s.progress)
				if d.Action != s.action || d.New != s.value || tu.Value() != s.value || d.Old != old {
					t.Fatalf("step %d (progress %d): got %v %d→%d (Value %d), want %v →%d",
						i, s.progress, d.Action, d.Old, d.New, tu.Value(), s.action, s.value)
				}
			}
		})
	}
}

// TestStillSinking: after a decrease that answered a fall, a steeper fall
// with trees timing out is a flood, which the tuner answers with another
// decrease; the same fall with a few time-outs (no more than Tolerance of
// the trees that ended) is not.
func TestStillSinking(t *testing.T) {
	for _, c := range []struct {
		timedOut int64
		action   Action
		value    int
	}{
		{timedOut: 900, action: Decrease, value: 125},
		{timedOut: 5, action: Back, value: 1250},
	} {
		tu, err := New(Config{Start: 1000})
		if err != nil {
			t.Fatal(err)
		}
		tu.Step(1000)                              // increase to 1250
		tu.Observe(Interval{500, 500})             // a fall: decrease to 625
		d := tu.Observe(Interval{100, c.timedOut}) // 80% less, the cut was 50%
		if d.Action != c.action || d.New != c.value {
			t.Errorf("%d timed out: got %v →%d, want %v →%d", c.timedOut, d.Action, d.New, c.action, c.value)
		}
	}
}

func TestAboutTheSame(t *testing.T) {
	for _, c := range []struct {
		name           string
		tol            float64
		base, progress int64
		want           Action // after an increase: Increase if higher, Back if the same, Decrease if lower
	}{
		{"5% up is the same", 0, 1000, 1050, Back},
		{"just over 5% up is a gain", 0, 1000, 1051, Increase},
		{"5% down is the same", 0, 1000, 950, Back},
		{"just over 5% down is a loss", 0, 1000, 949, Decrease},
		{"nothing after nothing is the same", 0, 0, 0, Back},
		{"anything after nothing is a gain", 0, 0, 1, Increase},
		{"a tolerance of 20%", 0.2, 1000, 1200, Back},
	} {
		t.Run(c.name, func(t *testing.T) {
			tu, err := New(Config{Start: 100, Tolerance: c.tol})
			if err != nil {
				t.Fatal(err)
			}
			tu.Step(c.base)
			if d := tu.Step(c.progress); d.Action != c.want || d.Baseline != c.base || !d.HasBaseline {
				t.Fatalf("%d after %d: got %v (baseline %d), want %v", c.progress, c.base, d.Action, d.Baseline, c.want)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []struct {
		conf Config
		want string
	}{
		{Config{Min: -1}, "Min must be ≥ 1"},
		{Config{Min: 10, Max: 5}, "Max must be ≥ Min (10), got 5"},
		{Config{Tolerance: 1}, "Tolerance must be in [0, 1)"},
		{Config{Tolerance: math.NaN()}, "Tolerance must be in [0, 1)"},
		{Config{Start: -3}, "Start must be ≥ 0"},
	} {
		_, err := New(c.conf)
		if !errors.Is(err, ErrConfig) || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): got %v, want an ErrConfig naming %q", c.conf, err, c.want)
		}
	}
}

// service is a simulated topology, stepped in time: a spout that keeps
// max pending trees in flight (as far as its source lets it), one tuple
// each, and a bolt that works like a remote service with concurrency c
// and latency l per tuple, fed from a FIFO queue without bound. It serves
// min(queued, c)/l tuples a second, so the best max pending is about c.
// A tree whose tuple has waited more than the message timeout times out
// at the spout, which frees its slot for a new tree, but its tuple stays
// queued and the service still spends its time on it: the flood of the
// seed, where too much in flight makes the topology do nothing useful
// until the queue has drained.
type service struct {
	c, l, timeout float64 // calls, seconds, seconds
	source        float64 // trees per second the source offers; 0 = no limit
	dt            float64 // seconds per simulation step
	// transit is the time a tree spends in flight besides its queueing
	// and its call: on the wire to the bolt and its ack's way to the
	// spout. Its trees hold a slot without working, so below the best
	// value progress falls faster than the value (progress ∝ v, but
	// the best value is c·(l+transit)/l).
	transit float64

	now     float64
	cohorts []cohort // queued tuples by the time they were emitted, oldest first
	dead    int      // cohorts[:dead] have timed out
	queued  float64  // tuples in cohorts
	live    float64  // trees in flight that have not timed out
}

type cohort struct{ at, n float64 }

// run runs for d seconds at max pending v and returns the trees acked
// and those that timed out.
func (s *service) run(v int, d float64) (acked, timedOut float64) {
	for end := s.now + d - s.dt/2; s.now < end; {
		s.now += s.dt
		for s.dead < len(s.cohorts) && s.now-s.cohorts[s.dead].at > s.timeout {
			s.live -= s.cohorts[s.dead].n
			timedOut += s.cohorts[s.dead].n
			s.dead++
		}
		if room := float64(v) - s.live; room > 0 {
			if s.source > 0 {
				room = min(room, s.source*s.dt)
			}
			s.cohorts = append(s.cohorts, cohort{s.now, room})
			s.queued += room
			s.live += room
		}
		arrived := s.queued
		if s.transit > 0 {
			arrived = 0
			for _, h := range s.cohorts {
				if s.now-h.at < s.transit || arrived >= s.c {
					break
				}
				arrived += h.n
			}
		}
		work := min(arrived, s.c) * s.dt / s.l
		for work > 1e-9 && len(s.cohorts) > 0 && s.now-s.cohorts[0].at >= s.transit {
			h := &s.cohorts[0]
			take := min(work, h.n)
			h.n, work, s.queued = h.n-take, work-take, s.queued-take
			if s.dead == 0 {
				acked += take
				s.live -= take
			}
			if h.n <= 1e-9 {
				s.cohorts = s.cohorts[1:]
				s.dead = max(s.dead-1, 0)
			}
		}
	}
	return acked, timedOut
}

// bestFixed sweeps max pending 1, 2, 4, … 2^17 as the bench does, each
// on a fresh service for a minute, and returns the least value with the
// highest rate over its last 20 s.
func bestFixed(proto service) (v int, rate float64) {
	for p := 1; p <= 1<<17; p *= 2 {
		s := proto
		s.run(p, 40)
		if a, _ := s.run(p, 20); a/20 > rate*1.001 {
			r := a / 20
			v, rate = p, r
		}
	}
	return v, rate
}

func TestConvergesOnSimulatedSystem(t *testing.T) {
	seed := testutil.Seed(t)
	fast := service{c: 64, l: 0.010, timeout: 2, dt: 0.005}
	slow := fast
	slow.source = 2000 // below the 6400/s the service could do
	// The Kafka bench of issue 22: 8 executors of a 2 ms bolt, whose
	// trees spend about a millisecond more in flight, so the best value
	// is small (about 12) and below it progress falls faster than the
	// value; measured over 2 s on a busy machine, ±10%.
	knee := service{c: 8, l: 0.002, transit: 0.001, timeout: 30, dt: 0.0005}
	for _, c := range []struct {
		name  string
		sys   service
		start int
		noise float64
		// minMean is the least mean throughput over the last steps, as a
		// fraction of the best fixed value's. At the noisy knee every
		// reading is off by up to 10% and a probe one step either side
		// costs more than that: over 300 seeds the mean there was 88.0–95.8%
		// (median 92.4%), and 90% failed about 1 seed in 20. Elsewhere it
		// was at least 96%.
		minMean float64
	}{
		{"from 1", fast, 1, 0.03, 0.9},
		{"from 100000, a flood of timeouts", fast, 100000, 0.03, 0.9},
		{"from 1000, queueing without timeouts", fast, 1000, 0.03, 0.9},
		{"a slow source from 1", slow, 1, 0.03, 0.9},
		{"a slow source from 100000", slow, 100000, 0.03, 0.9},
		{"a sharp knee at a small value, noisy, from 1000", knee, 1000, 0.1, 0.85},
	} {
		t.Run(c.name, func(t *testing.T) {
			const interval = 1.0
			noise := c.noise
			rng := rand.New(rand.NewPCG(seed, uint64(c.start)))
			tu, err := New(Config{Start: c.start})
			if err != nil {
				t.Fatal(err)
			}
			bestV, bestRate := bestFixed(c.sys)
			if flood := c.sys; flood.source == 0 && flood.transit == 0 {
				// The simulation must show what the tuner is to avoid.
				flood.run(100000, 40)
				if a, _ := flood.run(100000, 20); a/20 > 0.1*bestRate {
					r := a / 20
					t.Fatalf("fixed at 100000 the service acks %.0f/s, want a flood (< 10%% of the best %.0f/s)", r, bestRate)
				}
			}
			sys := c.sys
			const steps, tail = 300, 150
			var trace []string
			var tailAcked float64
			reached := -1 // the first step that left the value within 2× of the best
			lo, hi := math.MaxInt, 0
			for i := range steps {
				v := tu.Value()
				acked, timedOut := sys.run(v, interval)
				p := acked * (1 + noise*(2*rng.Float64()-1))
				d := tu.Observe(Interval{Progress: int64(p), TimedOut: int64(timedOut)})
				if d.Changed() && len(trace) < 80 {
					trace = append(trace, fmt.Sprintf("%d:%v→%d(%d)", i, d.Action, d.New, d.Progress))
				}
				if reached < 0 && d.New >= bestV/2 && d.New <= 2*bestV {
					reached = i
				}
				if i >= steps-tail {
					tailAcked += acked
					lo, hi = min(lo, v), max(hi, v)
				}
			}
			mean := tailAcked / tail / interval
			t.Logf("best fixed %d at %.0f/s; within 2× of it from step %d; last %d steps: values %d–%d, mean %.0f/s (%.1f%%)",
				bestV, bestRate, reached, tail, lo, hi, mean, 100*mean/bestRate)
			if reached < 0 || reached > 100 {
				t.Errorf("took %d steps to come within 2× of the best fixed value %d, want ≤ 100; trace %s", reached, bestV, strings.Join(trace, " "))
			}
			if lo < bestV/4 || hi > 4*bestV {
				t.Errorf("over the last %d steps the value ranged %d–%d, want within 4× of the best fixed value %d; trace %s", tail, lo, hi, bestV, strings.Join(trace, " "))
			}
			if mean < c.minMean*bestRate {
				t.Errorf("mean throughput over the last %d steps %.0f/s, want ≥ %.0f%% of the best fixed value's %.0f/s; trace %s", tail, mean, 100*c.minMean, bestRate, strings.Join(trace, " "))
			}
		})
	}
}
