package gale_test

import (
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/testutil"
	"github.com/gale-stream/gale/internal/transport"
	"github.com/gale-stream/gale/internal/worker"
)

// movingWordCount is a word count whose spouts take sentence ids from one
// counter up to limit, and replay the ones that fail. It remembers the
// ids that spout task lostTask emitted before epoch moved past 0: the
// ones a worker crash loses with their spout.
type movingWordCount struct {
	next, limit, epoch atomic.Int64
	lostTask           int
	mu                 sync.Mutex
	lost               map[int]bool
}

func (m *movingWordCount) topology(t *testing.T, n int) *gale.Topology {
	m.lost = map[int]bool{}
	b := gale.NewTopologyBuilder()
	b.SetSpout("sentences", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("sentence") },
			next: func(s *funcSpout) {
				for {
					id := m.next.Load()
					if id >= m.limit.Load() {
						return
					}
					if m.next.CompareAndSwap(id, id+1) {
						if s.tc.TaskID() == m.lostTask && m.epoch.Load() == 0 {
							m.mu.Lock()
							m.lost[int(id)] = true
							m.mu.Unlock()
						}
						s.Collector.Emit(int(id), sentence(int(id)))
						return
					}
				}
			},
			fail: func(s *funcSpout, id any, _ error) { s.Collector.Emit(id, sentence(id.(int))) },
		}
	}, n)
	b.SetBolt("split", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("word") },
			execute: func(b *funcBolt, in *gale.Tuple) {
				for _, w := range strings.Fields(in.GetString(0)) {
					b.Collector.Emit(in, w)
				}
				b.Collector.Ack(in)
			},
		}
	}, n).ShuffleGrouping("sentences")
	b.SetBolt("count", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) { b.Collector.Ack(in) }}
	}, n).FieldsGrouping("split", "word")
	return build(t, b)
}

// missing returns the ids in lo … hi-1 not acked, nor lost with their
// spout.
func (m *movingWordCount) missing(rec *recorder, lo, hi int) []int {
	acked := map[int]bool{}
	for _, id := range rec.Acked("sentences") {
		acked[id.(int)] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int
	for id := lo; id < hi; id++ {
		if !acked[id] && !m.lost[id] {
			out = append(out, id)
		}
	}
	return out
}

// TestWorkersReassignMovedPeer: worker 2 of 3 is started again at another
// address, and workers 0 and 1 are reassigned to it. The copy of worker 2
// that holds the old assignment is refused by the reassigned workers: if
// it still runs (cut off, as in a partition) it fails, and one started
// later with the old assignment fails too. The new worker 2 joins them,
// and every sentence emitted after the move is acked; those caught in the
// move, their tuples lost with the old worker 2, are replayed after their
// timeout. With versioned assignments, a new worker 2 started before its
// peers are reassigned waits for them rather than fails.
func TestWorkersReassignMovedPeer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crash bool // the old worker 2 stops, without draining, with trees in flight
		early bool // the new worker 2 starts before the others are reassigned (versions 1, then 2)
	}{
		{"the old copy cut off but running", false, false},
		{"the old copy crashed with trees in flight", true, false},
		{"the new copy started before its peers are reassigned", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Executors in id order: count 0–2, sentences 3–5 (tasks 4–6),
			// split 6–8, ackers 9–11; the even placement puts executor i on
			// worker i mod 3, so spout task 6 runs on worker 2.
			m := &movingWordCount{lostTask: 6}
			topo := m.topology(t, 3)
			conf := gale.Config{gale.TopologyMessageTimeoutSecs: 3, gale.TopologyShutdownDrainTimeoutSecs: 0}
			rec := newRecorder(galetest.NewClock(testEpoch))
			obs := rec.observer()
			lns := make([]net.Listener, 5) // 3: worker 2's new slot; 4: a late stale worker's
			for i := range lns {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				lns[i] = ln
			}
			addrs := []string{lns[0].Addr().String(), lns[1].Addr().String(), lns[2].Addr().String()}
			moved := []string{addrs[0], addrs[1], lns[3].Addr().String()}
			var version int64 // of the assignment before the move; the moved one's is version+1
			if tc.early {
				version = 1
			}
			log, errs := errorLines(t)
			start := func(i int, addrs []string, v int64, ln net.Listener) worker.Handle {
				t.Helper()
				w, err := bridge.StartWorker("test", conf, topo, worker.Assignment{Worker: i, Workers: addrs, Secret: testSecret, Version: v},
					worker.Options{Logger: log.With("worker", i), Listener: ln}, bridge.Hooks{Observer: obs})
				if err != nil {
					t.Fatalf("StartWorker %d: %v", i, err)
				}
				t.Cleanup(w.Stop)
				return w
			}
			var ws []worker.Handle
			for i := range 3 {
				ws = append(ws, start(i, addrs, version, lns[i]))
			}
			const before, after = 300, 900
			m.limit.Store(before)
			testutil.Eventually(t, 60*time.Second, "the sentences before the move acked", func() bool { return len(m.missing(rec, 0, before)) == 0 })

			old := ws[2]
			if tc.crash {
				m.limit.Store(after) // trees in flight through worker 2 when it stops
				testutil.Eventually(t, 10*time.Second, "sentences in flight", func() bool { return m.next.Load() > before+50 })
				old.Stop()
			} else {
				old.Deactivate()
				testutil.Eventually(t, 10*time.Second, "the old worker 2's spouts stopped", func() bool { return old.Status().Stopped })
			}
			m.epoch.Store(1)
			newVersion := version
			if tc.early {
				newVersion++
				ws[2] = start(2, moved, newVersion, lns[3])
				testutil.Eventually(t, 10*time.Second, "the new worker 2 refused until its peers are reassigned", func() bool {
					return slices.ContainsFunc(errs(), func(e string) bool { return strings.Contains(e, "newer than worker") })
				})
				select {
				case err := <-ws[2].Failed():
					t.Fatalf("the new worker 2 failed before its peers were reassigned: %v", err)
				default:
				}
			}
			for i := range 2 {
				if err := ws[i].Reassign(worker.Assignment{Worker: i, Workers: moved, Secret: testSecret, Version: newVersion}); err != nil {
					t.Fatalf("Reassign worker %d: %v", i, err)
				}
			}
			if !tc.crash {
				select {
				case err := <-old.Failed():
					if !errors.Is(err, transport.ErrMismatch) || !strings.Contains(err.Error(), "hold different assignments") {
						t.Errorf("the old worker 2 failed with %v, want an assignment mismatch", err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the old worker 2 did not fail in 30 s although its peers were reassigned")
				}
			}
			if !tc.early {
				ws[2] = start(2, moved, newVersion, lns[3])
			}
			m.limit.Store(after)
			testutil.Eventually(t, 60*time.Second, "the sentences after the move acked", func() bool { return len(m.missing(rec, before, after)) == 0 })
			for i, w := range ws {
				select {
				case err := <-w.Failed():
					t.Errorf("worker %d failed: %v", i, err)
				default:
				}
				if st := w.Status(); st.PeersConnected != 2 {
					t.Errorf("worker %d is connected to %d peers, want 2", i, st.PeersConnected)
				}
			}
			if st := old.Status(); st.PeersConnected != 0 {
				t.Errorf("the old worker 2 is connected to %d peers after the move, want none", st.PeersConnected)
			}
			old.Stop()
			late := start(2, addrs, version, lns[4])
			select {
			case err := <-late.Failed():
				if !errors.Is(err, transport.ErrMismatch) || !strings.Contains(err.Error(), "hold different assignments") {
					t.Errorf("a worker with the old assignment failed with %v, want an assignment mismatch", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("a worker with the old assignment was not refused in 30 s")
			}
			if st := late.Status(); st.PeersConnected != 0 || st.WireTuplesSent != 0 {
				t.Errorf("a worker with the old assignment connected to or sent to the reassigned ones: %+v", st)
			}
		})
	}
}

// TestReassignRefusesOtherChanges: a new assignment that changes anything
// but peers' addresses is refused with ErrInvalidAssignment saying what it
// changes, and the workers keep running as they were: the word count
// stays exact.
func TestReassignRefusesOtherChanges(t *testing.T) {
	wc := &wordCount{n: 1500, countTasks: 4}
	topo := wc.topology(t, 2, 2, 2)
	rec := newRecorder(galetest.NewClock(testEpoch))
	obs := rec.observer()
	w := startWorkersWith(t, 2, topo, gale.Config{}, workerSetup{obs: func(int) *bridge.Observer { return obs }, secrets: []string{testSecret, testSecret}})
	addrs := []string{w.ws[0].Addr(), w.ws[1].Addr()}
	other := []string{addrs[0], "127.0.0.1:1"}
	tests := []struct {
		name string
		asg  worker.Assignment
		want string
	}{
		{"another worker index", worker.Assignment{Worker: 1, Workers: addrs, Secret: testSecret}, "the new assignment is worker 1's, this is worker 0"},
		{"another worker count", worker.Assignment{Worker: 0, Workers: append(slices.Clone(addrs), "127.0.0.1:3"), Secret: testSecret}, "lists 3 workers, this worker runs with 2"},
		{"this worker moved", worker.Assignment{Worker: 0, Workers: []string{"127.0.0.1:4", addrs[1]}, Secret: testSecret}, "moves this worker itself"},
		{"executors moved", worker.Assignment{Worker: 0, Workers: other, Secret: testSecret, Executors: []int{1, 0, 1, 0, 1, 0}},
			"moves executor 0 (bolt \"count\", tasks 1–2) from worker 0 to worker 1"},
		{"executor counts", worker.Assignment{Worker: 0, Workers: other, Secret: testSecret, Parallelism: map[string]int{"count": 4}}, "changes the executor counts"},
		{"another secret", worker.Assignment{Worker: 0, Workers: other, Secret: "x"}, "another topology secret"},
		{"no secret", worker.Assignment{Worker: 0, Workers: other}, "another topology secret"},
		{"an older version", worker.Assignment{Worker: 0, Workers: other, Secret: testSecret, Version: -1}, "version -1 is older than the 0 in force"},
		{"a bad address", worker.Assignment{Worker: 0, Workers: []string{addrs[0], "nowhere"}, Secret: testSecret}, `worker 1's address "nowhere"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := w.ws[0].Reassign(tc.asg)
			if !errors.Is(err, worker.ErrInvalidAssignment) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Reassign: %v, want ErrInvalidAssignment saying %q", err, tc.want)
			}
		})
	}
	if err := w.ws[0].Reassign(worker.Assignment{Worker: 0, Workers: slices.Clone(addrs), Secret: testSecret}); err != nil {
		t.Errorf("Reassign to the same assignment: %v", err)
	}
	total := 2 * wc.n
	testutil.Eventually(t, 60*time.Second, "every sentence acked", func() bool { return len(rec.Acked("sentences")) >= total })
	checkExact(t, rec, wc, total)
}
