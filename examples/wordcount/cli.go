package wordcount

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gale-stream/gale"
)

// Text is the verse Build's spout recites, one sentence a line.
var Text = strings.Split(strings.TrimSpace(`
the cow jumped over the moon
an apple a day keeps the doctor away
four score and seven years ago
snow white and the seven dwarfs
i am at two with nature`), "\n")

// Build builds the word count for `gale run wordcount`: a spout that
// recites Text over and over, each sentence reliable (replayed when its
// tree fails), split into words and counted. Parameters: splitters and
// counters, the parallelism of the two bolts (default 2 each).
func Build(params map[string]string) (*gale.Topology, gale.Config, error) {
	par := map[string]int{"splitters": 2, "counters": 2}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		if _, ok := par[k]; !ok {
			return nil, nil, fmt.Errorf("unknown parameter %q (wordcount takes %s)", k, strings.Join(slices.Sorted(maps.Keys(par)), ", "))
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, nil, fmt.Errorf("parameter %s: want a whole number ≥ 1, got %q", k, v)
		}
		par[k] = n
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout("sentences", func() gale.Spout { return &SentenceSpout{Sentences: Text, Loop: true} }, 1)
	b.SetBolt("split", func() gale.Bolt { return &SplitSentence{} }, par["splitters"]).ShuffleGrouping("sentences")
	b.SetBasicBolt("count", func() gale.BasicBolt { return &WordCount{} }, par["counters"]).FieldsGrouping("split", "word")
	topo, err := b.Build()
	return topo, nil, err
}
