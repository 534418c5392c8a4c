package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"sync"
	"time"

	"github.com/gale-stream/gale/internal/workerproc"
)

// ctlConn is one worker's control connection (workerproc.Supervised
// describes the protocol).
type ctlConn struct {
	c   net.Conn
	wmu sync.Mutex // held while writing a line
}

// send writes one command; a write that does not finish within a second
// breaks the connection (the worker dials again).
func (c *ctlConn) send(m workerproc.Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.c.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := c.c.Write(append(b, '\n')); err != nil {
		c.c.Close()
		return err
	}
	return nil
}

// ctlEvent is a line from a worker, or the end of its connection
// (closed).
type ctlEvent struct {
	conn   *ctlConn
	msg    workerproc.Message
	closed bool
}

// serveControl accepts workers' connections on ln until it is closed,
// and passes their lines on to events. Every connection's reader is
// started on wg; closing ln and then every connection (closeConns) ends
// them.
func (s *Supervisor) serveControl(ctx context.Context, ln net.Listener, events chan<- ctlEvent) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		cc := &ctlConn{c: c}
		s.connsMu.Lock()
		if s.connsClosed {
			s.connsMu.Unlock()
			c.Close()
			return
		}
		s.conns[cc] = struct{}{}
		s.connsMu.Unlock()
		s.wg.Go(func() {
			defer func() {
				s.connsMu.Lock()
				delete(s.conns, cc)
				s.connsMu.Unlock()
				c.Close()
				select {
				case events <- ctlEvent{conn: cc, closed: true}:
				case <-ctx.Done():
				}
			}()
			sc := bufio.NewScanner(c)
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			for sc.Scan() {
				var m workerproc.Message
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Event == "" {
					s.log.Warn("ignored an unparseable line from a worker", "line", sc.Text())
					continue
				}
				select {
				case events <- ctlEvent{conn: cc, msg: m}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
}

// closeConns closes every control connection, and any accepted later.
// The workers keep running and dial again.
func (s *Supervisor) closeConns() {
	s.connsMu.Lock()
	s.connsClosed = true
	for c := range s.conns {
		c.c.Close()
	}
	s.connsMu.Unlock()
}
