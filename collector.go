package gale

// SpoutCollector emits a spout task's tuples. It belongs to the task and
// must only be used from the spout's own methods (NextTuple, Ack, Fail,
// Activate, Deactivate). Emit never blocks: backpressure is applied between
// calls to NextTuple.
type SpoutCollector struct {
	task *spoutTask

	_ [56]byte // read on every emit: a cache line of its own (TestHotStructsFillCacheLines)
}

// Emit emits values on the default stream. With a non-nil msgID the tuple's
// tree is tracked and Ack or Fail is later called with msgID; with nil it
// is an unreliable (at-most-once) emit. It returns the ids of the tasks the
// tuple was sent to; the slice is reused by the next emit.
func (c *SpoutCollector) Emit(msgID any, values ...any) ([]int, error) {
	return c.task.emit(DefaultStream, msgID, -1, values)
}

// EmitString is Emit with one value, the string s: the same tuple, without
// the allocation that converting s to any costs at the call (16 bytes, a
// sizeable part of emitting a small tuple). For streams of one string
// field: lines, words, encoded records.
func (c *SpoutCollector) EmitString(msgID any, s string) ([]int, error) {
	var v [1]any
	v[0] = c.task.em.strs.Box(s)
	return c.task.emit(DefaultStream, msgID, -1, v[:])
}

// EmitStream emits values on a named stream; see Emit.
func (c *SpoutCollector) EmitStream(stream string, msgID any, values ...any) ([]int, error) {
	return c.task.emit(stream, msgID, -1, values)
}

// EmitDirect emits values on a direct stream to one task.
func (c *SpoutCollector) EmitDirect(task int, stream string, msgID any, values ...any) ([]int, error) {
	if task < 0 {
		return nil, c.task.em.negativeTask(stream, task)
	}
	return c.task.emit(stream, msgID, task, values)
}

// ReportError reports an error: logged, counted, and kept with the task
// and the time among the component's last errors, which the counters
// carry to nimbus and the UI (ComponentStats.errors).
func (c *SpoutCollector) ReportError(err error) {
	c.task.rt.reportError(c.task.em.comp.id, int(c.task.em.task), err)
	c.task.em.log.Error("reported error", "err", err)
}

// Pending is the number of this task's trees in flight.
func (c *SpoutCollector) Pending() int { return c.task.pending.len() }

// BoltCollector emits a bolt task's tuples and acks or fails its inputs. It
// belongs to the task and must only be used from the bolt's own methods.
// Emit may block while downstream queues are full (backpressure).
type BoltCollector struct {
	task *boltTask
	x    *boltExec

	_ [48]byte // read on every emit: a cache line of its own (TestHotStructsFillCacheLines)
}

// Emit emits values on the default stream anchored on anchor (nil for an
// unanchored emit, which leaves the tree). It returns the ids of the tasks
// the tuple was sent to; the slice is reused by the next emit.
func (c *BoltCollector) Emit(anchor *Tuple, values ...any) ([]int, error) {
	if err := c.task.em.emitBolt(DefaultStream, anchor, nil, values, -1); err != nil {
		return nil, err
	}
	return c.task.em.targetIDs(), nil
}

// EmitString is Emit with one value, the string s: the same tuple, without
// the allocation that converting s to any costs at the call (16 bytes, a
// sizeable part of emitting a small tuple; a sixth of word count's split
// bolt). For streams of one string field: lines, words, encoded records.
func (c *BoltCollector) EmitString(anchor *Tuple, s string) ([]int, error) {
	em := c.task.em
	if err := em.emitOne(anchor, em.strs.Box(s)); err != nil {
		return nil, err
	}
	return em.targetIDs(), nil
}

// EmitStream emits values on stream anchored on every tuple of anchors
// (multi-anchoring: the new tuple belongs to all their trees).
func (c *BoltCollector) EmitStream(stream string, anchors []*Tuple, values ...any) ([]int, error) {
	if err := c.task.em.emitBolt(stream, nil, anchors, values, -1); err != nil {
		return nil, err
	}
	return c.task.em.targetIDs(), nil
}

// EmitDirect emits values on a direct stream to one task.
func (c *BoltCollector) EmitDirect(task int, stream string, anchors []*Tuple, values ...any) ([]int, error) {
	if task < 0 {
		return nil, c.task.em.negativeTask(stream, task)
	}
	if err := c.task.em.emitBolt(stream, nil, anchors, values, task); err != nil {
		return nil, err
	}
	return c.task.em.targetIDs(), nil
}

// Ack acks an input tuple. Acking a tuple twice is a no-op.
func (c *BoltCollector) Ack(t *Tuple) { c.task.em.ack(t) }

// Fail fails the trees of an input tuple; the spout's Fail gets a
// *FailedError naming this bolt and err. A non-nil err is also kept among
// the component's recent errors, as ReportError keeps one, and logged;
// both are rate-limited per task (failErrorBurst per failErrorInterval
// kept, ratelog's default for the log line), since a bolt may fail every
// input.
func (c *BoltCollector) Fail(t *Tuple, err error) {
	if err != nil && !t.isDone() {
		c.task.failed(err)
	}
	c.task.em.fail(t, err)
}

// Wakeup registers fn to run on the task's own goroutine, where the
// collector may be used, each time the returned wake is called. It is for
// bolts whose work completes on other goroutines: a sink that acks its
// input once a broker acknowledged the write calls wake from the client's
// callback and acks in fn. wake is safe to call from any goroutine and
// never blocks; calls made before fn runs coalesce into one run, so fn
// takes everything that completed (keep completions in a queue of your
// own, bounded by what the bolt has outstanding). Call Wakeup in Prepare.
// A panic in fn is handled like a panic in Execute.
func (c *BoltCollector) Wakeup(fn func()) (wake func()) {
	t, x := c.task, c.x
	t.wakeFns = append(t.wakeFns, fn)
	return func() {
		t.woken.Store(true)
		select {
		case x.wakeC <- struct{}{}:
		default: // a wake is already pending; it runs every woken task
		}
	}
}

// ResetTimeout restarts the message timeout of the input's trees, for work
// that takes long.
func (c *BoltCollector) ResetTimeout(t *Tuple) { c.task.em.resetTimeout(t) }

// ReportError reports an error: logged, counted, and kept with the task
// and the time among the component's last errors, which the counters
// carry to nimbus and the UI (ComponentStats.errors).
func (c *BoltCollector) ReportError(err error) {
	c.task.rt.reportError(c.task.em.comp.id, int(c.task.em.task), err)
	c.task.em.log.Error("reported error", "err", err)
}

// BasicCollector emits anchored on the input of the current Execute.
type BasicCollector struct {
	task  *boltTask
	input *Tuple
}

// Emit emits values on the default stream anchored on the input.
func (c *BasicCollector) Emit(values ...any) ([]int, error) {
	if err := c.task.em.emitBolt(DefaultStream, c.input, nil, values, -1); err != nil {
		return nil, err
	}
	return c.task.em.targetIDs(), nil
}

// EmitString is Emit with one value, the string s, without the allocation
// that converting s to any costs; see BoltCollector.EmitString.
func (c *BasicCollector) EmitString(s string) ([]int, error) {
	em := c.task.em
	var v [1]any
	v[0] = em.strs.Box(s)
	if err := em.emitBolt(DefaultStream, c.input, nil, v[:], -1); err != nil {
		return nil, err
	}
	return em.targetIDs(), nil
}

// EmitStream emits values on a named stream anchored on the input.
func (c *BasicCollector) EmitStream(stream string, values ...any) ([]int, error) {
	if err := c.task.em.emitBolt(stream, c.input, nil, values, -1); err != nil {
		return nil, err
	}
	return c.task.em.targetIDs(), nil
}

// EmitDirect emits values on a direct stream to one task, anchored on the
// input.
func (c *BasicCollector) EmitDirect(task int, stream string, values ...any) ([]int, error) {
	if task < 0 {
		return nil, c.task.em.negativeTask(stream, task)
	}
	if err := c.task.em.emitBolt(stream, c.input, nil, values, task); err != nil {
		return nil, err
	}
	return c.task.em.targetIDs(), nil
}

// ResetTimeout restarts the message timeout of the input's trees.
func (c *BasicCollector) ResetTimeout() { c.task.em.resetTimeout(c.input) }

// ReportError reports an error without failing the input.
func (c *BasicCollector) ReportError(err error) {
	c.task.rt.reportError(c.task.em.comp.id, int(c.task.em.task), err)
	c.task.em.log.Error("reported error", "err", err)
}

// basicBoltAdapter runs a BasicBolt as a Bolt.
type basicBoltAdapter struct {
	b    BasicBolt
	c    *BoltCollector
	coll BasicCollector
}

func (a *basicBoltAdapter) DeclareOutputFields(d OutputDeclarer) { a.b.DeclareOutputFields(d) }

func (a *basicBoltAdapter) Prepare(tc *TopologyContext, c *BoltCollector) error {
	a.c = c
	a.coll.task = c.task
	return a.b.Prepare(tc)
}

func (a *basicBoltAdapter) Execute(t *Tuple) {
	a.coll.input = t
	err := a.b.Execute(t, &a.coll)
	a.coll.input = nil
	if err != nil {
		a.c.Fail(t, err)
		return
	}
	a.c.Ack(t)
}

func (a *basicBoltAdapter) Cleanup() { a.b.Cleanup() }
