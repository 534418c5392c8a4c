package galetest_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

// splitter splits a sentence read by field, emits each word anchored on
// the input and acks it; an empty sentence is failed.
type splitter struct{ gale.BaseBolt }

var errEmpty = errors.New("empty sentence")

func (*splitter) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("word") }

func (s *splitter) Execute(t *gale.Tuple) {
	if t.IsTick() {
		s.Collector.EmitStream("ticks", nil)
		return
	}
	words := strings.Fields(t.GetStringByField("sentence"))
	if len(words) == 0 {
		s.Collector.Fail(t, errEmpty)
		return
	}
	for _, w := range words {
		s.Collector.Emit(t, w)
	}
	s.Collector.Ack(t)
}

// TestBoltHarnessRecords: a bolt executed on mock tuples has its emits
// (with their anchors), acks and fails recorded, reads values by field,
// and tells mock ticks from other tuples.
func TestBoltHarnessRecords(t *testing.T) {
	h, err := galetest.NewBoltHarness(&splitter{}, galetest.HarnessOptions{Component: "split"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Cleanup()
	if got := h.Context().ComponentID(); got != "split" {
		t.Errorf("ComponentID %q, want split", got)
	}
	in := galetest.TupleWithFields("spout", gale.DefaultStream, []string{"sentence"}, "a b")
	h.Execute(in)
	emits := h.Emits()
	if len(emits) != 2 {
		t.Fatalf("emits %+v, want 2", emits)
	}
	for i, w := range []string{"a", "b"} {
		e := emits[i]
		if e.Stream != gale.DefaultStream || !slices.Equal(e.Values, gale.Values{w}) || len(e.Anchors) != 1 || e.Anchors[0] != in {
			t.Errorf("emit %d: %+v, want %q on default anchored on the input", i, e, w)
		}
	}
	if got := h.Acked(); len(got) != 1 || got[0] != in {
		t.Errorf("acked %v, want the input", got)
	}
	empty := galetest.TupleWithFields("spout", gale.DefaultStream, []string{"sentence"}, " ")
	h.Execute(empty)
	if f := h.Failed(); len(f) != 1 || f[0].Tuple != empty || !errors.Is(f[0].Err, errEmpty) {
		t.Errorf("failed %+v, want the empty sentence with errEmpty", f)
	}
	h.Reset()
	tick := galetest.Tick()
	if !tick.IsTick() || tick.SourceComponent() != gale.SystemComponent || tick.SourceStream() != gale.TickStream {
		t.Errorf("Tick: IsTick %v from %s:%s, want a tick from %s:%s", tick.IsTick(), tick.SourceComponent(), tick.SourceStream(), gale.SystemComponent, gale.TickStream)
	}
	if galetest.Tuple(gale.SystemComponent, gale.TickStream, 1).IsTick() {
		t.Error("Tuple from __system:__tick is a tick; only Tick's are")
	}
	h.Execute(tick)
	// The bolt emitted on a stream it does not declare: rejected, and
	// recorded as an error.
	if errs := h.Errors(); len(errs) != 1 || !errors.Is(errs[0].Err, gale.ErrUndeclaredStream) {
		t.Errorf("errors %v, want one ErrUndeclaredStream", errs)
	}
	if n := len(h.Emits()) + len(h.Acked()); n != 0 {
		t.Errorf("%d emits and acks on a tick, want none", n)
	}
	if v := galetest.Tuple("c", "s", 1, "x"); v.GetInt(0) != 1 || v.GetString(1) != "x" || v.SourceComponent() != "c" || v.SourceStream() != "s" {
		t.Errorf("Tuple: %v", v)
	}
}

// upper is a BasicBolt: its emits are anchored on the input and the input
// acked by the runtime.
type upper struct{ gale.BaseBasicBolt }

func (upper) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("w") }
func (upper) Execute(t *gale.Tuple, c *gale.BasicCollector) error {
	_, err := c.Emit(strings.ToUpper(t.GetString(0)))
	return err
}

// TestBoltHarnessBasicBolt: a BasicBolt runs under the harness with its
// automatic anchoring and acking, and the tick frequency set in the config
// is what Tick delivers.
func TestBoltHarnessBasicBolt(t *testing.T) {
	h, err := galetest.NewBoltHarness(upper{}, galetest.HarnessOptions{Config: gale.Config{gale.TopologyTickTupleFreqSecs: 7}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Cleanup()
	in := galetest.Tuple("s", gale.DefaultStream, "go")
	h.Execute(in)
	if e := h.Emits(); len(e) != 1 || e[0].Values[0] != "GO" || len(e[0].Anchors) != 1 || e[0].Anchors[0] != in {
		t.Errorf("emits %+v, want GO anchored on the input", e)
	}
	if a := h.Acked(); len(a) != 1 || a[0] != in {
		t.Errorf("acked %v, want the input", a)
	}
	var secs any
	h2, err := galetest.NewBoltHarness(&bolt{execute: func(b *bolt, in *gale.Tuple) { secs = in.Value(0) }},
		galetest.HarnessOptions{Config: gale.Config{gale.TopologyTickTupleFreqSecs: 7}})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Cleanup()
	h2.Tick()
	if secs != 7 {
		t.Errorf("tick carried %v, want 7", secs)
	}
	if h2.Interactions() != 0 {
		t.Errorf("%d interactions on a tick the bolt ignores, want 0", h2.Interactions())
	}
}
