package gale

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

type wirePoint struct{ X, Y int }

type wirePointCodec struct{}

func (wirePointCodec) Append(dst []byte, v any) ([]byte, error) {
	p := v.(wirePoint)
	return append(dst, byte(p.X), byte(p.Y)), nil
}

func (wirePointCodec) Decode(b []byte) (any, error) {
	if len(b) != 2 {
		return nil, errors.New("want 2 bytes")
	}
	return wirePoint{int(b[0]), int(b[1])}, nil
}

// wireRuntime lays out a topology with streams of one, two and three
// fields and a registered type, without starting it.
func wireRuntime(t testing.TB) *runtime {
	t.Helper()
	tb := NewTopologyBuilder()
	tb.RegisterType(reflect.TypeFor[wirePoint](), "wire.Point", wirePointCodec{})
	tb.SetSpout("s", func() Spout { return &benchSpout{} }, 2)
	tb.SetBolt("split", func() Bolt { return &wideBolt{} }, 3).ShuffleGrouping("s")
	tb.SetBolt("count", func() Bolt { return &benchBolt{} }, 2).ShuffleGrouping("split").Grouping("split", "wide", Shuffle())
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := newRuntime("wire", topo, nil, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

type wideBolt struct{ BaseBolt }

func (*wideBolt) DeclareOutputFields(d OutputDeclarer) {
	d.Declare("word", "n")
	d.DeclareStream("wide", "a", "b", "c")
}
func (*wideBolt) Execute(*Tuple) {}

// wireTuple makes a tuple as comp's idx-th task emits it on stream.
func wireTuple(rt *runtime, comp, stream string, idx int, vals []any, pairs ...anchorPair) *Tuple {
	si := *rt.comps[comp].streams[stream]
	si.task = int32(rt.comps[comp].firstTask + idx)
	t := &Tuple{src: &si}
	t.setValues(vals)
	for _, p := range pairs {
		t.addPair(p.root, p.edge)
	}
	return t
}

func TestWireTupleRoundTrip(t *testing.T) {
	rt := wireRuntime(t)
	split := rt.comps["split"].firstTask
	when := time.Date(2026, 11, 30, 5, 0, 0, 123, time.UTC)
	type sent struct {
		task int32
		t    *Tuple
	}
	in := []sent{
		{int32(split), wireTuple(rt, "s", DefaultStream, 1, []any{"the cow jumped"}, anchorPair{sRoot(rt, 0x34), 0x99})},
		{int32(split + 2), wireTuple(rt, "s", DefaultStream, 0, []any{"unanchored"})},
		{int32(rt.comps["count"].firstTask + 1), wireTuple(rt, "split", DefaultStream, 1, []any{"cow", int64(3)},
			anchorPair{sRoot(rt, 0x34), 0x5}, anchorPair{sRoot(rt, 0x77), 0x6}, anchorPair{sRoot(rt, 0x88), 0x7})},
		{int32(rt.comps["count"].firstTask), wireTuple(rt, "split", "wide", 0, []any{wirePoint{3, 4}, when, []any{nil, true, 2.5}},
			anchorPair{sRoot(rt, 0x43), 0x1}, anchorPair{sRoot(rt, 0x55), 0x2})},
	}
	var buf []byte
	for _, s := range in {
		var err error
		if buf, err = rt.appendWireTuple(buf, s.task, s.t); err != nil {
			t.Fatal(err)
		}
	}
	d := newWireDecoder(rt)
	for i, s := range in {
		task, got, n, err := d.decode(buf)
		if err != nil {
			t.Fatalf("tuple %d: %v", i, err)
		}
		buf = buf[n:]
		want := s.t
		if task != s.task || got.SourceComponent() != want.SourceComponent() || got.SourceStream() != want.SourceStream() ||
			got.SourceTask() != want.SourceTask() || !slices.Equal(got.Fields(), want.Fields()) {
			t.Errorf("tuple %d: to task %d from %s:%s task %d, want task %d from %s:%s task %d", i,
				task, got.SourceComponent(), got.SourceStream(), got.SourceTask(),
				s.task, want.SourceComponent(), want.SourceStream(), want.SourceTask())
		}
		if !reflect.DeepEqual(got.Values(), want.Values()) {
			t.Errorf("tuple %d: values %v, want %v", i, got.Values(), want.Values())
		}
		pairs := func(t *Tuple) []anchorPair {
			if t.treeRoot() == 0 {
				return nil
			}
			return append([]anchorPair{{t.treeRoot(), t.edge}}, t.morePairs()...)
		}
		if !reflect.DeepEqual(pairs(got), pairs(want)) {
			t.Errorf("tuple %d: trees %x, want %x", i, pairs(got), pairs(want))
		}
	}
	if len(buf) != 0 {
		t.Errorf("%d bytes left over", len(buf))
	}
}

func TestWireDecodeRejects(t *testing.T) {
	rt := wireRuntime(t)
	good, err := rt.appendWireTuple(nil, 2, wireTuple(rt, "s", DefaultStream, 1, []any{"x"}, anchorPair{sRoot(rt, 0x34), 0x99}))
	if err != nil {
		t.Fatal(err)
	}
	// Every truncation is an error, never a panic.
	for n := range len(good) {
		if _, _, _, err := newWireDecoder(rt).decode(good[:n]); !errors.Is(err, errWire) {
			t.Errorf("decode of the first %d of %d bytes: %v, want errWire", n, len(good), err)
		}
	}
	enc := func(task int32, tu *Tuple) []byte {
		b, err := rt.appendWireTuple(nil, task, tu)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tasks := int32(len(rt.taskExec))
	streams := uint32(len(rt.wireStreams))
	otherStream := wireTuple(rt, "s", DefaultStream, 0, []any{"x"})
	otherStream.src.wireID = streams
	notItsTask := wireTuple(rt, "s", DefaultStream, 0, []any{"x"})
	notItsTask.src.task = int32(rt.comps["split"].firstTask)
	doneRoot := wireTuple(rt, "s", DefaultStream, 0, []any{"x"}, anchorPair{sRoot(rt, 0x34), 1})
	doneRoot.root |= doneBit
	// On the spout's stream, which declares one field, two values.
	arity := binary.AppendUvarint(nil, 2)
	arity = binary.AppendUvarint(arity, uint64(rt.comps["s"].streams[DefaultStream].wireID))
	arity = binary.AppendUvarint(arity, uint64(rt.comps["s"].firstTask))
	arity = append(arity, 0)
	if arity, err = rt.topo.types.AppendValues(arity, []any{"x", 1}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		b    []byte
		want string
	}{
		{"destination outside the topology", enc(tasks, wireTuple(rt, "s", DefaultStream, 0, []any{"x"})), "destination task"},
		{"unknown stream", enc(2, otherStream), "declares"},
		{"source task of another component", enc(2, notItsTask), `is not a task of "s"`},
		{"wrong number of values", arity, "which declares 1 fields"},
		{"hostile anchor count", append(good[:3:3], 0xff, 0xff, 0xff, 0x0f), "anchors in"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := newWireDecoder(rt).decode(tt.b)
			if !errors.Is(err, errWire) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("decode: %v, want errWire saying %q", err, tt.want)
			}
		})
	}
	// The done bit travels with the root id, so a done root is refused.
	if _, _, _, err := newWireDecoder(rt).decode(enc(2, doneRoot)); err != nil {
		// appendWireTuple sends treeRoot(), without the done bit: fine.
		t.Errorf("a done tuple's root should be sent without the done bit: %v", err)
	}
}

func FuzzWireDecode(f *testing.F) {
	rt := wireRuntime(f)
	for _, tu := range []*Tuple{
		wireTuple(rt, "s", DefaultStream, 1, []any{"the cow"}, anchorPair{sRoot(rt, 0x34), 0x99}),
		wireTuple(rt, "split", "wide", 0, []any{wirePoint{1, 2}, "b", 3}, anchorPair{1, 2}, anchorPair{3, 4}),
	} {
		b, err := rt.appendWireTuple(nil, 2, tu)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := newWireDecoder(rt)
		for len(b) > 0 {
			task, tu, n, err := d.decode(b)
			if err != nil {
				return
			}
			if n <= 0 || n > len(b) {
				t.Fatalf("consumed %d of %d bytes", n, len(b))
			}
			// What decodes re-encodes and decodes to the same tuple.
			re, err := rt.appendWireTuple(nil, task, tu)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			// Compared as bytes: a NaN is not equal to itself.
			task2, tu2, _, err := newWireDecoder(rt).decode(re)
			if err != nil || task2 != task {
				t.Fatalf("re-decode: task %d, %v; want task %d", task2, err, task)
			}
			if re2, err := rt.appendWireTuple(nil, task2, tu2); err != nil || !bytes.Equal(re2, re) {
				t.Fatalf("re-encoding differs: %x, then %x (%v)", re, re2, err)
			}
			b = b[n:]
		}
	})
}

func TestWireAckRoundTrip(t *testing.T) {
	rt := wireRuntime(t)
	spoutTask := int32(rt.comps["s"].firstTask + 1)
	boltTask := int32(rt.comps["split"].firstTask + 2)
	spoutExec := rt.taskExec[spoutTask]
	root := makeRoot(spoutTask, 77, 0x1fffff)
	in := []struct {
		exec int
		m    ackMsg
	}{
		{spoutExec, ackMsg{kind: msgAck, root: root, val: 0x99}},
		{spoutExec, ackMsg{kind: msgFail, root: root,
			reason: &FailedError{Component: "split", Task: int(boltTask), Err: errors.New("no such word")}}},
		{spoutExec, ackMsg{kind: msgReset, root: root}},
		{spoutExec, ackMsg{kind: msgAck, root: makeRoot(spoutTask, maxTreesPerTask-1, 1), val: 1<<64 - 1}},
	}
	var buf []byte
	for _, x := range in {
		buf = rt.appendWireAck(buf, x.exec, &x.m)
	}
	d := newWireDecoder(rt)
	for i, x := range in {
		exec, m, n, err := d.decodeAck(buf)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		buf = buf[n:]
		want := x.m
		if exec != x.exec || m.kind != want.kind || m.root != want.root || m.val != want.val {
			t.Errorf("message %d: exec %d %+v, want exec %d %+v", i, exec, m, x.exec, want)
		}
		if want.reason == nil {
			if m.reason != nil {
				t.Errorf("message %d: reason %v, want none", i, m.reason)
			}
			continue
		}
		// The bolt's error arrives as its message, naming the bolt and task.
		if m.reason == nil || m.reason.Error() != want.reason.Error() {
			t.Errorf("message %d: reason %v, want %v", i, m.reason, want.reason)
		}
		var fe *FailedError
		if !errors.As(m.reason, &fe) || fe.Component != "split" || fe.Task != int(boltTask) {
			t.Errorf("message %d: reason %#v is not a FailedError from split task %d", i, m.reason, boltTask)
		}
	}
	if len(buf) != 0 {
		t.Errorf("%d bytes left over", len(buf))
	}
	// Every truncation is an error, never a panic.
	whole := rt.appendWireAck(nil, spoutExec, &in[1].m)
	for n := range len(whole) {
		if _, _, _, err := newWireDecoder(rt).decodeAck(whole[:n]); !errors.Is(err, errWire) {
			t.Errorf("decode of the first %d of %d bytes: %v, want errWire", n, len(whole), err)
		}
	}
}

func FuzzWireAckDecode(f *testing.F) {
	rt := wireRuntime(f)
	sp := int32(rt.comps["s"].firstTask)
	f.Add(rt.appendWireAck(nil, rt.taskExec[sp], &ackMsg{kind: msgAck, root: makeRoot(sp, 5, 9), val: 6}))
	f.Add(rt.appendWireAck(nil, rt.taskExec[sp], &ackMsg{kind: msgFail, root: makeRoot(sp, 5, 9),
		reason: &FailedError{Component: "split", Task: 3, Err: errors.New("boom")}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		exec, m, n, err := newWireDecoder(rt).decodeAck(b)
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		re := rt.appendWireAck(nil, exec, &m)
		exec2, m2, _, err := newWireDecoder(rt).decodeAck(re)
		if err != nil || exec2 != exec || m2.kind != m.kind || m2.root != m.root || m2.val != m.val ||
			fmt.Sprint(m2.reason) != fmt.Sprint(m.reason) {
			t.Fatalf("re-decode: %v, %+v vs %+v", err, m2, m)
		}
	})
}

// sRoot is the root of a tree of wireRuntime's spout s, in slot n.
func sRoot(rt *runtime, n uint32) uint64 {
	return makeRoot(int32(rt.comps["s"].firstTask), n, uint64(n)*0x9e3779b9)
}
