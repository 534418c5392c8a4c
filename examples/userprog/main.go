// Command userprog is a complete Gale program: it defines a topology with
// its own spout and bolts and hands it to Gale's command line, so that
// the binary is a Gale CLI that knows its components:
//
//	go run ./examples/userprog run sensors                # in this process, until Ctrl-C
//	go run ./examples/userprog run sensors --workers 2    # in two worker processes of this binary
//	go run ./examples/userprog run sensors -p rate=20000 --duration 10s --json
//
// The topology: a spout reads temperatures from simulated sensors (a
// goroutine it starts in Open, as a connector reading a broker would),
// a bolt keeps each sensor's moving average (fields grouping: one task
// per sensor), and a bolt counts the averages above a threshold.
package main

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galecli"
)

func main() {
	os.Exit(galecli.Main(galecli.Topology{
		Name:  "sensors",
		Short: "sensor readings → moving average per sensor → alerts",
		Build: build,
	}))
}

// build makes the topology from its parameters: rate (readings per second
// over all sensors, default 2000), sensors (default 16) and averagers (the
// average bolt's parallelism, default 2).
func build(params map[string]string) (*gale.Topology, gale.Config, error) {
	p := map[string]int{"rate": 2000, "sensors": 16, "averagers": 2}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		if _, ok := p[k]; !ok {
			return nil, nil, fmt.Errorf("unknown parameter %q (sensors takes %s)", k, strings.Join(slices.Sorted(maps.Keys(p)), ", "))
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, nil, fmt.Errorf("parameter %s: want a whole number ≥ 1, got %q", k, v)
		}
		p[k] = n
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout("readings", func() gale.Spout { return &Readings{Rate: p["rate"], Sensors: p["sensors"]} }, 1)
	b.SetBolt("average", func() gale.Bolt { return &Average{} }, p["averagers"]).FieldsGrouping("readings", "sensor")
	b.SetBasicBolt("alerts", func() gale.BasicBolt { return &Alerts{Above: 25} }, 1).ShuffleGrouping("average")
	topo, err := b.Build()
	// The topology's config layer: at most 5000 readings in flight.
	return topo, gale.Config{gale.TopologyMaxSpoutPending: 5000}, err
}

// reading is one sensor's measurement.
type reading struct {
	sensor string
	temp   float64
}

// Readings emits the readings of simulated sensors. Open starts the
// goroutine that produces them, paced at Rate a second, into a bounded
// queue, and passes it the task's Context: it stops when the topology
// shuts down, and Close waits for it. Every reading is emitted with a
// message id and replayed when its tree fails.
type Readings struct {
	gale.BaseSpout
	Rate, Sensors int

	queue   chan reading
	wg      sync.WaitGroup
	nextID  uint64
	pending map[uint64]reading // emitted, not yet acked
	replay  []reading
}

// DeclareOutputFields declares ("sensor", "temp").
func (*Readings) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("sensor", "temp") }

// Open starts the producer.
func (r *Readings) Open(tc *gale.TopologyContext, c *gale.SpoutCollector) error {
	r.Collector = c
	r.queue = make(chan reading, 1024)
	r.pending = make(map[uint64]reading)
	ctx := tc.Context()
	rng := rand.New(rand.NewPCG(uint64(tc.TaskID()), uint64(time.Now().UnixNano())))
	r.wg.Go(func() {
		const tick = 10 * time.Millisecond
		tk := time.NewTicker(tick)
		defer tk.Stop()
		start, sent := time.Now(), 0
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tk.C:
				due := int(now.Sub(start).Seconds()*float64(r.Rate)) - sent
				for range due {
					m := reading{sensor: fmt.Sprintf("sensor-%02d", rng.IntN(r.Sensors)), temp: 15 + 15*rng.Float64()}
					select {
					case r.queue <- m:
						sent++
					case <-ctx.Done():
						return
					}
				}
			}
		}
	})
	return nil
}

// NextTuple emits a replay if there is one, else what the producer has
// queued, at most 100 readings a call.
func (r *Readings) NextTuple() {
	for range 100 {
		var m reading
		if n := len(r.replay); n > 0 {
			m, r.replay = r.replay[n-1], r.replay[:n-1]
		} else {
			select {
			case m = <-r.queue:
			default:
				return
			}
		}
		r.nextID++
		r.pending[r.nextID] = m
		r.Collector.Emit(r.nextID, m.sensor, m.temp)
	}
}

// Ack forgets a reading whose tree completed.
func (r *Readings) Ack(id any) { delete(r.pending, id.(uint64)) }

// Fail queues a reading for replay.
func (r *Readings) Fail(id any, _ error) {
	if m, ok := r.pending[id.(uint64)]; ok {
		delete(r.pending, id.(uint64))
		r.replay = append(r.replay, m)
	}
}

// Close waits for the producer, which the cancelled Context has stopped.
func (r *Readings) Close() { r.wg.Wait() }

// Average keeps an exponential moving average per sensor and emits
// ("sensor", "avg") for each reading, anchored on it.
type Average struct {
	gale.BaseBolt
	avg map[string]float64
}

// DeclareOutputFields declares ("sensor", "avg").
func (*Average) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("sensor", "avg") }

// Prepare makes the map.
func (a *Average) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	a.avg = make(map[string]float64)
	return a.BaseBolt.Prepare(tc, c)
}

// Execute folds one reading into its sensor's average.
func (a *Average) Execute(t *gale.Tuple) {
	sensor, temp := t.GetString(0), t.GetFloat64(1)
	avg, ok := a.avg[sensor]
	if !ok {
		avg = temp
	}
	avg = 0.9*avg + 0.1*temp
	a.avg[sensor] = avg
	a.Collector.Emit(t, sensor, avg)
	a.Collector.Ack(t)
}

// Alerts counts the averages above a threshold, and logs every 1000th.
type Alerts struct {
	gale.BaseBasicBolt
	Above float64
	n     int
	tc    *gale.TopologyContext
}

// DeclareOutputFields declares nothing: Alerts is a sink.
func (*Alerts) DeclareOutputFields(gale.OutputDeclarer) {}

// Prepare keeps the context for its logger.
func (a *Alerts) Prepare(tc *gale.TopologyContext) error {
	a.tc = tc
	return nil
}

// Execute checks one average.
func (a *Alerts) Execute(t *gale.Tuple, _ *gale.BasicCollector) error {
	if avg := t.GetFloat64(1); avg > a.Above {
		if a.n++; a.n%1000 == 0 {
			a.tc.Logger().Debug("hot sensor", "sensor", t.GetString(0), "avg", avg, "alerts", a.n)
		}
	}
	return nil
}
