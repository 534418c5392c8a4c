package starter

import (
	"strings"

	"github.com/gale-stream/gale"
)

// SplitSentence splits its input's first value on spaces and emits each
// word: storm-starter's WordCountTopology.SplitSentence (a shell bolt
// there, in Python).
type SplitSentence struct {
	gale.BaseBasicBolt
}

// DeclareOutputFields declares word.
func (*SplitSentence) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word") }

// Execute emits each word of the sentence.
func (*SplitSentence) Execute(t *gale.Tuple, c *gale.BasicCollector) error {
	s, _ := t.Value(0).(string)
	for _, w := range strings.Fields(s) {
		if _, err := c.Emit(w); err != nil {
			return err
		}
	}
	return nil
}

// WordCount counts its input's words and emits each word with its count so
// far: storm-starter's WordCountTopology.WordCount.
type WordCount struct {
	gale.BaseBasicBolt
	counts map[string]int
}

// DeclareOutputFields declares word and count.
func (*WordCount) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word", "count") }

// Execute counts the word and emits it with its count.
func (b *WordCount) Execute(t *gale.Tuple, c *gale.BasicCollector) error {
	if b.counts == nil {
		b.counts = map[string]int{}
	}
	w, _ := t.Value(0).(string)
	b.counts[w]++
	_, err := c.Emit(w, b.counts[w])
	return err
}

// WordCountTopology wires storm-starter's WordCountTopology: the spout
// "spout" (sentences) to "split" (8 tasks, shuffle) to "count" (12 tasks,
// fields grouping on word).
func WordCountTopology(sentences func() gale.Spout) *gale.TopologyBuilder {
	b := gale.NewTopologyBuilder()
	b.SetSpout("spout", sentences, 5)
	b.SetBasicBolt("split", func() gale.BasicBolt { return &SplitSentence{} }, 8).ShuffleGrouping("spout")
	b.SetBasicBolt("count", func() gale.BasicBolt { return &WordCount{} }, 12).FieldsGrouping("split", "word")
	return b
}
