package jetstream_test

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/jetstream"
)

// slowBolt acks each input after sleeping, as a remote call would.
type slowBolt struct {
	gale.BaseBolt
	d time.Duration
}

func (*slowBolt) DeclareOutputFields(gale.OutputDeclarer) {}

func (b *slowBolt) Execute(t *gale.Tuple) {
	time.Sleep(b.d)
	b.Collector.Ack(t)
}

// TestMeasureAutotune is the max-spout-pending auto-tuner's measurement
// on the JetStream spout (docs/performance.md): a stream of
// GALE_MEASURE_JETSTREAM_AUTOTUNE messages (e.g. 200000) read by one
// spout task into 8 executors of a 2 ms bolt, with max spout pending
// fixed at 256 and then auto-tuned every 2 s, alternating, three pairs,
// each in a consumer of its own. It logs each run's messages a second
// from 10% of the messages acked to the last; it asserts nothing, and is
// skipped unless the variable is set (minutes of work).
func TestMeasureAutotune(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GALE_MEASURE_JETSTREAM_AUTOTUNE"))
	if n <= 0 {
		t.Skip("a measurement of minutes: set GALE_MEASURE_JETSTREAM_AUTOTUNE to the messages to read")
	}
	ts := startServer(t)
	_, js := ts.client(t)
	createStream(t, js, "EVENTS", "events.>")
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = "ok-" + strconv.Itoa(i)
	}
	for i := 0; i < n; i += 10000 {
		publishBulk(t, js, "events.new", bodies[i:min(i+10000, n)])
	}
	for pair := range 3 {
		for _, tuned := range []bool{false, true} {
			name := fmt.Sprintf("fixed256-%d", pair)
			conf := gale.Config{gale.TopologyMaxSpoutPending: 256}
			if tuned {
				name = fmt.Sprintf("tuned-%d", pair)
				conf = gale.Config{gale.TopologyMaxSpoutPendingAutotune: true, gale.TopologyMaxSpoutPendingAutotuneIntervalSecs: 2}
			}
			sp := newSpout(t, jetstream.Config{URL: ts.URL, Stream: "EVENTS", Consumer: name})
			b := gale.NewTopologyBuilder()
			b.SetSpout("in", sp.New, 1)
			b.SetBolt("work", func() gale.Bolt { return &slowBolt{d: 2 * time.Millisecond} }, 8).ShuffleGrouping("in")
			topo, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			lt, err := gale.StartLocal(name, conf, topo, gale.RunOptions{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			until(func() bool { return sp.Stats().Acked >= int64(n/10) })
			start := time.Now()
			until(func() bool { return sp.Stats().Acked >= int64(n) })
			secs := time.Since(start).Seconds()
			lt.Stop()
			t.Logf("%s: %.0f msgs/s (%d messages in %.1f s)", name, float64(n-n/10)/secs, n-n/10, secs)
		}
	}
}
