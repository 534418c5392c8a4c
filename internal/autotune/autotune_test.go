package autotune

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/testseed"
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

// system is a simulated topology: a bolt that works like a remote service
// with concurrency c and latency l per tree, so throughput is
// min(pending, c)/l and the best pending is c. Trees beyond c queue; once
// the queue makes a tree's latency exceed the message timeout, trees
// time out, and the share that completes falls linearly to nothing at
// twice the timeout. source, if positive, caps the trees per second the
// spout has to emit.
type system struct {
	c          float64 // concurrency
	l, timeout float64 // seconds
	source     float64 // trees per second the source offers; 0 = no limit
	interval   float64 // seconds per Step
	noise      float64 // ± relative noise on each interval's progress
}

// rate is the trees completed per second at max pending v, without noise.
func (s system) rate(v float64) float64 {
	capacity := s.c / s.l
	offered := min(v, s.c) / s.l
	if s.source > 0 {
		offered = min(offered, s.source)
		v = min(v, s.source*s.l) // a source-limited spout never fills its pending
	}
	latency := s.l + max(0, v-s.c)/capacity
	if latency > s.timeout {
		offered *= max(0, 2-latency/s.timeout)
	}
	return offered
}

// best is the smallest power-of-two-ish value reaching the highest rate: a
// sweep as the bench does, of 1, 2, 4, … 2^20.
func (s system) best() (v int, rate float64) {
	for p := 1; p <= 1<<20; p *= 2 {
		if r := s.rate(float64(p)); r > rate*(1+1e-9) {
			v, rate = p, r
		}
	}
	return v, rate
}

func TestConvergesOnSimulatedSystem(t *testing.T) {
	seed := testseed.Seed(t)
	service := system{c: 64, l: 0.010, timeout: 2, interval: 1, noise: 0.03}
	slow := service
	slow.source = 2000 // below the 6400/s the service could do
	for _, c := range []struct {
		name  string
		sys   system
		start int
	}{
		{"from 1", service, 1},
		{"from 100000, where every tree times out", service, 100000},
		{"from 1000, queueing without timeouts", service, 1000},
		{"a slow source from 1", slow, 1},
		{"a slow source from 100000", slow, 100000},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(c.start)))
			tu, err := New(Config{Start: c.start})
			if err != nil {
				t.Fatal(err)
			}
			bestV, bestRate := c.sys.best()
			const steps, tail = 400, 200
			var trace []string
			var tailProgress float64
			reached := -1 // the first step that left the value within 2× of the best
			lo, hi := math.MaxInt, 0
			for i := range steps {
				v := tu.Value()
				p := c.sys.rate(float64(v)) * c.sys.interval * (1 + c.sys.noise*(2*rng.Float64()-1))
				d := tu.Step(int64(p))
				if d.Changed() && len(trace) < 80 {
					trace = append(trace, fmt.Sprintf("%d:%v→%d(%d)", i, d.Action, d.New, d.Progress))
				}
				if reached < 0 && d.New >= bestV/2 && d.New <= 2*bestV {
					reached = i
				}
				if i >= steps-tail {
					tailProgress += p
					lo, hi = min(lo, v), max(hi, v)
				}
			}
			mean := tailProgress / tail / c.sys.interval
			t.Logf("best fixed %d at %.0f/s; reached 2× of it at step %d; last %d steps: values %d–%d, mean %.0f/s (%.1f%%)",
				bestV, bestRate, reached, tail, lo, hi, mean, 100*mean/bestRate)
			if reached < 0 || reached > 60 {
				t.Errorf("took %d steps to come within 2× of the best fixed value %d, want ≤ 60; trace %s", reached, bestV, strings.Join(trace, " "))
			}
			if lo < bestV/4 || hi > 4*bestV {
				t.Errorf("over the last %d steps the value ranged %d–%d, want within 4× of the best fixed value %d; trace %s", tail, lo, hi, bestV, strings.Join(trace, " "))
			}
			if mean < 0.9*bestRate {
				t.Errorf("mean throughput over the last %d steps %.0f/s, want ≥ 90%% of the best fixed value's %.0f/s", tail, mean, bestRate)
			}
		})
	}
}
