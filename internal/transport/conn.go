package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// A worker dials every peer it sends to and keeps one connection per peer.
// The dialer speaks first with its Hello; the listener checks it and
// answers with its own, which the dialer checks in turn. Then frames flow
// from dialer to listener. A frame lost with a broken connection is not
// sent again: the trees it carried time out and their spouts replay them,
// as with any loss (at-least-once).

// ServerConfig configures a listening worker.
type ServerConfig struct {
	Hello        Hello // this worker's
	MaxFrameSize int   // ≤ 0: DefaultMaxFrameSize
	// IdleTimeout closes a connection that sent no frame for this long
	// (peers send heartbeats when idle); 0 means never.
	IdleTimeout time.Duration
	// Handler gets every data, heartbeat and backpressure frame, from the
	// connection's goroutine; payload is valid until it returns.
	Handler func(peer Hello, kind FrameKind, payload []byte)
	Logger  *slog.Logger // nil: slog.Default()
}

// Server accepts connections from peer workers.
type Server struct {
	cfg ServerConfig
	ln  net.Listener
	log *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Listen starts accepting connections on addr.
func Listen(addr string, cfg ServerConfig) (*Server, error) {
	if cfg.Handler == nil {
		return nil, errors.New("transport: Listen needs a Handler")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen on %s: %w", addr, err)
	}
	s := &Server{cfg: cfg, ln: ln, log: cfg.Logger, conns: make(map[net.Conn]struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	remote := c.RemoteAddr().String()
	fr := NewFrameReader(c, s.cfg.MaxFrameSize)
	deadline := func() {
		if s.cfg.IdleTimeout > 0 {
			c.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		}
	}
	deadline()
	peer, err := s.handshake(c, fr)
	if err != nil {
		s.log.Error("refused a worker connection", "remote", remote, "err", err)
		return
	}
	for {
		deadline()
		kind, payload, err := fr.Read()
		if err != nil {
			s.readError(peer, remote, err)
			return
		}
		switch kind {
		case FrameClose:
			return
		case FrameHello:
			s.log.Error("closed a worker connection", "worker", peer.Worker, "remote", remote,
				"err", "a second hello on the connection")
			return
		}
		s.cfg.Handler(peer, kind, payload)
	}
}

func (s *Server) handshake(c net.Conn, fr *FrameReader) (Hello, error) {
	kind, payload, err := fr.Read()
	if err != nil {
		return Hello{}, fmt.Errorf("reading the hello: %w", err)
	}
	if kind != FrameHello {
		return Hello{}, fmt.Errorf("%w: the first frame is %s, not hello", ErrBadHello, kind)
	}
	peer, err := ParseHello(payload)
	if err != nil {
		return Hello{}, err
	}
	if err := s.cfg.Hello.Accept(peer); err != nil {
		return Hello{}, err
	}
	fw := NewFrameWriter(c, s.cfg.MaxFrameSize)
	if err := fw.Write(FrameHello, AppendHello(nil, s.cfg.Hello)); err != nil {
		return Hello{}, err
	}
	return peer, fw.Flush()
}

func (s *Server) readError(peer Hello, remote string, err error) {
	var ne net.Error
	switch {
	case errors.Is(err, net.ErrClosed):
		return // Close
	case errors.Is(err, io.EOF):
		s.log.Info("worker connection ended without a close frame", "worker", peer.Worker, "remote", remote)
	case errors.As(err, &ne) && ne.Timeout():
		s.log.Error("closed an idle worker connection", "worker", peer.Worker, "remote", remote,
			"err", fmt.Sprintf("no frame for %s: the peer's heartbeats stopped", s.cfg.IdleTimeout))
	default:
		s.log.Error("closed a worker connection", "worker", peer.Worker, "remote", remote, "err", err)
	}
}

// SenderConfig configures the connection to one peer.
type SenderConfig struct {
	Hello        Hello // this worker's
	Addr         string
	MaxFrameSize int // ≤ 0: DefaultMaxFrameSize
	// Heartbeat is how long the connection may go without a frame before
	// the sender sends a heartbeat; 0 means never.
	Heartbeat time.Duration
	// MinBackoff and MaxBackoff bound the wait between connection attempts,
	// which doubles from the first to the second, with jitter. Defaults:
	// 10 ms and 1 s.
	MinBackoff, MaxBackoff time.Duration
	QueueLen               int          // frames waiting to be sent; default 64
	Logger                 *slog.Logger // nil: slog.Default()
}

type outFrame struct {
	kind    FrameKind
	payload []byte
}

// Sender keeps a connection to one peer, reconnecting with backoff, and
// sends the frames given to Send in order.
type Sender struct {
	cfg  SenderConfig
	log  *slog.Logger
	q    chan outFrame
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// NewSender starts connecting to cfg.Addr.
func NewSender(cfg SenderConfig) *Sender {
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 10 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(cfg.MinBackoff, time.Second)
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = 64
	}
	s := &Sender{cfg: cfg, log: cfg.Logger, q: make(chan outFrame, cfg.QueueLen),
		quit: make(chan struct{}), done: make(chan struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	go s.run()
	return s
}

// ErrSenderClosed is returned by Send after Close.
var ErrSenderClosed = errors.New("transport: sender closed")

// Send queues a frame, blocking while the queue is full: a peer that does
// not keep up holds the caller back. The sender owns payload from here.
func (s *Sender) Send(ctx context.Context, kind FrameKind, payload []byte) error {
	select {
	case <-s.quit:
		return ErrSenderClosed
	default:
	}
	select {
	case s.q <- outFrame{kind, payload}:
		return nil
	case <-s.quit:
		return ErrSenderClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close sends what is queued if connected, then a close frame, and stops.
// It gives a peer that does not read MaxBackoff to take them.
func (s *Sender) Close() {
	s.once.Do(func() { close(s.quit) })
	<-s.done
}

func (s *Sender) run() {
	defer close(s.done)
	backoff := s.cfg.MinBackoff
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		c, fw, err := s.connect()
		if err == nil {
			backoff = s.cfg.MinBackoff
			// The peer sends nothing after its hello for now (backpressure
			// frames will come this way): reading shows at once when it
			// goes away, rather than at the next write.
			broken := make(chan struct{})
			go func() {
				defer close(broken)
				fr := NewFrameReader(c, s.cfg.MaxFrameSize)
				for {
					if _, _, err := fr.Read(); err != nil {
						return
					}
				}
			}()
			// Close must not wait forever on a write to a peer that
			// stopped reading: on quit, give writes MaxBackoff to finish.
			pumped, watched := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(watched)
				select {
				case <-s.quit:
					c.SetWriteDeadline(time.Now().Add(s.cfg.MaxBackoff))
				case <-pumped:
				}
			}()
			stop := s.pump(c, fw, broken)
			close(pumped)
			<-watched
			c.Close()
			<-broken
			select {
			case <-s.quit:
				stop = true // a write cut short by Close
			default:
			}
			if stop {
				return
			}
			continue
		}
		s.log.Warn("cannot connect to a peer worker; retrying", "addr", s.cfg.Addr, "err", err, "in", backoff)
		timer.Reset(backoff/2 + rand.N(backoff/2+1))
		select {
		case <-timer.C:
		case <-s.quit:
			return
		}
		backoff = min(2*backoff, s.cfg.MaxBackoff)
	}
}

func (s *Sender) connect() (net.Conn, *FrameWriter, error) {
	d := net.Dialer{Timeout: s.cfg.MaxBackoff}
	c, err := d.Dial("tcp", s.cfg.Addr)
	if err != nil {
		return nil, nil, err
	}
	fw := NewFrameWriter(c, s.cfg.MaxFrameSize)
	if err := fw.Write(FrameHello, AppendHello(nil, s.cfg.Hello)); err == nil {
		err = fw.Flush()
	}
	if err == nil {
		c.SetReadDeadline(time.Now().Add(s.cfg.MaxBackoff))
		var kind FrameKind
		var payload []byte
		kind, payload, err = NewFrameReader(c, 0).Read()
		if err == nil && kind != FrameHello {
			err = fmt.Errorf("%w: the peer answered with a %s frame", ErrBadHello, kind)
		}
		var peer Hello
		if err == nil {
			peer, err = ParseHello(payload)
		}
		if err == nil {
			err = s.cfg.Hello.Accept(peer)
		}
		c.SetReadDeadline(time.Time{})
	}
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("handshake with %s: %w", s.cfg.Addr, err)
	}
	return c, fw, nil
}

// pump sends queued frames on c until it breaks (false) or the sender is
// closed (true).
func (s *Sender) pump(c net.Conn, fw *FrameWriter, broken <-chan struct{}) (stop bool) {
	var hb <-chan time.Time
	var hbTimer *time.Timer
	if s.cfg.Heartbeat > 0 {
		hbTimer = time.NewTimer(s.cfg.Heartbeat)
		defer hbTimer.Stop()
		hb = hbTimer.C
	}
	write := func(f outFrame) bool {
		err := fw.Write(f.kind, f.payload)
		switch {
		case err == nil:
			return true
		case errors.Is(err, ErrMalformedFrame):
			s.log.Error("dropped a frame for a peer worker", "addr", s.cfg.Addr, "err", err)
			return true // the connection is fine
		}
		s.log.Warn("lost the connection to a peer worker; reconnecting", "addr", s.cfg.Addr, "err", err)
		return false
	}
	flush := func() bool {
		if err := fw.Flush(); err != nil {
			s.log.Warn("lost the connection to a peer worker; reconnecting", "addr", s.cfg.Addr, "err", err)
			return false
		}
		if hbTimer != nil {
			hbTimer.Reset(s.cfg.Heartbeat)
		}
		return true
	}
	for {
		select {
		case f := <-s.q:
			if !write(f) {
				return false
			}
			// Take what else is queued into the same flush.
			for n := len(s.q); n > 0; n-- {
				if !write(<-s.q) {
					return false
				}
			}
			if !flush() {
				return false
			}
		case <-hb:
			if fw.Write(FrameHeartbeat, nil) != nil || !flush() {
				return false
			}
		case <-broken:
			s.log.Warn("lost the connection to a peer worker; reconnecting", "addr", s.cfg.Addr)
			return false
		case <-s.quit:
			for n := len(s.q); n > 0; n-- {
				if !write(<-s.q) {
					return true
				}
			}
			fw.Write(FrameClose, nil)
			fw.Flush()
			return true
		}
	}
}
