package starter_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/examples/starter"
	"github.com/gale-stream/gale/galetest"
)

// The tests of storm-starter's RollingCountBoltTest, on mock tuples and
// ticks.

const (
	anyNonSystemComponentID = "irrelevant_component_id"
	anyNonSystemStreamID    = "irrelevant_stream_id"
)

func mockNormalTuple(obj any) *gale.Tuple {
	return galetest.Tuple(anyNonSystemComponentID, anyNonSystemStreamID, obj)
}

func harness(t *testing.T, b gale.Bolt) *galetest.BoltHarness {
	t.Helper()
	h, err := galetest.NewBoltHarness(b, galetest.HarnessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Cleanup)
	return h
}

func TestRollingCountBoltShouldEmitNothingIfNoObjectHasBeenCountedYetAndTickTupleIsReceived(t *testing.T) {
	h := harness(t, &starter.RollingCountBolt{})
	h.Execute(galetest.Tick())
	if n := h.Interactions(); n != 0 {
		t.Errorf("%d interactions with the collector (emits %v, acks %v), want none", n, h.Emits(), h.Acked())
	}
}

func TestRollingCountBoltShouldEmitSomethingIfAtLeastOneObjectWasCountedAndTickTupleIsReceived(t *testing.T) {
	h := harness(t, &starter.RollingCountBolt{})
	// Storm's test counts a new Object(); any value that can travel
	// between workers will do (the harness checks, as Complete does).
	normal := mockNormalTuple("any object")
	h.Execute(normal)
	h.Execute(galetest.Tick())
	if got := h.Emitted(); len(got) != 1 {
		t.Errorf("emitted %v, want one tuple", got)
	}
	if a := h.Acked(); len(a) != 1 || a[0] != normal {
		t.Errorf("acked %v, want the normal tuple", a)
	}
}

func TestRollingCountBoltShouldDeclareOutputFields(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", func() gale.Spout { return &galetest.FixedSpout{Fields: []string{"w"}} }, 1)
	b.SetBolt("count", func() gale.Bolt { return &starter.RollingCountBolt{} }, 1).ShuffleGrouping("s")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	def, _ := topo.Def.Component("count")
	if len(def.Streams) != 1 || !slices.Equal(def.Streams[0].Fields, []string{"obj", "count", "actualWindowLengthInSeconds"}) {
		t.Errorf("declared %+v, want one stream of obj, count, actualWindowLengthInSeconds", def.Streams)
	}
}

func TestRollingCountBoltShouldSetTickTupleFrequencyInComponentConfigurationToNonZeroValue(t *testing.T) {
	conf := (&starter.RollingCountBolt{}).ComponentConfiguration()
	v, ok := conf[gale.TopologyTickTupleFreqSecs]
	if !ok {
		t.Fatalf("component configuration %v has no %s", conf, gale.TopologyTickTupleFreqSecs)
	}
	if secs, ok := v.(int); !ok || secs <= 0 {
		t.Errorf("%s is %v, want an int > 0", gale.TopologyTickTupleFreqSecs, v)
	}
}

// TestRollingCountBoltSlidesItsWindow: beyond Storm's tests, the counts
// cover the last WindowLengthSecs, and the actual window length grows
// with the simulated clock until the window is full.
func TestRollingCountBoltSlidesItsWindow(t *testing.T) {
	clock := galetest.NewClock(time.Unix(0, 0))
	h, err := galetest.NewBoltHarness(starter.NewRollingCountBolt(30, 10), galetest.HarnessOptions{
		Clock: clock, Config: gale.Config{gale.TopologyTickTupleFreqSecs: 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Cleanup()
	type out struct {
		obj          any
		count        int64
		actualWindow int
	}
	tick := func() []out {
		clock.Advance(10 * time.Second)
		h.Reset()
		h.Tick()
		var got []out
		for _, v := range h.Emitted() {
			got = append(got, out{v[0], v[1].(int64), v[2].(int)})
		}
		slices.SortFunc(got, func(a, b out) int { return strings.Compare(a.obj.(string), b.obj.(string)) })
		return got
	}
	h.Execute(mockNormalTuple("a"))
	h.Execute(mockNormalTuple("a"))
	h.Execute(mockNormalTuple("b"))
	if got, want := tick(), []out{{"a", 2, 10}, {"b", 1, 10}}; !slices.Equal(got, want) {
		t.Errorf("first tick: %v, want %v", got, want)
	}
	h.Execute(mockNormalTuple("b"))
	if got, want := tick(), []out{{"a", 2, 20}, {"b", 2, 20}}; !slices.Equal(got, want) {
		t.Errorf("second tick: %v, want %v", got, want)
	}
	if got, want := tick(), []out{{"a", 2, 30}, {"b", 2, 30}}; !slices.Equal(got, want) {
		t.Errorf("third tick: %v, want %v", got, want)
	}
	// The first interval's counts leave the 30 s window; as Storm's, an
	// object counted nowhere in the window is emitted once at 0, then
	// forgotten.
	if got, want := tick(), []out{{"a", 0, 30}, {"b", 1, 30}}; !slices.Equal(got, want) {
		t.Errorf("fourth tick: %v, want %v", got, want)
	}
	if got, want := tick(), []out{{"b", 0, 30}}; !slices.Equal(got, want) {
		t.Errorf("fifth tick: %v, want %v", got, want)
	}
	if got := tick(); len(got) != 0 {
		t.Errorf("sixth tick: %v, want nothing", got)
	}
}
