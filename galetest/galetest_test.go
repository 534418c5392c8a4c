package galetest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/examples/wordcount"
	"github.com/gale-stream/gale/galetest"
)

type dropBolt struct{ gale.BaseBolt }

func (*dropBolt) DeclareOutputFields(gale.OutputDeclarer) {}
func (*dropBolt) Execute(*gale.Tuple)                     {}

func TestTimeoutOnSimulatedClock(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", func() gale.Spout { return &galetest.FixedSpout{Fields: []string{"x"}} }, 1)
	b.SetBolt("drop", func() gale.Bolt { return &dropBolt{} }, 1).ShuffleGrouping("s")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := galetest.Complete(context.Background(), topo, galetest.Options{
		Sources: map[string][]gale.Values{"s": {{1}, {2}, {3}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := res.Failed("s")
	if len(f) != 3 {
		t.Fatalf("got %d failures, want 3", len(f))
	}
	for _, x := range f {
		if !errors.Is(x.Reason, gale.ErrTimeout) {
			t.Errorf("msg %v failed with %v, want ErrTimeout", x.MsgID, x.Reason)
		}
	}
	t.Logf("elapsed simulated %s", res.Elapsed)
}

func TestWordCountComplete(t *testing.T) {
	topo, err := wordcount.Topology(nil, 2, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := galetest.Complete(context.Background(), topo, galetest.Options{
		Sources: map[string][]gale.Values{"sentences": {{"a b a"}, {"b c"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Emitted("split"), res.Emitted("count"), res.Acked("sentences"))
}
