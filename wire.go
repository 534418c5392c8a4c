package gale

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/gale-stream/gale/internal/codec"
)

// Tuples bound for another worker travel in the payload of a data frame
// (internal/transport) as a count and then, per tuple:
//
//	uvarint  destination task
//	uvarint  stream: its number in wireStreams, the same in every worker
//	uvarint  source task
//	uvarint  anchors n, then n × (root, edge) as 8-byte little-endian pairs:
//	         the trees the tuple belongs to (none when acking is off)
//	values   the codec's value list (internal/codec)
//
// Field names, component and stream ids never travel: both ends built
// the same topology definition.

// wireStream is one declared stream as the wire numbers it.
type wireStream struct {
	info *streamInfo // task unset
	comp *compInfo
}

// errWire is wrapped by every error about a data payload's bytes.
var errWire = errors.New("gale: malformed tuple batch")

// appendWireTuple appends t, bound for task, to dst.
func (rt *runtime) appendWireTuple(dst []byte, task int32, t *Tuple) ([]byte, error) {
	dst = binary.AppendUvarint(dst, uint64(task))
	dst = binary.AppendUvarint(dst, uint64(t.src.wireID))
	dst = binary.AppendUvarint(dst, uint64(t.src.task))
	more := t.morePairs()
	switch {
	case t.treeRoot() == 0:
		dst = append(dst, 0)
	default:
		dst = binary.AppendUvarint(dst, uint64(1+len(more)))
		dst = binary.LittleEndian.AppendUint64(dst, t.treeRoot())
		dst = binary.LittleEndian.AppendUint64(dst, t.edge)
		for _, p := range more {
			dst = binary.LittleEndian.AppendUint64(dst, p.root)
			dst = binary.LittleEndian.AppendUint64(dst, p.edge)
		}
	}
	return rt.topo.types.AppendValues(dst, t.Values())
}

// wireDecoder turns data payloads back into tuples. It belongs to one
// goroutine (a connection's reader).
type wireDecoder struct {
	rt      *runtime
	infos   [][]*streamInfo // by wireID, then source task - the component's first
	vals    []any           // scratch
	anchors []anchorPair    // scratch
	strs    codec.Interner  // words repeat: decode each once
	slab    tupleSlab       // tuples, recycled ones first
}

func newWireDecoder(rt *runtime) *wireDecoder {
	return &wireDecoder{rt: rt, infos: make([][]*streamInfo, len(rt.wireStreams)),
		slab: tupleSlab{pool: rt.freeTuples, empties: rt.emptyChunks}}
}

// decode reads one tuple from b, returning its destination task, the
// tuple, and the bytes consumed. Every number is checked against the
// topology: a stream it does not have, a source task outside the
// component's, a destination task outside the topology's, the wrong
// number of values.
func (d *wireDecoder) decode(b []byte) (task int32, t *Tuple, n int, err error) {
	off := 0
	bad := func(format string, args ...any) (int32, *Tuple, int, error) {
		return 0, nil, 0, fmt.Errorf("%w at byte %d: %s", errWire, off, fmt.Sprintf(format, args...))
	}
	uv := func() (uint64, bool) { return uvarintAt(b, &off) }
	dst, ok := uv()
	if !ok || dst >= uint64(len(d.rt.taskExec)) {
		return bad("destination task %d: the topology has tasks 0 to %d", dst, len(d.rt.taskExec)-1)
	}
	sid, ok := uv()
	if !ok || sid >= uint64(len(d.rt.wireStreams)) {
		return bad("stream %d: the topology declares %d streams", sid, len(d.rt.wireStreams))
	}
	ws := d.rt.wireStreams[sid]
	src, ok := uv()
	if !ok || src < uint64(ws.comp.firstTask) || src >= uint64(ws.comp.firstTask+ws.comp.numTasks) {
		return bad("source task %d is not a task of %q", src, ws.comp.id)
	}
	na, ok := uv()
	if !ok || na > uint64(len(b)-off)/16 {
		return bad("%d anchors in %d bytes", na, len(b)-off)
	}
	d.anchors = d.anchors[:0]
	for i := range int(na) {
		root := binary.LittleEndian.Uint64(b[off:])
		edge := binary.LittleEndian.Uint64(b[off+8:])
		off += 16
		if root == 0 || root&doneBit != 0 {
			return bad("anchor %d has an invalid root %#x", i, root)
		}
		if _, ok := d.rt.treeExec(root); !ok {
			return bad("anchor %d's root %#x names task %d, which is not a spout task", i, root, rootTask(root))
		}
		d.anchors = append(d.anchors, anchorPair{root, edge})
	}
	vals, k, err := d.rt.topo.types.DecodeValuesInterned(b[off:], d.vals[:0], &d.strs)
	if err != nil {
		return bad("values of a tuple on %s:%s: %v", ws.info.component, ws.info.stream, err)
	}
	d.vals = vals
	off += k
	if len(vals) != len(ws.info.fields) {
		clear(vals)
		return bad("%d values on %s:%s, which declares %d fields", len(vals), ws.info.component, ws.info.stream, len(ws.info.fields))
	}
	byTask := d.infos[sid]
	if byTask == nil {
		byTask = make([]*streamInfo, ws.comp.numTasks)
		d.infos[sid] = byTask
	}
	si := byTask[src-uint64(ws.comp.firstTask)]
	if si == nil {
		c := *ws.info
		c.task = int32(src)
		si = &c
		byTask[src-uint64(ws.comp.firstTask)] = si
	}
	t = d.slab.get()
	t.src = si
	t.setValues(vals) // before the anchors: it may replace t.x
	clear(vals)
	for _, p := range d.anchors {
		t.addPair(p.root, p.edge)
	}
	return int32(dst), t, off, nil
}

// Tree messages bound for another worker travel in a data frame of their
// own kind, per message:
//
//	uvarint  destination executor (a spout executor: both ends number
//	         executors the same way)
//	byte     kind (msgAck, msgFail, msgReset)
//	8 bytes  root, little endian (it names the spout task: tree.go)
//	8 bytes  val, little endian
//	for msgFail, the reason: uvarint length + failing component, uvarint
//	task, uvarint length + the error's message, byte failure class,
//	uvarint delay in milliseconds (ClassDelayable)
//
// A bolt's error crosses as its message and class: the spout gets a
// *FailedError whose Err is a *RemoteError, wrapped in a *ClassError when
// the bolt classified it, so errors.Is on the original cannot match but
// ClassOf gives the class the bolt chose.

// RemoteError is a bolt's error as it reaches a spout in another worker:
// its message only.
type RemoteError struct{ Message string }

func (e *RemoteError) Error() string { return e.Message }

// maxWireDelayMS bounds a delayable failure's delay on the wire (a year).
const maxWireDelayMS = 365 * 24 * 3600 * 1000

// maxWireString bounds a component id or error message in a tree message.
const maxWireString = 64 << 10

func (rt *runtime) appendWireAck(dst []byte, exec int, m *ackMsg) []byte {
	dst = binary.AppendUvarint(dst, uint64(exec))
	dst = append(dst, m.kind)
	dst = binary.LittleEndian.AppendUint64(dst, m.root)
	dst = binary.LittleEndian.AppendUint64(dst, m.val)
	if m.kind == msgFail {
		var fe *FailedError
		if !errors.As(m.reason, &fe) {
			fe = &FailedError{Err: m.reason}
		}
		msg := ""
		if fe.Err != nil {
			msg = fe.Err.Error()
		}
		msg = msg[:min(len(msg), maxWireString)]
		dst = binary.AppendUvarint(dst, uint64(len(fe.Component)))
		dst = append(dst, fe.Component...)
		dst = binary.AppendUvarint(dst, uint64(fe.Task))
		dst = binary.AppendUvarint(dst, uint64(len(msg)))
		dst = append(dst, msg...)
		class, after := ClassOf(fe.Err)
		dst = append(dst, byte(class))
		dst = binary.AppendUvarint(dst, uint64(after/time.Millisecond))
	}
	return dst
}

// decodeAck reads one tree message from b, returning its destination
// executor, the message and the bytes consumed.
func (d *wireDecoder) decodeAck(b []byte) (exec int, m ackMsg, n int, err error) {
	off := 0
	bad := func(format string, args ...any) (int, ackMsg, int, error) {
		return 0, ackMsg{}, 0, fmt.Errorf("%w at byte %d: tree message: %s", errWire, off, fmt.Sprintf(format, args...))
	}
	uv := func() (uint64, bool) { return uvarintAt(b, &off) }
	str := func() (string, bool) {
		l, ok := uv()
		if !ok || l > maxWireString || l > uint64(len(b)-off) {
			return "", false
		}
		s := string(b[off : off+int(l)])
		off += int(l)
		return s, true
	}
	x, ok := uv()
	if !ok || x >= uint64(len(d.rt.execs)) {
		return bad("destination executor %d: the topology has %d", x, len(d.rt.execs))
	}
	if off >= len(b) {
		return bad("truncated before the kind")
	}
	m.kind = b[off]
	off++
	if m.kind < msgAck || m.kind > msgReset {
		return bad("unknown kind %d", m.kind)
	}
	if len(b)-off < 16 {
		return bad("truncated in the root and value")
	}
	m.root = binary.LittleEndian.Uint64(b[off:])
	m.val = binary.LittleEndian.Uint64(b[off+8:])
	off += 16
	if m.root == 0 || m.root&doneBit != 0 {
		return bad("invalid root %#x", m.root)
	}
	if m.kind == msgFail {
		comp, ok1 := str()
		ftask, ok2 := uv()
		msg, ok3 := str()
		if !ok1 || !ok2 || !ok3 || ftask > uint64(len(d.rt.taskExec)) {
			return bad("bad failure reason")
		}
		if off >= len(b) {
			return bad("truncated before the failure class")
		}
		class := FailureClass(b[off])
		off++
		afterMS, ok4 := uv()
		if !ok4 || class > ClassPermanent || afterMS > maxWireDelayMS {
			return bad("bad failure class %d or delay", class)
		}
		fe := &FailedError{Component: comp, Task: int(ftask)}
		if msg != "" {
			fe.Err = &RemoteError{Message: msg}
		}
		if class != ClassTransient {
			fe.Err = &ClassError{Class: class, After: time.Duration(afterMS) * time.Millisecond, Err: fe.Err}
		}
		m.reason = fe
	}
	return int(x), m, off, nil
}

// uvarintAt reads a uvarint from b at *off and advances *off past it.
func uvarintAt(b []byte, off *int) (uint64, bool) {
	v, k := binary.Uvarint(b[*off:])
	if k <= 0 {
		return 0, false
	}
	*off += k
	return v, true
}

// A data frame's payload starts with what it carries: a batch of tuples
// for one task, or a batch of tree messages for one spout executor; then a
// uvarint count and the items as above.
const (
	wireTuples byte = 1
	wireAcks   byte = 2
)

// appendTupleFrame appends the payload of a data frame carrying b.
func (rt *runtime) appendTupleFrame(dst []byte, b *batch) ([]byte, error) {
	dst = append(dst, wireTuples)
	dst = binary.AppendUvarint(dst, uint64(len(b.tuples)))
	var err error
	for _, t := range b.tuples {
		if dst, err = rt.appendWireTuple(dst, b.task, t); err != nil {
			return dst, fmt.Errorf("a tuple on %s:%s: %w", t.src.component, t.src.stream, err)
		}
	}
	return dst, nil
}

// appendAckFrame appends the payload of a data frame carrying b, for
// executor exec.
func (rt *runtime) appendAckFrame(dst []byte, exec int, b *ackBatch) []byte {
	dst = append(dst, wireAcks)
	dst = binary.AppendUvarint(dst, uint64(len(b.msgs)))
	for i := range b.msgs {
		dst = rt.appendWireAck(dst, exec, &b.msgs[i])
	}
	return dst
}

// decodeBatch reads a tuple batch (after the kind byte) into b and returns
// its task: every tuple must be for the same one.
func (d *wireDecoder) decodeBatch(p []byte, b *batch) (int32, error) {
	off := 0
	n, ok := uvarintAt(p, &off)
	if !ok || n == 0 || n > uint64(len(p)-off) {
		return 0, fmt.Errorf("%w: a batch of %d tuples in %d bytes", errWire, n, len(p))
	}
	task := int32(-1)
	for i := range int(n) {
		dst, t, k, err := d.decode(p[off:])
		if err != nil {
			return 0, fmt.Errorf("tuple %d of %d: %w", i, n, err)
		}
		if task >= 0 && dst != task {
			return 0, fmt.Errorf("%w: tuple %d of a batch for task %d is for task %d", errWire, i, task, dst)
		}
		if dst == 0 {
			return 0, fmt.Errorf("%w: tuple %d is for task 0", errWire, i)
		}
		task = dst
		off += k
		b.tuples = append(b.tuples, t)
	}
	if off != len(p) {
		return 0, fmt.Errorf("%w: %d bytes after a batch of %d tuples", errWire, len(p)-off, n)
	}
	b.task = task
	return task, nil
}

// decodeAckBatch reads a tree message batch (after the kind byte) into b
// and returns its executor: every message must be for the same one.
func (d *wireDecoder) decodeAckBatch(p []byte, b *ackBatch) (int, error) {
	off := 0
	n, ok := uvarintAt(p, &off)
	if !ok || n == 0 || n > uint64(len(p)-off) {
		return 0, fmt.Errorf("%w: a batch of %d tree messages in %d bytes", errWire, n, len(p))
	}
	exec := -1
	for i := range int(n) {
		x, m, k, err := d.decodeAck(p[off:])
		if err != nil {
			return 0, fmt.Errorf("message %d of %d: %w", i, n, err)
		}
		if exec >= 0 && x != exec {
			return 0, fmt.Errorf("%w: message %d of a batch for executor %d is for executor %d", errWire, i, exec, x)
		}
		exec = x
		off += k
		b.msgs = append(b.msgs, m)
	}
	if off != len(p) {
		return 0, fmt.Errorf("%w: %d bytes after a batch of %d tree messages", errWire, len(p)-off, n)
	}
	return exec, nil
}
