package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/examples/wordcount"
	"github.com/gale-stream/gale/internal/bridge"
)

// TestDefinitionGroupings: the definition a submit sends names each
// input's grouping by Storm's name, with a fields grouping's fields.
func TestDefinitionGroupings(t *testing.T) {
	b := gale.NewTopologyBuilder()
	split := func() gale.Bolt { return &wordcount.SplitSentence{} }
	b.SetSpout("src", func() gale.Spout { return &wordcount.SentenceSpout{Sentences: wordcount.Text} }, 1)
	b.SetBolt("shuffled", split, 1).ShuffleGrouping("src")
	b.SetBasicBolt("byword", func() gale.BasicBolt { return &wordcount.WordCount{} }, 2).FieldsGrouping("shuffled", "word")
	b.SetBolt("local", split, 1).LocalOrShuffleGrouping("src")
	b.SetBolt("one", split, 1).GlobalGrouping("src").AllGrouping("shuffled")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pt, err := bridge.PlanTopology(topo, nil, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	d := definitionOf(pt, "test", nil, 1)
	type in struct{ component, stream, grouping, fields string }
	got := map[string][]in{}
	for _, c := range d.GetComponents() {
		for _, i := range c.GetInputs() {
			got[c.GetId()] = append(got[c.GetId()], in{i.GetComponent(), i.GetStream(), i.GetGrouping(), strings.Join(i.GetFields(), ",")})
		}
	}
	want := map[string][]in{
		"shuffled": {{"src", "default", "shuffle", ""}},
		"byword":   {{"shuffled", "default", "fields", "word"}},
		"local":    {{"src", "default", "local-or-shuffle", ""}},
		"one":      {{"src", "default", "global", ""}, {"shuffled", "default", "all", ""}},
	}
	for id, w := range want {
		if !slices.Equal(got[id], w) {
			t.Errorf("component %s's inputs: got %+v, want %+v", id, got[id], w)
		}
	}
}
