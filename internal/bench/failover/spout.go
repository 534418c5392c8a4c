package failover

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gale-stream/gale"
)

// Spout emits the queue's messages, each with its id as the message id,
// and tells the queue of each tree's end: an ack with the complete
// latency (from the emit to the ack), or a nack, which puts the message
// back at once. Messages it has taken but not emitted yet (at most
// Prefetch) are held for it too, and put back if its connection closes.
type Spout struct {
	gale.BaseSpout
	// Addr is the queue's address.
	Addr string
	// Prefetch is the messages the spout takes ahead of emitting them.
	Prefetch int

	tc      *gale.TopologyContext
	cl      *client
	emitted map[uint64]time.Time // by message id, until acked or failed
	credit  int                  // messages taken from cl.in, not yet credited back
}

// DeclareOutputFields declares "sentence".
func (*Spout) DeclareOutputFields(d gale.OutputDeclarer) { d.Declare("sentence") }

// Open starts the connection to the queue; it dials in the background,
// again and again until it connects, so a queue not up yet delays the
// spout rather than failing the worker.
func (s *Spout) Open(tc *gale.TopologyContext, c *gale.SpoutCollector) error {
	if err := s.BaseSpout.Open(tc, c); err != nil {
		return err
	}
	s.tc = tc
	s.Prefetch = max(s.Prefetch, 1)
	s.emitted = make(map[uint64]time.Time)
	s.cl = startClient(s.Addr, s.Prefetch, tc.Logger())
	return nil
}

// NextTuple emits one message if one has arrived.
func (s *Spout) NextTuple() {
	select {
	case m := <-s.cl.in:
		s.credit++
		if s.credit >= max(s.Prefetch/4, 1) {
			s.cl.send(line{op: 'T', id: uint64(s.credit)})
			s.credit = 0
		}
		s.emitted[m.ID] = s.tc.Now()
		if _, err := s.Collector.Emit(m.ID, m.Text); err != nil {
			delete(s.emitted, m.ID)
			s.cl.send(line{op: 'N', id: m.ID})
		}
	default:
		if s.credit > 0 {
			s.cl.send(line{op: 'T', id: uint64(s.credit)})
			s.credit = 0
		}
	}
}

// Ack tells the queue the message is done, with its complete latency.
func (s *Spout) Ack(msgID any) {
	id := msgID.(uint64)
	at, ok := s.emitted[id]
	delete(s.emitted, id)
	var lat time.Duration
	if ok {
		lat = s.tc.Now().Sub(at)
	}
	s.cl.send(line{op: 'A', id: id, nanos: int64(lat)})
}

// Fail tells the queue to put the message back.
func (s *Spout) Fail(msgID any, _ error) {
	id := msgID.(uint64)
	delete(s.emitted, id)
	s.cl.send(line{op: 'N', id: id})
}

// Close flushes what the spout has to tell the queue and closes the
// connection.
func (s *Spout) Close() { s.cl.close() }

// line is one line from a spout to the queue.
type line struct {
	op    byte // T, A or N
	id    uint64
	nanos int64
}

// client is a spout's connection to the queue: a goroutine dials it and
// reads its messages into in, another writes out's lines.
type client struct {
	addr   string
	credit int
	log    *slog.Logger
	in     chan Msg  // the messages received, at most credit
	out    chan line // to the queue
	ctx    context.Context
	cancel context.CancelFunc
	dead   chan struct{} // closed once the connection is gone for good
	wg     sync.WaitGroup
}

// outBuffer bounds the lines waiting to be written: a spout's acks and
// nacks, at most its pending trees plus its prefetch.
const outBuffer = 4096

func startClient(addr string, credit int, log *slog.Logger) *client {
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{addr: addr, credit: credit, log: log, in: make(chan Msg, credit), out: make(chan line, outBuffer),
		ctx: ctx, cancel: cancel, dead: make(chan struct{})}
	c.wg.Go(c.run)
	return c
}

// send queues l for the queue; it is dropped if the connection is gone
// (the queue puts back what this spout held, or its lease expires).
func (c *client) send(l line) {
	select {
	case c.out <- l:
	case <-c.dead:
	}
}

// close writes the lines queued so far, then closes the connection and
// waits for the client's goroutines.
func (c *client) close() {
	c.cancel()
	c.wg.Wait()
}

// run dials until connected (or closed), then serves the connection
// until it breaks or the client closes. A broken connection is not
// dialled again: the queue has put back what it held, and the messages
// in in would be emitted twice.
func (c *client) run() {
	defer close(c.dead)
	var nc net.Conn
	for {
		var err error
		d := net.Dialer{Timeout: time.Second}
		if nc, err = d.DialContext(c.ctx, "tcp", c.addr); err == nil {
			break
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	readDone := make(chan struct{})
	c.wg.Go(func() {
		defer close(readDone)
		c.read(nc)
	})
	c.write(nc, readDone)
	nc.Close()
	<-readDone
}

func (c *client) read(nc net.Conn) {
	sc := bufio.NewScanner(nc)
	for sc.Scan() {
		l := sc.Text()
		op, rest, _ := strings.Cut(l, " ")
		a, text, _ := strings.Cut(rest, " ")
		id, err := strconv.ParseUint(a, 10, 64)
		if op != "M" || err != nil {
			c.log.Error("queue sent a bad line", "line", l)
			return
		}
		select { // never full: the queue sends no more than the credit
		case c.in <- Msg{ID: id, Text: text}:
		case <-c.ctx.Done():
			return
		}
	}
	if err := sc.Err(); err != nil && c.ctx.Err() == nil {
		c.log.Warn("queue connection", "err", err)
	}
}

// write sends the credit, then out's lines, flushing whenever out is
// empty, until the client closes (having written what was queued) or
// the connection breaks.
func (c *client) write(nc net.Conn, readDone <-chan struct{}) {
	w := bufio.NewWriter(nc)
	var buf []byte
	put := func(l line) {
		buf = append(buf[:0], l.op, ' ')
		buf = strconv.AppendUint(buf, l.id, 10)
		if l.op == 'A' {
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, l.nanos, 10)
		}
		buf = append(buf, '\n')
		w.Write(buf)
	}
	put(line{op: 'T', id: uint64(c.credit)})
	for {
		if err := w.Flush(); err != nil {
			return
		}
		select {
		case l := <-c.out:
			put(l)
			for more := true; more; {
				select {
				case l := <-c.out:
					put(l)
				default:
					more = false
				}
			}
		case <-readDone:
			return
		case <-c.ctx.Done():
			for more := true; more; {
				select {
				case l := <-c.out:
					put(l)
				default:
					more = false
				}
			}
			w.Flush()
			return
		}
	}
}

// Addr parameter checks, for Build.
func checkAddr(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("parameter queue: want the queue's HOST:PORT, got %q: %v", addr, err)
	}
	return nil
}
