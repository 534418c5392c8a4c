package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

func init() {
	galetest.RegisterTopology(TopologyName, func(raw json.RawMessage) (*gale.Topology, gale.Config, func() any, error) {
		var params map[string]string
		if err := json.Unmarshal(raw, &params); err != nil {
			return nil, nil, nil, err
		}
		topo, conf, err := Build(params)
		return topo, conf, nil, err
	})
}

// crashWait bounds every wait of the crash tests for something that
// must happen: only a broken topology, or a machine far busier than
// CI's, takes it.
const crashWait = 3 * time.Minute

// producing produces the events 0 … n−1 to topic at rate per second in
// a goroutine the test owns; wait returns its error once it is done.
func producing(t *testing.T, brokers []string, topic string, n int64, rate float64) (wait func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		err = Produce(ctx, brokers, topic, 0, n, rate)
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() error { wg.Wait(); return err }
}

// pollUntil polls ok every 50 ms until it holds, failing the test with
// what() after crashWait; it returns how long it took.
func pollUntil(t *testing.T, what func() string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	tk := time.NewTicker(50 * time.Millisecond)
	defer tk.Stop()
	for !ok() {
		if time.Since(start) > crashWait {
			t.Fatalf("within %s: %s", crashWait, what())
		}
		<-tk.C
	}
	return time.Since(start)
}

// TestWorkerKilled: the bench-kafka topology in two worker processes,
// reading a topic while it is being produced to; one worker is killed
// with SIGKILL mid-stream and started again on its address. Every id
// produced appears in the output topic, written by the Kafka sink, at
// least once: none is lost. The duplicates (records replayed from the
// last committed offset, trees through the dead worker replayed after
// their timeout) are logged.
func TestWorkerKilled(t *testing.T) {
	const n = 6000
	brokers := newCluster(t, 4, "in", "out")
	wait := producing(t, brokers, "in", n, 1000)
	out, err := ReadOutput(brokers, "out", n)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := galetest.StartWorkers(t, TopologyName, 2, galetest.WorkersOptions{
		Params: map[string]string{"brokers": brokers[0], "topic": "in", "group": "crash", "output": "out",
			"spouts": "2", "decoders": "2", "sinks": "2", "session.timeout.ms": "6000"},
		Config: gale.Config{gale.TopologyMessageTimeoutSecs: 5, gale.TopologyAckerExecutors: 2,
			gale.TopologyMaxSpoutPending: 500},
		Restart:  true,
		LogLevel: "warn",
	})
	start := time.Now()
	pollUntil(t, func() string {
		return fmt.Sprintf("only %d of %d ids reached the output topic before the kill (%v)", out.Tally.Distinct(), n, out.Err())
	}, func() bool { return out.Tally.Distinct() >= n/5 })
	before := out.Tally.Distinct()
	if before == n {
		t.Fatalf("every id was in the output before the kill: the kill would not be mid-stream; produce more or slower")
	}
	w.Kill(0)
	killed := time.Now()
	t.Logf("killed worker 0 (kill -9) %s after the start, with %d of %d ids in the output", killed.Sub(start).Round(time.Millisecond), before, n)
	took := pollUntil(t, func() string {
		return fmt.Sprintf("after the kill, %d of %d ids never reached the output topic (the first: %v)", out.Tally.Lost(), n, out.Tally.Missing(10))
	}, out.Tally.Complete)
	if err := wait(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if err := w.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if w.Restarts() != 1 {
		t.Errorf("workers restarted %d times, want 1", w.Restarts())
	}
	if out.Bad() != 0 || out.Tally.Unknown() != 0 {
		t.Errorf("the output holds %d records that are not events and %d unknown ids", out.Bad(), out.Tally.Unknown())
	}
	t.Logf("every id in the output %s after the kill; %d duplicates in %d records (%.1f%%)",
		took.Round(time.Millisecond), out.Tally.Duplicates(), out.Tally.Seen(), 100*float64(out.Tally.Duplicates())/float64(out.Tally.Seen()))
}
