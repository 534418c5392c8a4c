package galetest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

// The acked word count the multi-process tests run. Components sorted by
// id with their executors: count (2), sentences (1), split (2); placed
// round-robin over two workers that is count→0, count→1, sentences→0,
// split→1, split→0, plus one acker each. The spout is in worker 0; worker
// 1 runs a counter, a splitter and an acker. Split takes the sentences
// local-or-shuffle, so only worker 0's splitter gets any, and count takes
// the words by field, so about half of them cross to worker 1.
const wordCount = "galetest-wordcount"

func init() {
	galetest.RegisterTopology(wordCount, buildWordCount)
}

// wcParams shape the word count.
type wcParams struct {
	Sentences int     `json:"sentences"` // emitted by the spout, ids 0..Sentences-1
	Rate      float64 `json:"rate"`      // sentences per second; 0: as fast as it can
}

// wcStats is what a worker reports in its heartbeats.
type wcStats struct {
	Emitted int64 `json:"emitted"` // first emits, not replays
	Acked   int64 `json:"acked"`   // distinct ids acked
	Reacked int64 `json:"reacked"` // acks of an id already acked
	Failed  int64 `json:"failed"`  // fails, each replayed
	Words   int64 `json:"words"`   // words counted by this worker's counters
}

const wordsPerSentence = 4

func wcSentence(i int) string {
	return fmt.Sprintf("w%d w%d w%d w%d", i%37, (i*5)%37, (i+11)%37, i%3)
}

func buildWordCount(raw json.RawMessage) (*gale.Topology, gale.Config, func() any, error) {
	var p wcParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, nil, nil, err
	}
	var st struct{ emitted, acked, reacked, failed, words atomic.Int64 }
	b := gale.NewTopologyBuilder()
	b.SetSpout("sentences", func() gale.Spout {
		return &wcSpout{p: p, emitted: &st.emitted, acked: &st.acked, reacked: &st.reacked, failed: &st.failed}
	}, 1)
	b.SetBolt("split", func() gale.Bolt {
		return &bolt{fields: []string{"word"}, execute: func(b *bolt, in *gale.Tuple) {
			for _, w := range strings.Fields(in.GetString(0)) {
				b.Collector.Emit(in, w)
			}
			b.Collector.Ack(in)
		}}
	}, 2).LocalOrShuffleGrouping("sentences")
	b.SetBolt("count", func() gale.Bolt {
		return &bolt{execute: func(b *bolt, in *gale.Tuple) {
			st.words.Add(1)
			b.Collector.Ack(in)
		}}
	}, 2).FieldsGrouping("split", "word")
	topo, err := b.Build()
	if err != nil {
		return nil, nil, nil, err
	}
	stats := func() any {
		return wcStats{Emitted: st.emitted.Load(), Acked: st.acked.Load(), Reacked: st.reacked.Load(),
			Failed: st.failed.Load(), Words: st.words.Load()}
	}
	return topo, nil, stats, nil
}

// wcSpout emits p.Sentences sentences, at p.Rate if set, each with its
// number as message id, and emits a failed one again.
type wcSpout struct {
	gale.BaseSpout
	p                               wcParams
	emitted, acked, reacked, failed *atomic.Int64
	next                            int
	start                           time.Time
	done                            []bool
}

func (*wcSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("sentence") }

func (s *wcSpout) Open(_ *gale.TopologyContext, c *gale.SpoutCollector) error {
	s.Collector = c
	s.start = time.Now()
	s.done = make([]bool, s.p.Sentences)
	return nil
}

func (s *wcSpout) NextTuple() {
	due := s.p.Sentences
	if s.p.Rate > 0 {
		due = min(due, int(time.Since(s.start).Seconds()*s.p.Rate))
	}
	for ; s.next < due; s.next++ {
		s.Collector.Emit(s.next, wcSentence(s.next))
		s.emitted.Add(1)
	}
}

func (s *wcSpout) Ack(id any) {
	i := id.(int)
	if s.done[i] {
		s.reacked.Add(1)
		return
	}
	s.done[i] = true
	s.acked.Add(1)
}

func (s *wcSpout) Fail(id any, _ error) {
	s.failed.Add(1)
	s.Collector.Emit(id, wcSentence(id.(int)))
}

// stats returns worker i's latest stats, zero before its first heartbeat.
func stats(w *galetest.Workers, i int) wcStats {
	var s wcStats
	w.Stats(i, &s)
	return s
}

// TestWorkersWordCount runs the word count in two worker processes: every
// sentence is acked once, none fails, and the two workers' counters
// together count every word once.
func TestWorkersWordCount(t *testing.T) {
	const sentences = 2000
	w := galetest.StartWorkers(t, wordCount, 2, galetest.WorkersOptions{Params: wcParams{Sentences: sentences}})
	w.WaitFor("every sentence acked and every word counted", 15*time.Second, func() bool {
		return stats(w, 0).Acked == sentences && stats(w, 0).Words+stats(w, 1).Words == sentences*wordsPerSentence
	})
	if err := w.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// Stop waited for the last heartbeats, sent as the workers stopped.
	s0, s1 := stats(w, 0), stats(w, 1)
	want0 := wcStats{Emitted: sentences, Acked: sentences, Words: s0.Words}
	if s0 != want0 {
		t.Errorf("worker 0 (the spout's) reports %+v, want %+v", s0, want0)
	}
	if s1.Emitted != 0 || s1.Acked != 0 {
		t.Errorf("worker 1 reports spout activity %+v, want none: the spout should run in worker 0", s1)
	}
	if got := s0.Words + s1.Words; got != sentences*wordsPerSentence {
		t.Errorf("counted %d + %d = %d words, want %d", s0.Words, s1.Words, got, sentences*wordsPerSentence)
	}
	if s0.Words == 0 || s1.Words == 0 {
		t.Errorf("worker 0 counted %d words and worker 1 %d, want both some: fields grouping spreads the words over both", s0.Words, s1.Words)
	}
	if st := w.Status(0); st.WireTuplesSent == 0 || st.Pending != 0 {
		t.Errorf("worker 0's last status %+v, want tuples sent to worker 1 and no tree pending", st)
	}
}

// TestWorkersKillAndRestart kills the worker without the spout with
// SIGKILL in the middle of the run. Its trees time out (after 3 s), the
// spout replays them, the worker is started again on its address, and
// every sentence is acked in the end.
func TestWorkersKillAndRestart(t *testing.T) {
	const sentences = 2000
	w := galetest.StartWorkers(t, wordCount, 2, galetest.WorkersOptions{
		Params:  wcParams{Sentences: sentences, Rate: 1000},
		Config:  gale.Config{gale.TopologyMessageTimeoutSecs: 3},
		Restart: true,
	})
	w.WaitFor("a fifth of the sentences acked", 10*time.Second, func() bool { return stats(w, 0).Acked >= sentences/5 })
	before := stats(w, 0)
	w.Kill(1)
	w.WaitFor("every sentence acked after the kill", 20*time.Second, func() bool { return stats(w, 0).Acked == sentences })
	if err := w.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	after := stats(w, 0)
	if w.Restarts() != 1 {
		t.Errorf("workers restarted %d times, want 1", w.Restarts())
	}
	if after.Emitted != sentences || after.Acked != sentences {
		t.Errorf("worker 0 reports %+v, want %d sentences emitted once and each acked", after, sentences)
	}
	t.Logf("killed worker 1 with %d of %d acked; %d trees failed and were replayed; %d acks of an already acked id",
		before.Acked, sentences, after.Failed, after.Reacked)
}
