// Command readme is the program shown in the README (a test checks that
// the README shows this file): a topology handed to Gale's command line,
// so that `go run ./examples/readme run wordcount` runs it.
package main

import (
	"os"
	"strings"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galecli"
)

// Split is a bolt: it emits each word anchored on the sentence, then acks it.
type Split struct{ gale.BaseBolt }

func (*Split) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word") }

func (s *Split) Execute(t *gale.Tuple) {
	for _, w := range strings.Fields(t.GetString(0)) {
		s.Collector.Emit(t, w) // anchored on t: part of t's tuple tree
	}
	s.Collector.Ack(t)
}

// Count is a basic bolt: its input is acked when Execute returns nil, failed
// when it returns an error.
type Count struct {
	gale.BaseBasicBolt
	counts map[string]int
}

func (*Count) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word", "count") }

func (c *Count) Execute(t *gale.Tuple, out *gale.BasicCollector) error {
	w := t.GetStringByField("word")
	c.counts[w]++
	_, err := out.Emit(w, c.counts[w])
	return err
}

// Sentences is a spout. Emitting with a message id makes the tuple reliable:
// Ack or Fail is called with that id once its tree completes or fails.
type Sentences struct {
	gale.BaseSpout
	next int
}

func (*Sentences) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("sentence") }

func (s *Sentences) NextTuple() {
	s.next++
	s.Collector.Emit(s.next, "the cow jumped over the moon")
}

func (s *Sentences) Fail(msgID any, reason error) {
	// reason is a *gale.FailedError (which bolt, which error) or wraps
	// gale.ErrTimeout; replay msgID here if the source cannot.
}

func main() {
	os.Exit(galecli.Main(galecli.Topology{
		Name:  "wordcount",
		Short: "sentences → split → count",
		Build: build,
	}))
}

// build makes the topology and its config; params come from run -p KEY=VALUE.
func build(params map[string]string) (*gale.Topology, gale.Config, error) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("sentences", func() gale.Spout { return &Sentences{} }, 1)
	b.SetBolt("split", func() gale.Bolt { return &Split{} }, 4).ShuffleGrouping("sentences")
	b.SetBasicBolt("count", func() gale.BasicBolt { return &Count{counts: map[string]int{}} }, 4).
		FieldsGrouping("split", "word")
	topo, err := b.Build() // every error names the component, stream or field at fault
	conf := gale.Config{gale.TopologyMessageTimeoutSecs: 30, gale.TopologyMaxSpoutPending: 5000}
	return topo, conf, err
}
