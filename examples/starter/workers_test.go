package starter_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

// Each port is registered for the worker processes with FixedSpouts
// emitting its sources and a "sink" (one task) that takes the output of
// its last component; the worker running the sink reports the port's
// result over what the sink got so far.
func init() {
	for _, p := range ports {
		galetest.RegisterTopology(p.name, func(json.RawMessage) (*gale.Topology, gale.Config, func() any, error) {
			s := &sink{}
			b := p.build(p.spoutsFor(true))
			b.SetBolt("sink", func() gale.Bolt { return s }, 1).GlobalGrouping(p.last)
			topo, err := b.Build()
			return topo, nil, func() any { return s.result(p) }, err
		})
	}
}

// sink keeps the values of its inputs and acks them.
type sink struct {
	gale.BaseBolt
	mu  sync.Mutex
	got []gale.Values
}

func (*sink) DeclareOutputFields(gale.OutputDeclarer) {}

func (s *sink) Execute(t *gale.Tuple) {
	s.mu.Lock()
	s.got = append(s.got, t.Values())
	s.mu.Unlock()
	s.Collector.Ack(t)
}

// result is p's result over what the sink got; "" before it got anything.
func (s *sink) result(p port) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		return ""
	}
	return p.result(s.got)
}

// TestPortsAcrossWorkers: each port gives the same result in 3 worker
// processes, in real time, as under Complete: the components spread over
// the workers, tuples (the rankings included) cross between them, and the
// user key starter.top.n reaches the rankers there.
func TestPortsAcrossWorkers(t *testing.T) {
	for _, p := range ports {
		t.Run(p.name, func(t *testing.T) {
			conf := gale.Config{}
			for k, v := range p.conf {
				conf[k] = v
			}
			if p.name == singleJoinPort.name {
				// The ages without a gender time out, and the join expires
				// them, in seconds rather than 30, so Stop's drain is
				// short.
				conf[gale.TopologyMessageTimeoutSecs] = 2
			}
			w := galetest.StartWorkers(t, p.name, 3, galetest.WorkersOptions{Config: conf})
			got := ""
			w.WaitFor(p.last+"'s output as Storm's", 30*time.Second, func() bool {
				for i := range 3 {
					var r string
					if w.Stats(i, &r) == nil && r != "" {
						got = r
					}
				}
				return got == p.want
			})
			if err := w.Stop(); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			var crossed int64
			for i := range 3 {
				crossed += w.Status(i).WireTuplesSent
			}
			if crossed == 0 {
				t.Errorf("no tuple crossed between the workers")
			}
		})
	}
}
