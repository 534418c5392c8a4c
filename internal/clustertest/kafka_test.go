//go:build unix

package clustertest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	benchkafka "github.com/gale-stream/gale/internal/bench/kafka"
)

// TestMachineLostKafka: the bench-kafka topology (the Kafka spout →
// decode → the Kafka sink) on a cluster of three supervisors, reading
// a topic of a Kafka broker in this process (kfake on 127.0.0.1) while
// it is being produced to. Mid-stream a supervisor and its workers are
// killed with SIGKILL together, as when a machine dies; nimbus moves its
// worker to another supervisor once its lease expires. Every id produced
// appears in the output topic, written by the sink, at least once: none
// is lost. The duplicates are logged.
func TestMachineLostKafka(t *testing.T) {
	needCluster(t)
	const n = 4000
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	brokers := kc.ListenAddrs()
	out, err := benchkafka.ReadOutput(brokers, "out", n)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()

	f := Launch(t, Options{Supervisors: 3, SlotsPer: 2, Config: failureConfig(shortLease)})
	const name = benchkafka.TopologyName
	if code, stdout, _ := f.Gale(t, "submit", name, "--workers", "2", "--json",
		"-p", "brokers="+brokers[0], "-p", "topic=in", "-p", "group=machine-lost", "-p", "output=out",
		"-p", "spouts=2", "-p", "decoders=2", "-p", "sinks=2", "-p", "session.timeout.ms=6000",
		"-c", "topology.message.timeout.secs=5", "-c", "topology.acker.executors=2",
		"-c", "topology.max.spout.pending=500"); code != 0 {
		t.Fatalf("gale submit %s: exit %d\n%s", name, code, stdout)
	}
	submitted := time.Now()

	// The events, produced while the topology runs.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var produceErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		produceErr = benchkafka.Produce(ctx, brokers, "in", 0, n, 400)
	}()
	defer func() { cancel(); wg.Wait() }()

	pollFor(t, "a fifth of the ids in the output topic", func() bool { return out.Tally.Distinct() >= n/5 })
	before := out.Tally.Distinct()
	t.Logf("%d of %d ids in the output %s after submit", before, n, time.Since(submitted).Round(time.Millisecond))
	if before == n {
		t.Fatal("every id was in the output before the kill: the kill would not be mid-stream; produce more or slower")
	}

	actx, acancel := context.WithTimeout(context.Background(), generous)
	defer acancel()
	a, err := f.Assignment(actx, t, name)
	if err != nil {
		t.Fatal(err)
	}
	placed := supervisorsOf(a)
	victim := f.SupervisorByID(placed[0])
	if victim == nil {
		t.Fatalf("assignment %v names a supervisor the fleet does not have", placed)
	}
	victimWorkers, killed := loseMachine(t, victim, placed)
	t.Logf("killed %s (%s) and its workers %v with %d of %d ids in the output; assignment v%d on %v",
		victim.Role, victim.ID, victimWorkers, out.Tally.Distinct(), n, a.Version, placed)

	pollFor(t, fmt.Sprintf("nimbus moving %s's worker to another supervisor", victim.ID), func() bool {
		now, err := f.Assignment(actx, t, name)
		return err == nil && len(now.Workers) == len(a.Workers) && !slices.Contains(supervisorsOf(now), victim.ID)
	})
	t.Logf("reassigned %s after the kill", time.Since(killed).Round(time.Millisecond))
	wg.Wait()
	if produceErr != nil {
		t.Fatalf("produce: %v", produceErr)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), generous)
	defer wcancel()
	if err := Poll(wctx, out.Tally.Complete); err != nil {
		t.Fatalf("within %s of the kill, %d of %d ids never reached the output (the first: %v)",
			generous, out.Tally.Lost(), n, out.Tally.Missing(10))
	}
	t.Logf("every id in the output %s after the kill", time.Since(killed).Round(time.Millisecond))
	if out.Bad() != 0 || out.Tally.Unknown() != 0 {
		t.Errorf("the output holds %d records that are not events and %d unknown ids", out.Bad(), out.Tally.Unknown())
	}
	t.Logf("%d duplicates in %d records of the output (%.1f%%)", out.Tally.Duplicates(), out.Tally.Seen(),
		100*float64(out.Tally.Duplicates())/float64(out.Tally.Seen()))
}
