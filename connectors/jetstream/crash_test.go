package jetstream_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/connectors/jetstream"
	"github.com/gale-stream/gale/internal/testutil"
)

// The topology is killed mid-stream (an in-process shutdown with no drain:
// topology.shutdown.drain.timeout.secs 0, the kill path), with trees in
// flight, messages fetched and not emitted, and acks on their way; a new
// topology on the same durable consumer then finishes the stream. Every
// message is processed at least once.
func TestSpoutKilledMidStreamLosesNothingOnRestart(t *testing.T) {
	ts := startServer(t)
	_, js := ts.client(t)
	createStream(t, js, "ORDERS", "orders.>")
	const n = 3000
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprintf("ok-%d", i)
	}
	publishBulk(t, js, "orders.new", bodies)

	cfg := jetstream.Config{URL: ts.URL, Stream: "ORDERS", Consumer: "work", MaxAckPending: 500, Retry: fastPolicy(5*time.Millisecond, 5)}
	kill := gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0, gale.TopologyMaxSpoutPending: 200}

	// First run: the bolt processes (acks) the first third, then holds
	// every other tuple and processes the rest, so that the kill finds
	// trees in flight and acks on their way to the spout.
	rec1 := &recorder{holdN: n / 3}
	bolt1 := &recBolt{rec: rec1, holdHalf: true, acked: make(map[uint64]int)}
	sp1 := newSpout(t, cfg)
	lt1 := runTopology(t, "crash1", sp1.New, bolt1, kill)
	testutil.Eventually(t, 60*time.Second, "the first run to hold trees in flight", func() bool {
		return rec1.count(func(delivery) bool { return true }) > n/3+300
	})
	lt1.Stop()
	first := rec1.snapshot()
	processed := make(map[uint64]int, n)
	rec1.mu.Lock()
	for seq, c := range bolt1.acked {
		processed[seq] += c
	}
	rec1.mu.Unlock()
	processed1 := len(processed)
	st1 := sp1.Stats()

	// Second run, same durable consumer: it processes everything it gets.
	rec2 := &recorder{}
	sp2 := newSpout(t, cfg)
	lt2 := runTopology(t, "crash2", sp2.New, &recBolt{rec: rec2}, kill)
	testutil.Eventually(t, 120*time.Second, "every message processed", func() bool {
		seen := make(map[uint64]bool, n)
		for s := range processed {
			seen[s] = true
		}
		for _, d := range rec2.snapshot() {
			seen[d.Sequence] = true
		}
		return len(seen) == n
	})
	testutil.Eventually(t, 60*time.Second, "the consumer acked through the stream's end", func() bool {
		info := consumerInfo(t, js, "ORDERS", "work")
		return info.NumAckPending == 0 && info.AckFloor.Stream == n
	})
	lt2.Stop()
	second := rec2.snapshot()
	for _, d := range second {
		processed[d.Sequence]++
	}
	var lost, dups int
	for seq := uint64(1); seq <= n; seq++ {
		switch c := processed[seq]; {
		case c == 0:
			lost++
		case c > 1:
			dups += c - 1
		}
	}
	t.Logf("killed after %d deliveries to the bolt (%d processed; spout: %d emitted, %d acked, %d trees cut by the kill); "+
		"restart delivered %d; %d messages: lost %d, duplicates %d",
		len(first), processed1, st1.Emitted, st1.Acked, st1.Shutdown, len(second), n, lost, dups)
	if lost != 0 {
		t.Fatalf("%d messages never processed", lost)
	}
	if st1.Shutdown == 0 {
		t.Fatalf("first run stats %+v: no tree was in flight at the kill; the test killed nothing mid-stream", st1)
	}
}
