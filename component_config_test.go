package gale_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale"

	"github.com/gale-stream/gale/internal/testutil"
)

// rollingCountBolt declares its own tick frequency, as storm-starter's
// RollingCountBolt does in getComponentConfiguration.
type rollingCountBolt struct {
	funcBolt
	conf gale.Config
}

func (b *rollingCountBolt) ComponentConfiguration() gale.Config { return b.conf }

// TestComponentConfigurationTicks: a bolt that declares
// topology.tick.tuple.freq.secs in its ComponentConfiguration gets ticks
// at that frequency without the builder restating it, and a setting at
// the builder overrides the declared one.
func TestComponentConfigurationTicks(t *testing.T) {
	var ticks counter[string]
	var freqs list[string]
	bolt := func(conf gale.Config) func() gale.Bolt {
		return func() gale.Bolt {
			return &rollingCountBolt{conf: conf, funcBolt: funcBolt{
				prepare: func(b *funcBolt) error {
					f, _ := b.tc.Config().Int(gale.TopologyTickTupleFreqSecs)
					freqs.add(b.tc.ComponentID() + "=" + strconv.Itoa(f))
					return nil
				},
				execute: func(b *funcBolt, in *gale.Tuple) {
					if in.IsTick() {
						ticks.inc(b.tc.ComponentID())
						return
					}
					b.Collector.Ack(in)
				},
			}}
		}
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		return &funcSpout{declare: func(d gale.OutputDeclarer) { d.Declare("x") }}
	}, 1)
	b.SetBolt("rolling", bolt(gale.Config{gale.TopologyTickTupleFreqSecs: 2}), 1).ShuffleGrouping("src")
	b.SetBolt("overridden", bolt(gale.Config{gale.TopologyTickTupleFreqSecs: 2, gale.TopologyDebug: false}), 1).
		ShuffleGrouping("src").AddConfiguration(gale.TopologyTickTupleFreqSecs, 5)
	_, _, clk := startLocal(t, build(t, b), nil, nil)
	got := strings.Join(slices.Sorted(slices.Values(freqs.all())), " ")
	if want := "overridden=5 rolling=2"; got != want {
		t.Fatalf("tick frequencies in Prepare: %s, want %s", got, want)
	}
	for i := 1; i <= 10; i++ {
		clk.Advance(time.Second)
		if i%2 == 0 {
			testutil.Eventually(t, 10*time.Second, "a tick of rolling", func() bool { return ticks.get("rolling") == i/2 })
		}
		if i%5 == 0 {
			testutil.Eventually(t, 10*time.Second, "a tick of overridden", func() bool { return ticks.get("overridden") == i/5 })
		}
	}
}

// TestComponentConfigurationRefusesTopologyKeys: a component may declare
// only the keys that may be set per component; Build names the component
// and the key.
func TestComponentConfigurationRefusesTopologyKeys(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		return &funcSpout{declare: func(d gale.OutputDeclarer) { d.Declare("x") }}
	}, 1)
	b.SetBolt("greedy", func() gale.Bolt {
		return &rollingCountBolt{conf: gale.Config{gale.TopologyWorkers: 3}}
	}, 1).ShuffleGrouping("src")
	_, err := b.Build()
	if err == nil {
		t.Fatal("Build accepted a bolt declaring topology.workers, want an error")
	}
	if !errors.Is(err, gale.ErrInvalidTopology) || !errors.Is(err, gale.ErrForbiddenOverride) {
		t.Errorf("error %v: want ErrInvalidTopology and ErrForbiddenOverride", err)
	}
	for _, want := range []string{`bolt "greedy"`, "ComponentConfiguration", `"topology.workers"`, "topology.tick.tuple.freq.secs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	if n := strings.Count(err.Error(), "topology.workers"); n != 1 {
		t.Errorf("error %q names topology.workers %d times, want once", err, n)
	}
}
