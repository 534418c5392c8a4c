package failover

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gale-stream/gale/internal/bench"
)

// The protocol, one line per message over TCP, each way:
//
//	spout → queue   T n          n more messages may be sent (credit)
//	                A id nanos   message id's tree completed, nanos after its emit
//	                N id         message id's tree failed
//	queue → spout   M id text    a message, held for this connection
//
// A connection is one holder: the messages sent on it are put back when
// it closes. The queue sends no more messages than the spout gave credit
// for, so a spout's buffer is bounded by the credit it gives.

// ServerConfig configures a Server.
type ServerConfig struct {
	// Addr is where to listen; empty means 127.0.0.1:0.
	Addr string
	// Rate is the sentences produced per second while producing (> 0).
	Rate float64
	// Lease is how long a message is held for a spout before it is put
	// back; longer than the topology's message timeout.
	Lease time.Duration
	// MaxUnacked bounds the messages kept: production pauses (counted as
	// throttled) while so many are not acked.
	MaxUnacked int
	Logger     *slog.Logger
}

// Server serves a Queue to spouts over TCP and produces its sentences at
// the configured rate. Its methods are safe for concurrent use.
type Server struct {
	cfg ServerConfig
	ln  net.Listener
	log *slog.Logger

	mu struct {
		sync.Mutex
		q         *Queue
		producing bool
		pacer     *bench.Pacer
		changed   chan struct{} // closed when messages become ready
		holders   int           // the last holder id handed out
		conns     map[*conn]struct{}
		closed    bool
	}
	done chan struct{}
	wg   sync.WaitGroup
}

// Listen starts a server: it accepts spouts' connections at once and
// produces once Produce(true) is called.
func Listen(cfg ServerConfig) (*Server, error) {
	if cfg.Rate <= 0 {
		return nil, fmt.Errorf("benchfail: the rate must be > 0 sentences per second, got %v", cfg.Rate)
	}
	if cfg.Lease <= 0 {
		return nil, fmt.Errorf("benchfail: the lease must be > 0, got %s", cfg.Lease)
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("benchfail: listen: %w", err)
	}
	s := &Server{cfg: cfg, ln: ln, log: cfg.Logger.With("component", "benchfail"), done: make(chan struct{})}
	s.mu.q = NewQueue(cfg.Lease, cfg.MaxUnacked)
	s.mu.changed = make(chan struct{})
	s.mu.conns = make(map[*conn]struct{})
	s.wg.Go(s.accept)
	s.wg.Go(s.tick)
	return s, nil
}

// Addr is the address spouts dial.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Produce starts or stops production at the rate. Started again, it
// keeps the rate from then on, with no burst for the time it was off.
func (s *Server) Produce(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on && !s.mu.producing {
		s.mu.pacer = bench.NewPacer(s.cfg.Rate, time.Now())
	}
	s.mu.producing = on
}

// Sample is the queue's state at one moment.
type Sample struct {
	Counts
	Unacked int // messages not acked yet: ready or held
	Held    int // messages held by spouts
	Spouts  int // connections
}

// Sample returns the queue's state.
func (s *Server) Sample() Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.mu.q
	return Sample{Counts: q.Counts(), Unacked: q.Unacked(), Held: q.Held(), Spouts: len(s.mu.conns)}
}

// Latencies returns the complete latencies of the acks since the last
// call.
func (s *Server) Latencies() *bench.Histogram {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.q.Latencies()
}

// Close stops accepting and producing, closes every connection and waits
// for everything the server started. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.mu.closed = true
	close(s.done)
	for c := range s.mu.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// produceEvery is how often the producer makes the sentences due, and
// expireEvery how often leases are checked.
const (
	produceEvery = 5 * time.Millisecond
	expireEvery  = 250 * time.Millisecond
)

func (s *Server) tick() {
	tk := time.NewTicker(produceEvery)
	defer tk.Stop()
	var lastExpire time.Time
	for {
		select {
		case <-s.done:
			return
		case now := <-tk.C:
			s.mu.Lock()
			q := s.mu.q
			made := false
			if s.mu.producing {
				for {
					if _, ok := s.mu.pacer.Due(now); !ok {
						break
					}
					made = q.Produce() || made
				}
			}
			before := q.counts.Replayed
			if now.Sub(lastExpire) >= expireEvery {
				q.Expire(now)
				lastExpire = now
			}
			if made || q.counts.Replayed != before {
				s.changedLocked()
			}
			s.mu.Unlock()
		}
	}
}

// changedLocked wakes the connections waiting for messages.
func (s *Server) changedLocked() {
	close(s.mu.changed)
	s.mu.changed = make(chan struct{})
}

func (s *Server) accept() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
			default:
				s.log.Error("accept", "err", err)
			}
			return
		}
		s.mu.Lock()
		if s.mu.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.mu.holders++
		c := &conn{s: s, nc: nc, holder: s.mu.holders, wake: make(chan struct{}, 1), gone: make(chan struct{})}
		s.mu.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(c.read)
		s.wg.Go(c.write)
	}
}

// conn is one spout's connection. credit and left are under the
// server's mu.
type conn struct {
	s      *Server
	nc     net.Conn
	holder int
	credit int
	left   bool
	wake   chan struct{} // credit was given
	gone   chan struct{} // closed when read ends
}

// maxCredit bounds the credit a spout may give: its buffer's size.
const maxCredit = 1 << 16

// read applies the spout's lines until the connection closes, then puts
// back what it held.
func (c *conn) read() {
	s := c.s
	defer func() {
		s.mu.Lock()
		c.left = true
		s.mu.q.Leave(c.holder)
		delete(s.mu.conns, c)
		s.changedLocked()
		s.mu.Unlock()
		close(c.gone)
		c.nc.Close()
	}()
	sc := bufio.NewScanner(c.nc)
	for sc.Scan() {
		if err := c.apply(sc.Text()); err != nil {
			s.log.Error("spout connection", "holder", c.holder, "err", err)
			return
		}
	}
}

var errBadLine = errors.New("benchfail: bad line")

func (c *conn) apply(line string) error {
	op, rest, _ := strings.Cut(line, " ")
	a, b, _ := strings.Cut(rest, " ")
	s := c.s
	switch op {
	case "T":
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 {
			return fmt.Errorf("%w %q: want T n, n ≥ 1", errBadLine, line)
		}
		s.mu.Lock()
		c.credit = min(c.credit+n, maxCredit)
		s.mu.Unlock()
		select {
		case c.wake <- struct{}{}:
		default:
		}
	case "A":
		id, err1 := strconv.ParseUint(a, 10, 64)
		ns, err2 := strconv.ParseInt(b, 10, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%w %q: want A id nanos", errBadLine, line)
		}
		s.mu.Lock()
		s.mu.q.Ack(id, time.Duration(ns))
		s.mu.Unlock()
	case "N":
		id, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return fmt.Errorf("%w %q: want N id", errBadLine, line)
		}
		s.mu.Lock()
		before := s.mu.q.counts.Replayed
		s.mu.q.Nack(c.holder, id)
		if s.mu.q.counts.Replayed != before {
			s.changedLocked()
		}
		s.mu.Unlock()
	default:
		return fmt.Errorf("%w %q: want T, A or N", errBadLine, line)
	}
	return nil
}

// write sends messages as credit and the queue allow, until the
// connection closes.
func (c *conn) write() {
	s := c.s
	w := bufio.NewWriter(c.nc)
	var buf []byte
	for {
		s.mu.Lock()
		var msgs []Msg
		if !c.left && c.credit > 0 {
			msgs = s.mu.q.Take(c.holder, min(c.credit, 256), time.Now())
			c.credit -= len(msgs)
		}
		changed := s.mu.changed
		s.mu.Unlock()
		if len(msgs) > 0 {
			for _, m := range msgs {
				buf = append(buf[:0], 'M', ' ')
				buf = strconv.AppendUint(buf, m.ID, 10)
				buf = append(buf, ' ')
				buf = append(buf, m.Text...)
				buf = append(buf, '\n')
				w.Write(buf)
			}
			if err := w.Flush(); err != nil {
				c.nc.Close() // read ends and puts back what was sent
				<-c.gone
				return
			}
			continue
		}
		select {
		case <-changed:
		case <-c.wake:
		case <-c.gone:
			return
		}
	}
}
