package gale_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

// TestEmitStringIsEmit checks that EmitString, from a spout, a bolt and a
// basic bolt, emits the tuple Emit with the one string would: the same
// values, anchored and acked the same way, and serializable (the run
// encodes every tuple, as a send to another worker would).
func TestEmitStringIsEmit(t *testing.T) {
	const n = 600 // more than one chunk of boxed strings per task
	b := gale.NewTopologyBuilder()
	b.SetSpout("lines", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("line") },
			next: func(s *funcSpout) {
				if s.n < n {
					if _, err := s.Collector.EmitString(s.n, fmt.Sprintf("w%d x%d", s.n, s.n)); err != nil {
						panic(err)
					}
					s.n++
				}
			},
		}
	}, 1)
	b.SetBolt("split", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("word") },
			execute: func(b *funcBolt, t *gale.Tuple) {
				for w := range strings.FieldsSeq(t.GetString(0)) {
					if _, err := b.Collector.EmitString(t, w); err != nil {
						panic(err)
					}
				}
				b.Collector.Ack(t)
			},
		}
	}, 2).ShuffleGrouping("lines")
	b.SetBasicBolt("upper", func() gale.BasicBolt { return &upperBolt{} }, 2).FieldsGrouping("split", "word")
	topo := build(t, b)
	res := complete(t, topo, galetest.Options{Config: gale.Config{gale.TopologyTestingAlwaysTrySerialize: true}})

	if got := len(res.Acked("lines")); got != n {
		t.Fatalf("%d lines acked, want %d (failed: %v)", got, n, res.Failed("lines"))
	}
	var lines, words, uppers []string
	for _, v := range res.Emitted("lines") {
		lines = append(lines, v[0].(string))
	}
	for _, v := range res.Emitted("split") {
		words = append(words, v[0].(string))
	}
	for _, v := range res.Emitted("upper") {
		if len(v) != 1 {
			t.Fatalf("upper emitted %v, want one value", v)
		}
		uppers = append(uppers, v[0].(string))
	}
	var wantLines, wantWords, wantUppers []string
	for i := range n {
		wantLines = append(wantLines, fmt.Sprintf("w%d x%d", i, i))
		wantWords = append(wantWords, fmt.Sprint("w", i), fmt.Sprint("x", i))
		wantUppers = append(wantUppers, fmt.Sprint("W", i), fmt.Sprint("X", i))
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{{"lines", lines, wantLines}, {"words", words, wantWords}, {"upper-cased words", uppers, wantUppers}} {
		slices.Sort(c.got)
		slices.Sort(c.want)
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %d emitted, want %d (first %v)", c.what, len(c.got), len(c.want), c.got[:min(4, len(c.got))])
		}
	}
}

type upperBolt struct{ gale.BaseBasicBolt }

func (*upperBolt) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word") }
func (*upperBolt) Execute(t *gale.Tuple, c *gale.BasicCollector) error {
	_, err := c.EmitString(strings.ToUpper(t.GetString(0)))
	return err
}
