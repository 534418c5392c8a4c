// Package wordcount is the classic Storm example: a spout emits sentences,
// a bolt splits them into words (shuffle grouping) and a bolt counts words
// (fields grouping on the word, so each word is counted by one task).
package wordcount

import (
	"strings"

	"github.com/gale-stream/gale"
)

// SplitSentence splits the "sentence" field into words, emitting each word
// anchored on the sentence, then acks the sentence.
type SplitSentence struct {
	gale.BaseBolt
}

// DeclareOutputFields declares the "word" field.
func (*SplitSentence) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word") }

// Execute splits one sentence.
func (s *SplitSentence) Execute(t *gale.Tuple) {
	sentence := t.GetString(0)
	for len(sentence) > 0 {
		i := strings.IndexByte(sentence, ' ')
		if i < 0 {
			i = len(sentence)
		}
		if i > 0 {
			s.Collector.EmitString(t, sentence[:i])
		}
		if i == len(sentence) {
			break
		}
		sentence = sentence[i+1:]
	}
	s.Collector.Ack(t)
}

// WordCount counts words. It is a basic bolt: the input is acked when
// Execute returns.
type WordCount struct {
	gale.BaseBasicBolt
	Counts map[string]int64
	// OnCleanup, if set, receives the final counts at shutdown.
	OnCleanup func(task int, counts map[string]int64)
	task      int
}

// DeclareOutputFields declares ("word", "count").
func (*WordCount) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word", "count") }

// Prepare makes the map.
func (w *WordCount) Prepare(tc *gale.TopologyContext) error {
	w.Counts = make(map[string]int64)
	w.task = tc.TaskID()
	return nil
}

// Execute counts one word and emits its new count.
func (w *WordCount) Execute(t *gale.Tuple, c *gale.BasicCollector) error {
	word := t.GetString(0)
	n := w.Counts[word] + 1
	w.Counts[word] = n
	_, err := c.Emit(word, n)
	return err
}

// Cleanup hands the counts to OnCleanup.
func (w *WordCount) Cleanup() {
	if w.OnCleanup != nil {
		w.OnCleanup(w.task, w.Counts)
	}
}

// SentenceSpout emits the given sentences in order, each with its index as
// the message id, and replays failed ones. With Loop it starts again after
// the last.
type SentenceSpout struct {
	gale.BaseSpout
	Sentences []string
	Loop      bool
	next      int
	replay    []int
}

// DeclareOutputFields declares "sentence".
func (*SentenceSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("sentence") }

// NextTuple emits a replay if there is one, else the next sentence.
func (s *SentenceSpout) NextTuple() {
	if n := len(s.replay); n > 0 {
		i := s.replay[n-1]
		s.replay = s.replay[:n-1]
		s.Collector.Emit(i, s.Sentences[i])
		return
	}
	if s.Loop && s.next == len(s.Sentences) {
		s.next = 0
	}
	if s.next < len(s.Sentences) {
		s.Collector.Emit(s.next, s.Sentences[s.next])
		s.next++
	}
}

// Fail queues the sentence for replay.
func (s *SentenceSpout) Fail(msgID any, _ error) { s.replay = append(s.replay, msgID.(int)) }

// Topology builds sentences → split → count with the given parallelism.
func Topology(sentences []string, splitters, counters int, onCleanup func(int, map[string]int64)) (*gale.Topology, error) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("sentences", func() gale.Spout { return &SentenceSpout{Sentences: sentences} }, 1)
	b.SetBolt("split", func() gale.Bolt { return &SplitSentence{} }, splitters).ShuffleGrouping("sentences")
	b.SetBasicBolt("count", func() gale.BasicBolt { return &WordCount{OnCleanup: onCleanup} }, counters).FieldsGrouping("split", "word")
	return b.Build()
}
