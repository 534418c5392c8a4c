package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/cli/clitest"
)

// TestRunDebugLogsEachEmit: with topology.debug, `gale run` logs every
// emit, as Storm's local mode does, although it logs at WARN: the emit
// lines show and no other INFO line does. Without it, none shows.
func TestRunDebugLogsEachEmit(t *testing.T) {
	t.Parallel()
	for _, debug := range []bool{true, false} {
		t.Run(fmt.Sprintf("debug %t", debug), func(t *testing.T) {
			t.Parallel()
			opts := Options{Name: "gale", Topologies: []Topology{{Name: "echo", Short: "three words", Build: func(map[string]string) (*gale.Topology, gale.Config, error) {
				b := gale.NewTopologyBuilder()
				b.SetSpout("words", func() gale.Spout { return &wordsSpout{words: []string{"apple", "banana", "cherry"}} }, 1)
				b.SetBolt("sink", func() gale.Bolt { return &ackBolt{} }, 1).ShuffleGrouping("words")
				topo, err := b.Build()
				return topo, gale.Config{gale.TopologyDebug: debug}, err
			}}}}
			var stdout, stderr clitest.SyncBuffer
			if code := Run([]string{"run", "echo", "--duration", "1s"}, &stdout, &stderr, opts); code != exitOK {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitOK, stderr.String())
			}
			var emits []string
			for _, line := range strings.Split(stderr.String(), "\n") {
				if !strings.Contains(line, "level=INFO") {
					continue
				}
				if !strings.Contains(line, "msg=emitting") {
					t.Errorf("an INFO line other than an emit's: %s", line)
					continue
				}
				emits = append(emits, line)
			}
			if !debug {
				if len(emits) > 0 {
					t.Errorf("without topology.debug, logged emits:\n%s", strings.Join(emits, "\n"))
				}
				return
			}
			if len(emits) != 3 {
				t.Fatalf("logged %d emits, want 3; stderr:\n%s", len(emits), stderr.String())
			}
			for i, w := range []string{"apple", "banana", "cherry"} {
				for _, want := range []string{"topology=echo", "component=words", "stream=default", "values=[" + w + "]"} {
					if !strings.Contains(emits[i], want) {
						t.Errorf("emit %d %q does not say %s", i, emits[i], want)
					}
				}
			}
		})
	}
}

// wordsSpout emits its words once each, each with its index as message id.
type wordsSpout struct {
	gale.BaseSpout
	words []string
	next  int
}

func (*wordsSpout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word") }
func (s *wordsSpout) NextTuple() {
	if s.next < len(s.words) {
		s.Collector.Emit(s.next, s.words[s.next])
		s.next++
	}
}

type ackBolt struct{ gale.BaseBolt }

func (*ackBolt) DeclareOutputFields(gale.OutputDeclarer) {}
func (b *ackBolt) Execute(t *gale.Tuple)                 { b.Collector.Ack(t) }
