package kafka

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

// TestDecode: the decoding bolt counts each event's id, forwards the id
// as the key and the JSON as the value, acks what it decoded and fails
// what is not an event as permanent (retrying cannot help).
func TestDecode(t *testing.T) {
	tally := NewTally(3)
	b := gale.NewTopologyBuilder()
	b.SetSpout("in", func() gale.Spout { return &galetest.FixedSpout{Fields: []string{"key", "value"}} }, 1)
	b.SetBolt("decode", func() gale.Bolt { return &Decode{Field: "value", Tally: tally, Forward: true} }, 1).ShuffleGrouping("in")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := galetest.Complete(context.Background(), topo, galetest.Options{Sources: map[string][]gale.Values{"in": {
		{[]byte("0"), AppendEvent(nil, 0)},
		{[]byte("x"), []byte("not json")},
		{[]byte("2"), AppendEvent(nil, 2)},
		{[]byte("y"), "a string"},
		{[]byte("z"), 42},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Acked("in"); !slices.Equal(got, []any{0, 2}) {
		t.Errorf("acked %v, want [0 2]", got)
	}
	fails := r.Failed("in")
	if len(fails) != 3 {
		t.Fatalf("failed %+v, want messages 1, 3 and 4", fails)
	}
	for _, f := range fails {
		if c, _ := gale.ClassOf(f.Reason); c != gale.ClassPermanent {
			t.Errorf("message %v failed as %s (%v), want permanent", f.MsgID, c, f.Reason)
		}
	}
	var keys []string
	for _, v := range r.Emitted("decode") {
		keys = append(keys, string(v[0].([]byte)))
	}
	if !slices.Equal(keys, []string{"0", "2"}) {
		t.Errorf("forwarded keys %q, want 0 and 2", keys)
	}
	if tally.Distinct() != 2 || tally.Lost() != 1 || tally.Duplicates() != 0 {
		t.Errorf("tally: distinct %d, lost %d, duplicates %d; want 2, 1 (id 1 was never sent), 0", tally.Distinct(), tally.Lost(), tally.Duplicates())
	}
}

// TestBuildParams: bench-kafka names a parameter it does not know, or
// one missing or malformed, and builds spout → decode → sink otherwise.
func TestBuildParams(t *testing.T) {
	good := map[string]string{"brokers": "127.0.0.1:9092", "topic": "in", "group": "g", "output": "out"}
	if topo, _, err := Build(good); err != nil || topo == nil {
		t.Fatalf("Build(%v): %v", good, err)
	}
	for _, tc := range []struct {
		name   string
		change map[string]string
		want   []string
	}{
		{"unknown", map[string]string{"colour": "red"}, []string{`unknown parameter "colour"`, "brokers, decoders, group"}},
		{"missing", map[string]string{"output": ""}, []string{"parameter output is required"}},
		{"not a number", map[string]string{"spouts": "two", "sinks": "0"}, []string{`parameter spouts: want a whole number ≥ 1, got "two"`, `parameter sinks: want a whole number ≥ 1, got "0"`}},
		{"guarantee", map[string]string{"guarantee": "sometimes"}, []string{"processing.guarantee"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := map[string]string{}
			for k, v := range good {
				p[k] = v
			}
			for k, v := range tc.change {
				if v == "" {
					delete(p, k)
				} else {
					p[k] = v
				}
			}
			_, _, err := Build(p)
			if err == nil {
				t.Fatalf("Build(%v): no error", p)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
