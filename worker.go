package gale

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gale-stream/gale/internal/ratelog"
	"github.com/gale-stream/gale/internal/scheduler"
	"github.com/gale-stream/gale/internal/transport"
	"github.com/gale-stream/gale/internal/worker"
)

// A topology can run in several worker processes. Every worker builds the
// same topology and computes the same plan (internal/plan: task ids,
// executors, stream ids); a worker.Assignment says which worker this is, where
// the others listen and which worker runs each executor (by default the
// even scheduler's placement, internal/scheduler), and the workers route
// by it. A worker sends to another over one TCP connection
// (internal/transport), and receives from each over the connection that
// peer dialed.
//
// Flow control between workers uses credits (docs/architecture.md): a
// sender holds, per remote executor, a token for each batch it may still
// send there. A batch costs a token; the receiving worker grants it back
// when the executor has taken the batch, on its own connection to the
// sender, where the grants share writes with its data frames. Tokens
// are refilled to creditBatches whenever a connection is (re)established.
// Remote batches land in a queue of their own (execSlot.rin) sized for
// every peer's credits, so a connection's reader never waits on a slow
// executor. Tree messages to spouts need no credit: a spout drains them
// even while it waits to send.

// creditBatches is how many batches a sending worker may have on their way
// to one remote executor.
func (rt *runtime) creditBatches() int { return rt.queueCap * creditMul }

// creditMul: a remote executor's credit is this many times a local queue.
// A batch's credit comes back after a round trip through two processes
// rather than a channel hand-off, and batches are often part full; with
// 1× the senders waited for credit most of the time (bench: 300k vs 490k
// sentences/s with 4×, docs/performance.md).
const creditMul = 4

// workerShare is one worker process's share of a topology, started with
// startWorker (internal/bridge's StartWorker). Its methods are safe for
// concurrent use; it implements worker.Handle, whose doc comments are its
// methods'.
type workerShare struct {
	rt       *runtime
	server   *transport.Server
	stopOnce sync.Once
}

// startWorker starts this process's share of a topology run by
// len(asg.Workers) worker processes (see bridge.StartWorker). If ln is
// nil it listens on asg.Workers[asg.Worker].
//
// asg.Executors says which worker runs each executor; without it they are
// placed by the even scheduler: round-robin in task order. Each spout
// task keeps its own trees (tree.go): their acks come to its worker.
func startWorker(name string, conf Config, topo *Topology, asg worker.Assignment, opts RunOptions, ln net.Listener) (*workerShare, error) {
	if err := asg.Validate(); err != nil {
		return nil, err
	}
	rt, err := newRuntimeWith(name, topo, conf, opts, &asg)
	if err != nil {
		return nil, err
	}
	if opts.spoutMirrors != nil {
		rt.mirrorSpouts(opts.spoutMirrors)
	}
	if ln == nil {
		ln, err = net.Listen("tcp", asg.Workers[asg.Worker])
		if err != nil {
			return nil, fmt.Errorf("gale: worker %d: %w", asg.Worker, err)
		}
	}
	// The senders exist before any executor runs; they send nothing
	// until a peer accepts and grants credits.
	for _, p := range rt.peers {
		if p != nil {
			p.start()
		}
	}
	closeSenders := func() {
		for _, p := range rt.peers {
			if p != nil {
				p.sender.Close()
			}
		}
	}
	if err := rt.start(); err != nil {
		closeSenders()
		ln.Close()
		return nil, err
	}
	w := &workerShare{rt: rt}
	w.server, err = transport.Serve(ln, transport.ServerConfig{
		Hello:       rt.hello,
		Secret:      rt.secret(),
		IdleTimeout: peerIdleTimeout,
		Handler:     rt.handleFrame,
		OnOpen:      rt.openInbound,
		OnClose:     rt.closeInbound,
		Logger:      rt.log,
	})
	if err != nil {
		rt.stop(0)
		closeSenders()
		return nil, err
	}
	return w, nil
}

// Heartbeats between workers: a sender sends one after peerHeartbeat
// without a frame; a listener drops a connection silent for
// peerIdleTimeout.
const (
	peerHeartbeat   = time.Second
	peerIdleTimeout = 10 * time.Second
)

func (w *workerShare) Addr() string { return w.server.Addr() }

func (w *workerShare) Failed() <-chan error { return w.rt.fatal }

func (w *workerShare) Activate()   { w.rt.setActive(true) }
func (w *workerShare) Deactivate() { w.rt.setActive(false) }

func (rt *runtime) setActive(on bool) {
	rt.activeMu.Lock()
	defer rt.activeMu.Unlock()
	rt.wantActive = on
	rt.active.Store(on && rt.peersUp == len(rt.asg.Workers)-1)
}

// peerUp counts a peer's first connection; with the last one the spouts
// start, unless the worker was deactivated meanwhile.
func (rt *runtime) peerUp() {
	rt.activeMu.Lock()
	defer rt.activeMu.Unlock()
	rt.peersUp++
	rt.active.Store(rt.wantActive && rt.peersUp == len(rt.asg.Workers)-1)
}

func (w *workerShare) Stop() { w.stop(true) }

func (w *workerShare) StopNow() { w.stop(false) }

func (w *workerShare) stop(drain bool) {
	w.stopOnce.Do(func() {
		secs, _ := w.rt.conf.Int(TopologyShutdownDrainTimeoutSecs)
		if w.rt.died.Load() || !drain {
			secs = 0 // a component's panic under kill-worker: no drain, as RunLocal
		}
		w.rt.stop(time.Duration(secs) * time.Second)
		for _, p := range w.rt.peers {
			if p != nil {
				p.sender.Close()
			}
		}
		w.server.Close()
	})
}

func (w *workerShare) Errors() ([]worker.ComponentError, int64) {
	errs, n := (&LocalTopology{rt: w.rt}).Errors()
	out := make([]worker.ComponentError, len(errs))
	for i, e := range errs {
		out[i] = worker.ComponentError(e)
	}
	return out, n
}

func (w *workerShare) Status() worker.Status {
	rt := w.rt
	s := worker.Status{
		Pending:           int(rt.pending()),
		Inflight:          rt.inflight.Load(),
		WireTuplesSent:    rt.wireTuples.Load(),
		WireBytesReceived: w.server.BytesReceived(),
		Errors:            rt.errCount.Load(),
		Stopped:           !rt.active.Load() && rt.spoutsStopped(),
	}
	for _, p := range rt.peers {
		if p != nil {
			s.WireBytesSent += p.sender.BytesSent()
			if p.sender.Connected() {
				s.PeersConnected++
			}
		}
	}
	return s
}

// assign takes the executor → worker map from the assignment, or from the
// even scheduler when it has none, once layout has the plan. Placement is
// the scheduler's (internal/scheduler): the runtime only routes by it.
func (rt *runtime) assign() error {
	sa := scheduler.Assignment{Slots: make([]scheduler.Slot, len(rt.asg.Workers)), Executors: rt.asg.Executors}
	for i, addr := range rt.asg.Workers {
		sa.Slots[i] = scheduler.Slot{ID: strconv.Itoa(i), Addr: addr}
	}
	if sa.Executors == nil {
		even, err := scheduler.Even(rt.plan, sa.Slots)
		if err != nil {
			return fmt.Errorf("%w: %w", worker.ErrInvalidAssignment, err)
		}
		sa = even
	} else if err := sa.Validate(rt.plan); err != nil {
		return fmt.Errorf("%w: %w", worker.ErrInvalidAssignment, err)
	}
	sa.Executors = slices.Clone(sa.Executors)
	rt.execWorker = sa.Executors
	rt.asgFingerprint = sa.Fingerprint()
	rt.moves.asg = *rt.asg
	rt.moves.asg.Workers = slices.Clone(rt.asg.Workers)
	return nil
}

// local reports whether executor idx runs in this process.
func (rt *runtime) local(idx int) bool {
	return rt.execWorker == nil || rt.execWorker[idx] == rt.asg.Worker
}

// defFingerprint summarises what must be the same in every worker: the
// topology definition and its plan.
func (rt *runtime) defFingerprint() string {
	h := fnv.New64a()
	def, _ := json.Marshal(rt.topo.Def)
	h.Write(def)
	fmt.Fprintf(h, "|workers=%d|plan=%s", len(rt.asg.Workers), rt.plan.Fingerprint())
	return strconv.FormatUint(h.Sum64(), 16)
}

// secret is the topology's secret that every hello proves (nil: none).
func (rt *runtime) secret() []byte {
	if rt.asg.Secret == "" {
		return nil
	}
	return []byte(rt.asg.Secret)
}

// setupPeers makes the peer connections and credit channels once the
// layout is known.
func (rt *runtime) setupPeers() {
	rt.peerLog = ratelog.New(0, 0, rt.clock.Now)
	rt.hello = transport.Hello{
		Version:    transport.ProtocolVersion,
		Topology:   rt.name + "@" + rt.defFingerprint(),
		Worker:     strconv.Itoa(rt.asg.Worker),
		Types:      rt.topo.types.Fingerprint(),
		Assignment: rt.asgFingerprint,
		// The hello's AssignmentVersion orders assignments, so that a
		// moved worker that starts before its peers are reassigned
		// waits for them rather than fails (reassign.go).
		AssignmentVersion: rt.asg.Version,
	}
	rt.moves.hello = rt.hello
	rt.peers = make([]*peer, len(rt.asg.Workers))
	for w, addr := range rt.asg.Workers {
		if w == rt.asg.Worker {
			continue
		}
		rt.peers[w] = &peer{rt: rt, worker: w, addr: addr, bufs: make(chan []byte, rt.peerQueue)}
	}
	k := rt.creditBatches()
	remotePeers := len(rt.asg.Workers) - 1
	for i, slot := range rt.execs {
		w := rt.execWorker[i]
		if w != rt.asg.Worker {
			slot.peer = rt.peers[w]
			if !slot.isSpout {
				slot.credits = make(chan struct{}, k)
			}
			rt.peers[w].execs = append(rt.peers[w].execs, i)
			continue
		}
		// A local executor gets remote input in a queue of its own, with
		// room for twice every peer's credits: a (re)connection refills
		// the sender's credits while batches sent on the old ones may
		// still be on their way (a Redirect sends a moved peer's queue on
		// to its new copy) or here, so one reconnection can bring up to
		// 2k. The connection's reader must not wait for room here: the
		// grants that would free this executor, when it waits for credit
		// to send to that peer, arrive on the same connection.
		perPeer := 2 * k
		if slot.in != nil {
			slot.rin = make(chan *batch, perPeer*remotePeers)
		}
	}
}

// peer is the connection to one other worker and the state of sending to
// it.
type peer struct {
	rt     *runtime
	worker int
	addr   string // where it listened at the start; rt.peerAddr after a Reassign
	execs  []int  // its executors, whose credits refill on connect
	sender *transport.Sender
	bufs   chan []byte // frame buffers the sender gave back
	up     bool        // connected at least once; the sender's goroutine's
}

func (p *peer) start() { p.sender = transport.NewSender(p.senderConfig()) }

// senderConfig is the configuration of the peer's sender.
func (p *peer) senderConfig() transport.SenderConfig {
	return transport.SenderConfig{
		Hello:     p.rt.hello,
		Secret:    p.rt.secret(),
		Addr:      p.addr,
		Heartbeat: peerHeartbeat,
		QueueLen:  p.rt.peerQueue,
		Linger:    peerLinger,
		Release:   p.putBuf,
		OnConnect: p.connected,
		OnRefused: p.refused,
		Logger:    p.rt.log.With("peer", p.worker),
	}
}

// refused runs when the peer and this worker refused each other at the
// hello for a reason retrying cannot help (another version, topology,
// set of types or assignment): the worker fails, so that its process
// exits and whoever started it starts it again, the same as its peers.
func (p *peer) refused(err error) {
	p.rt.die(fmt.Errorf("gale: worker %d cannot work with peer worker %d at %s: %w", p.rt.asg.Worker, p.worker, p.rt.peerAddr(p.worker), err))
}

// getBuf returns an empty frame buffer, a reused one if the connection
// gave one back.
func (p *peer) getBuf() []byte {
	select {
	case b := <-p.bufs:
		return b
	default:
		return make([]byte, 0, 4<<10)
	}
}

// putBuf takes back a frame buffer the connection is done with; frames
// of tens of kilobytes come from rare large batches and are left to the
// collector.
func (p *peer) putBuf(b []byte) {
	if cap(b) > 64<<10 {
		return
	}
	select {
	case p.bufs <- b[:0]:
	default:
	}
}

// peerLinger is how long a connection may hold frames to fill a write.
// Longer lingers save writes but add to every hop's latency and to the
// credits' round trip: at half the 2-worker maximum, 300 µs gave a p99
// of 90 ms, 100 µs 7–13 ms, 30 µs 3–4 ms (docs/performance.md).
const peerLinger = 30 * time.Microsecond

// grantLinger is how long a connection's credit writer lets grants
// gather before writing them.
const grantLinger = peerLinger

// connected runs on every (re)connection to the peer.
func (p *peer) connected() {
	p.refill()
	if !p.up {
		p.up = true
		p.rt.peerUp()
	}
}

// refill restores every credit: a new connection starts with none in
// flight.
func (p *peer) refill() {
	for _, i := range p.execs {
		ch := p.rt.execs[i].credits
		for ch != nil && len(ch) < cap(ch) {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// grants takes a backpressure frame from the peer: credits for what this
// worker sent it. A frame that does not parse, or grants credit for an
// executor the peer does not run, is an error, and takes no credit.
func (p *peer) grants(payload []byte) error {
	cs, err := transport.ParseCredits(payload, len(p.rt.execs), nil)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if p.rt.execs[c.Dest].credits == nil || p.rt.execWorker[c.Dest] != p.worker {
			return fmt.Errorf("%w: backpressure frame: credit for executor %d, which worker %d does not run (do the workers have the same assignment?)",
				transport.ErrMalformedFrame, c.Dest, p.worker)
		}
	}
	for _, c := range cs {
		ch := p.rt.execs[c.Dest].credits
		for range c.N {
			select {
			case ch <- struct{}{}:
			default: // already full: a grant for a batch sent before a reconnect
			}
		}
	}
	return nil
}

// inbound is one connection a peer dialed to this worker: it decodes what
// arrives and grants credits back as local executors take batches.
type inbound struct {
	rt   *runtime
	conn *transport.ServerConn
	dec  *wireDecoder

	mu      sync.Mutex
	grants  []uint32 // by executor index
	dirty   []int32
	wake    chan struct{}
	done    chan struct{}
	stopped chan struct{}
	closed  atomic.Bool
}

func (rt *runtime) openInbound(c *transport.ServerConn) {
	in := &inbound{rt: rt, conn: c, dec: newWireDecoder(rt), grants: make([]uint32, len(rt.execs)),
		wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	if in.peer() == nil {
		rt.peerLog.Log(rt.log, slog.LevelError, "closed a connection from a peer worker", "peer", c.Peer().Worker, "remote", c.RemoteAddr(),
			"err", fmt.Sprintf("worker %q is not one of this topology's other %d workers", c.Peer().Worker, len(rt.peers)-1))
		c.Close()
	}
	rt.inMu.Lock()
	rt.inbound[c] = in
	stale := rt.inStale.has(c.Peer())
	rt.inMu.Unlock()
	if stale {
		// Its handshake used the hello a Reassign has just replaced.
		rt.peerLog.Log(rt.log, slog.LevelError, "closed a connection from a peer worker", "peer", c.Peer().Worker, "remote", c.RemoteAddr(),
			"err", "it holds the assignment from before the peer moved")
		c.Close()
	}
	if !stale && in.peer() != nil {
		// One line per connection a peer worker opens: which worker, from
		// where, holding which assignment (the same as this worker's: the
		// hello matched), to tell afterwards who exchanged tuples with whom.
		rt.log.Info("accepted a connection from a peer worker", "peer", c.Peer().Worker, "remote", c.RemoteAddr(),
			"assignment", c.Peer().Assignment, "version", c.Peer().AssignmentVersion)
	}
	go in.run()
}

func (rt *runtime) closeInbound(c *transport.ServerConn) {
	rt.inMu.Lock()
	in := rt.inbound[c]
	delete(rt.inbound, c)
	rt.inMu.Unlock()
	if in != nil {
		in.closed.Store(true)
		close(in.done)
		<-in.stopped
	}
}

// grant returns a credit for executor exec (called by the executor when
// it has taken a batch that came on this connection).
func (in *inbound) grant(exec int) {
	if in.closed.Load() {
		return
	}
	in.mu.Lock()
	if in.grants[exec] == 0 {
		in.dirty = append(in.dirty, int32(exec))
	}
	in.grants[exec]++
	first := len(in.dirty) == 1 && in.grants[exec] == 1
	in.mu.Unlock()
	if first {
		select {
		case in.wake <- struct{}{}:
		default:
		}
	}
}

// run writes the accumulated grants back to the peer.
func (in *inbound) run() {
	defer close(in.stopped)
	p := in.peer()
	if p == nil {
		return // openInbound closed the connection
	}
	var cs []transport.Credit
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	for {
		select {
		case <-in.wake:
		case <-in.done:
			return
		}
		// Let more grants gather into the frame: a write costs about as
		// much per call as per byte.
		linger.Reset(grantLinger)
		select {
		case <-linger.C:
		case <-in.done:
			return
		}
		in.mu.Lock()
		cs = cs[:0]
		for _, e := range in.dirty {
			cs = append(cs, transport.Credit{Dest: e, N: in.grants[e]})
			in.grants[e] = 0
		}
		in.dirty = in.dirty[:0]
		in.mu.Unlock()
		if len(cs) == 0 {
			continue
		}
		// The grants ride on this worker's own connection to the peer,
		// sharing its writes with the data frames going there.
		f := transport.Frame{Kind: transport.FrameBackpressure, Payload: transport.AppendCredits(p.getBuf(), cs)}
		select {
		case p.sender.Queue() <- f:
		case <-in.done:
			return
		}
	}
}

// peer is the peer that dialed this connection (openInbound checked it).
func (in *inbound) peer() *peer {
	w, err := strconv.Atoi(in.conn.Peer().Worker)
	if err != nil || w < 0 || w >= len(in.rt.peers) {
		return nil
	}
	return in.rt.peers[w]
}

// handleFrame decodes a data frame from a peer and hands its batch to the
// local executor, or takes a backpressure frame's credits. A frame that
// fails a check closes the connection, with a rate-limited log line: the
// peer reconnects. It runs on the connection's goroutine.
func (rt *runtime) handleFrame(c *transport.ServerConn, kind transport.FrameKind, payload []byte) {
	rt.inMu.Lock()
	in := rt.inbound[c]
	rt.inMu.Unlock()
	var err error
	switch kind {
	case transport.FrameBackpressure:
		// Grants for what this worker sent the peer, on the peer's own
		// connection (inbound.run).
		err = in.peer().grants(payload)
	case transport.FrameData:
		err = in.deliver(payload)
	default:
		return // heartbeats
	}
	if err != nil {
		rt.peerLog.Log(rt.log, slog.LevelError, "closed a connection from a peer worker", "peer", c.Peer().Worker, "remote", c.RemoteAddr(), "err", err)
		c.Close()
	}
}

func (in *inbound) deliver(payload []byte) error {
	rt := in.rt
	if len(payload) == 0 {
		return fmt.Errorf("%w: empty data frame", errWire)
	}
	switch payload[0] {
	case wireTuples:
		b := rt.getBatch()
		task, err := in.dec.decodeBatch(payload[1:], b)
		if err != nil {
			rt.recycleBatch(b)
			return err
		}
		idx := rt.taskExec[task]
		if !rt.local(idx) || rt.execs[idx].rin == nil {
			rt.recycleBatch(b)
			return fmt.Errorf("%w: tuples for task %d, which is not a bolt task this worker runs (do the workers have the same assignment?)", errWire, task)
		}
		if rt.deliverFeedback(idx, b) {
			return nil // a cycle's feedback: no credit to grant back
		}
		b.origin = in
		rt.inflight.Add(int64(len(b.tuples)))
		if rt.stats {
			rt.execs[idx].queued.Add(int64(len(b.tuples)))
		}
		deliverTo(rt, rt.execs[idx].rin, b)
		return nil
	case wireAcks:
		b := rt.getAckBatch()
		exec, err := in.dec.decodeAckBatch(payload[1:], b)
		if err != nil {
			rt.recycleAckBatch(b)
			return err
		}
		if err := rt.checkAcks(exec, b); err != nil {
			rt.recycleAckBatch(b)
			return err
		}
		rt.inflight.Add(int64(len(b.msgs)))
		deliverTo(rt, rt.execs[exec].ctl, b) // a spout: no credit, it always drains
		return nil
	default:
		return fmt.Errorf("%w: unknown data frame kind %d", errWire, payload[0])
	}
}

// checkAcks checks that tree messages from a peer are for a spout
// executor here, and for trees of its own tasks.
func (rt *runtime) checkAcks(exec int, b *ackBatch) error {
	if !rt.local(exec) {
		return fmt.Errorf("%w: tree messages for executor %d, which this worker does not run", errWire, exec)
	}
	if !rt.execs[exec].isSpout {
		return fmt.Errorf("%w: tree messages for executor %d, which is not a spout's", errWire, exec)
	}
	for i := range b.msgs {
		if x, ok := rt.treeExec(b.msgs[i].root); !ok || x != exec {
			return fmt.Errorf("%w: a tree message for task %d sent to spout executor %d", errWire, rootTask(b.msgs[i].root), exec)
		}
	}
	return nil
}

// deliverTo hands b to a local executor's queue. With credits there is
// room, for one reconnection's over-credit too; only a spout's
// completions, or batches of reconnections in quick succession, can wait.
func deliverTo[B any](rt *runtime, ch chan<- B, b B) {
	select {
	case ch <- b:
		return
	default:
	}
	select {
	case ch <- b:
	case <-rt.quit:
	}
}

// Sending to peers. The executor that flushes a batch for a remote
// executor takes a credit, encodes the batch into a frame and queues it on
// the peer's connection. Both waits (for a credit, for room in the
// connection's queue) park what arrives on o.ctlIn, as a wait for a full
// local queue does, so a spout keeps draining its completions.

func (o *outbox) sendRemoteData(slot *execSlot, b *batch) bool {
	if !o.takeCredit(slot.credits) {
		o.rt.recycleBatch(b)
		return false
	}
	n := len(b.tuples)
	buf, err := o.rt.appendTupleFrame(slot.peer.getBuf(), b)
	o.rt.recycleBatch(b)
	if err != nil {
		// The emit checked the values (emitter.prepare); only a TypeCodec
		// that fails on a value it accepted before gets here. The trees
		// time out and replay.
		o.rt.log.Error("dropped a batch for a peer worker: it cannot be encoded", "err", err)
		slot.peer.putBuf(buf)
		slot.credits <- struct{}{}
		return true
	}
	o.rt.wireTuples.Add(int64(n))
	return o.sendFrame(slot.peer, buf)
}

func (o *outbox) sendRemoteCtl(slot *execSlot, exec int, b *ackBatch) bool {
	if !o.takeCredit(slot.credits) {
		o.rt.recycleAckBatch(b)
		return false
	}
	buf := o.rt.appendAckFrame(slot.peer.getBuf(), exec, b)
	o.rt.recycleAckBatch(b)
	return o.sendFrame(slot.peer, buf)
}

// takeCredit takes one token from credits (nil: none needed), waiting as
// put does (a receive, where put sends: a select cannot be shared). It
// returns false if the runtime is stopping.
func (o *outbox) takeCredit(credits chan struct{}) bool {
	if credits == nil {
		return true
	}
	select {
	case <-credits:
		return true
	default:
	}
	start := o.waitStart()
	defer o.waitEnd(start)
	for {
		select {
		case <-credits:
			return true
		case ab := <-o.ctlIn:
			o.parked = append(o.parked, ab)
		case <-o.ticks:
			o.onTick()
		case <-o.quit:
			return false
		}
	}
}

// sendFrame queues a data frame for p's connection (put).
func (o *outbox) sendFrame(p *peer, payload []byte) bool {
	return put(o, p.sender.Queue(), transport.Frame{Kind: transport.FrameData, Payload: payload})
}
