package starter

import "github.com/gale-stream/gale"

// ExclamationBolt appends "!!!" to its input's first value and emits it,
// anchored on the input, which it then acks: storm-starter's
// ExclamationTopology.ExclamationBolt.
type ExclamationBolt struct {
	gale.BaseBolt
}

// DeclareOutputFields declares word.
func (*ExclamationBolt) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word") }

// Execute emits the input's first value with "!!!" appended.
func (b *ExclamationBolt) Execute(t *gale.Tuple) {
	s, _ := t.Value(0).(string)
	b.Collector.Emit(t, s+"!!!")
	b.Collector.Ack(t)
}

// ExclamationTopology wires storm-starter's ExclamationTopology: the
// spout "word" (words on field word) to "exclaim1" (3 tasks, shuffle) to
// "exclaim2" (2 tasks, shuffle), so each word comes out with six "!".
func ExclamationTopology(words func() gale.Spout) *gale.TopologyBuilder {
	b := gale.NewTopologyBuilder()
	b.SetSpout("word", words, 10)
	b.SetBolt("exclaim1", func() gale.Bolt { return &ExclamationBolt{} }, 3).ShuffleGrouping("word")
	b.SetBolt("exclaim2", func() gale.Bolt { return &ExclamationBolt{} }, 2).ShuffleGrouping("exclaim1")
	return b
}
