package gale_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
)

// spoutsTopology is a spout with parallelism n feeding a sink.
func spoutsTopology(t *testing.T, n int) *gale.Topology {
	b := gale.NewTopologyBuilder()
	b.SetSpout("sentences", hopSpout(0), n)
	b.SetBolt("sink", sinkBolt, 1).ShuffleGrouping("sentences")
	return build(t, b)
}

// TestParallelismBeyondBudgetRefused: a parallelism whose executors and
// tasks alone would not fit in the worker's heap budget is refused at
// start, naming the component, its tasks, the budget and how many fit;
// that many start.
func TestParallelismBeyondBudgetRefused(t *testing.T) {
	file := gale.Config{"worker.heap.memory.mb": 64}
	opts := gale.RunOptions{Logger: testLogger(t)}
	bridge.SetFileConfig(&opts, file)
	_, err := gale.StartLocal("big", nil, spoutsTopology(t, 5000), opts)
	if err == nil {
		t.Fatal("StartLocal with 5000 spout tasks in a 64 MiB worker succeeded, want an error")
	}
	msg := err.Error()
	for _, want := range []string{"spout sentences", "5000 tasks in one worker", "64 MiB", "worker.heap.memory.mb", "lower its parallelism or add workers"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if !errors.Is(err, gale.ErrInvalidTopology) {
		t.Errorf("error %v does not wrap ErrInvalidTopology", err)
	}
	m := regexp.MustCompile(`at most (\d+) fit`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("error %q does not say how many fit", msg)
	}
	fit, _ := strconv.Atoi(m[1])
	if fit < 1 || fit >= 5000 {
		t.Fatalf("error says %d fit, want between 1 and 4999", fit)
	}
	for _, n := range []int{fit, fit + 1} {
		opts := gale.RunOptions{Logger: testLogger(t), Clock: galetest.NewClock(testEpoch)}
		bridge.SetFileConfig(&opts, file)
		lt, err := gale.StartLocal("big", gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0}, spoutsTopology(t, n), opts)
		switch {
		case n == fit && err != nil:
			t.Errorf("%d spout tasks, which the error said fit: %v", n, err)
		case n > fit && err == nil:
			t.Errorf("%d spout tasks started, but the error said at most %d fit", n, fit)
		}
		if err == nil {
			lt.Stop()
		}
	}
}

// TestAutoPendingSharedByWorker: the automatic in-flight limit's floor is
// the worker's, shared by its spout tasks: 50 spout tasks whose trees never
// complete hold 100 trees in flight together, not 100 each.
func TestAutoPendingSharedByWorker(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", hopSpout(0), 10).SetNumTasks(50)
	b.SetBolt("hold", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {}} // never acks
	}, 1).ShuffleGrouping("src")
	lt, _, _ := startLocal(t, build(t, b), gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20e9)
	defer cancel()
	if _, err := bridge.LocalOf(lt).WaitQuiet(ctx); err != nil {
		t.Fatalf("WaitQuiet: %v (pending %d)", err, lt.Pending())
	}
	if p := lt.Pending(); p != 100 {
		t.Fatalf("50 capped spout tasks hold %d trees in flight, want the worker's floor of 100", p)
	}
}
