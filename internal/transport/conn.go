package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gale-stream/gale/internal/backoff"
	"github.com/gale-stream/gale/internal/ratelog"
)

// A worker dials every peer it sends tuples to and keeps one connection per
// peer: a Sender on the dialing side, a Server on the listening side.
//
// The dialer speaks first with its Hello; the listener checks it and answers
// with its own, which the dialer checks in turn. A listener that refuses
// the hello answers with a refusal frame instead, saying why and whether
// retrying can help, and closes the connection.
//
// Workers that hold the topology's secret (ServerConfig.Secret,
// SenderConfig.Secret) prove it to each other without sending it, each
// answering a challenge of the other's, in two more frames:
//
//  1. dialer: its hello, with a fresh nonce;
//  2. listener: its hello, with a fresh nonce and its proof: the
//     HMAC-SHA256, keyed by the secret, of its hello and the dialer's
//     nonce (or a refusal, as without a secret);
//  3. dialer, once it has checked that proof: a proof frame, the HMAC of
//     its own hello and the listener's nonce;
//  4. listener: an empty proof frame, which accepts the connection, or a
//     refusal.
//
// A hello without a nonce, or a wrong proof, is refused as a mismatch
// (permanent): a worker of another topology, or of an old assignment,
// holds another secret, or none. The proofs cover every field of the
// hello (topology, worker, types, assignment fingerprint, nonce), and the
// nonces make each one good for one connection only: a recorded
// handshake cannot be replayed. Frames after the handshake are not
// authenticated. A hello is small
// (MaxHelloFrame), and until it has been accepted a connection is bounded
// in what it may make the listener hold: its first frame is read with
// that bound, it must arrive within ServerConfig.HandshakeTimeout, and at
// most ServerConfig.MaxHandshakes connections may be shaking hands at
// once (the listener closes others as they arrive). Then frames flow both
// ways:
//
//   - dialer to listener: data, heartbeat and backpressure frames, sent with
//     Sender.Send, then a close frame when the Sender closes;
//   - listener to dialer: backpressure frames (credits, see Credit) and, if
//     it likes, heartbeats, written with ServerConn.Write, then a close frame
//     when the Server closes. The dialer passes backpressure frames to its
//     Handler, ignores heartbeats and breaks the connection on any other
//     kind.
//
// A close frame, either way, says that its sender is going away in order
// and that nothing follows; its receiver ends the connection without
// complaint. The listener ends it silently when the dialer's Sender
// closes. The dialer, when the listener's Server closes, logs once at INFO
// that the peer is shutting down and reconnects as usual, but logs its
// failed attempts at DEBUG until one succeeds or
// SenderConfig.QuietAfterClose has passed: when a whole topology stops,
// its workers do not warn about each other. A connection that ends without
// a close frame (EOF, a reset, a timeout) is a failure, logged at WARN on
// the dialer's side.
//
// Callbacks on the listener, per connection, all from the connection's
// goroutine: OnOpen once the handshake has succeeded, Handler for each frame,
// then OnClose once when the connection has ended for any reason. A
// connection refused at the hello gets none of them.
//
// Callbacks on the dialer, per connection: OnConnect from the Sender's
// goroutine once the handshake has succeeded, before any queued frame is
// written; then Handler from the connection's reader goroutine, which starts
// after OnConnect returns and ends before the next connection is dialled. So
// OnConnect and Handler never run concurrently, and neither runs after
// Sender.Close returns.
//
// A Sender whose hello is refused for a reason retrying cannot help (the
// two workers differ in protocol version, topology, registered types or
// assignment: ErrMismatch), or that refuses the listener's hello for one,
// logs it once at ERROR, tells SenderConfig.OnRefused and stops
// connecting. Other failures (a refused or reset connection, a listener
// busy with handshakes) are retried with backoff.
//
// Log lines that a peer can cause, on either side (refused hellos, broken
// connections, a connection's end), are rate-limited (internal/ratelog).
//
// A frame lost with a broken connection is not sent again: the trees it
// carried time out and their spouts replay them, as with any loss
// (at-least-once). Credits are lost with their connection too; the callbacks
// mark where each connection starts and ends, so a caller can tie its grants
// to one connection.

// Defaults of ServerConfig.
const (
	defaultWriteTimeout     = 10 * time.Second
	defaultHandshakeTimeout = 10 * time.Second
	defaultMaxHandshakes    = 64
)

// ServerConfig configures a listening worker.
type ServerConfig struct {
	Hello Hello // this worker's; Server.SetHello replaces it
	// Secret, if set, is the topology's secret, which every dialer must
	// prove it holds (see the handshake above).
	Secret       []byte
	MaxFrameSize int // bounds frames both ways; ≤ 0: DefaultMaxFrameSize
	// IdleTimeout closes a connection that sent no frame for this long
	// (peers send heartbeats when idle); 0 means never.
	IdleTimeout time.Duration
	// WriteTimeout bounds each ServerConn.Write, and the hello: a peer that
	// does not take a frame within it loses its connection. ≤ 0: 10 s.
	WriteTimeout time.Duration
	// HandshakeTimeout is how long a new connection has to send its hello
	// before it is closed. ≤ 0: 10 s.
	HandshakeTimeout time.Duration
	// MaxHandshakes bounds the connections shaking hands at once: one
	// accepted beyond it is closed at once, unanswered, and its dialer
	// retries. With MaxHelloFrame per connection it bounds what peers
	// that have not said hello may make the worker hold. ≤ 0: 64.
	MaxHandshakes int
	// Handler gets every data, heartbeat and backpressure frame, from the
	// connection's goroutine; payload is valid until it returns. Required.
	Handler func(c *ServerConn, kind FrameKind, payload []byte)
	// OnOpen, if set, is called from the connection's goroutine once the
	// handshake has succeeded, before the first Handler call.
	OnOpen func(c *ServerConn)
	// OnClose, if set, is called exactly once for every connection that got
	// OnOpen, from its goroutine, after the last Handler call, once the
	// connection has ended for any reason: a close frame, EOF, a bad frame,
	// the idle or write timeout, ServerConn.Close or Server.Close. From then
	// on c.Write returns ErrConnClosed.
	//
	// Handler, OnOpen and OnClose must not block for long: the connection
	// reads nothing meanwhile, and Server.Close waits for them.
	OnClose func(c *ServerConn)
	Logger  *slog.Logger // nil: slog.Default()
}

// Server accepts connections from peer workers.
type Server struct {
	cfg           ServerConfig
	hello         atomic.Pointer[Hello] // cfg.Hello, or SetHello's
	ln            net.Listener
	log           *slog.Logger
	bytesReceived atomic.Int64
	// handshakes counts the connections shaking hands, handshakeBytes
	// the bytes their first frames hold.
	handshakes, handshakeBytes atomic.Int64
	// refuseLog and closeLog rate-limit the lines a peer can cause.
	refuseLog, closeLog *ratelog.Limiter

	mu     sync.Mutex
	conns  map[net.Conn]*ServerConn // nil until the handshake has succeeded
	closed bool
	wg     sync.WaitGroup
}

// closeFrameTimeout bounds how long Server.Close tries to send its close
// frames: a peer that does not take 5 bytes by then is not reading. It
// leaves room for a dialer that is reading, but slowly, on a busy machine:
// one that misses the frame warns of a lost connection.
const closeFrameTimeout = time.Second

// Listen starts accepting connections on addr: net.Listen, then Serve.
func Listen(addr string, cfg ServerConfig) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen on %s: %w", addr, err)
	}
	s, err := Serve(ln, cfg)
	if err != nil {
		ln.Close()
	}
	return s, err
}

// Serve starts accepting connections on ln, a listener the caller has bound
// already (a worker binds first to learn the port it announces). From a
// successful return the Server owns ln, and Close closes it; on error ln is
// left as it was.
func Serve(ln net.Listener, cfg ServerConfig) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = defaultWriteTimeout
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = defaultHandshakeTimeout
	}
	if cfg.MaxHandshakes <= 0 {
		cfg.MaxHandshakes = defaultMaxHandshakes
	}
	s := &Server{cfg: cfg, ln: ln, log: cfg.Logger, conns: make(map[net.Conn]*ServerConn),
		refuseLog: ratelog.New(0, 0, nil), closeLog: ratelog.New(0, 0, nil)}
	s.hello.Store(&cfg.Hello)
	if s.log == nil {
		s.log = slog.Default()
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (cfg *ServerConfig) check() error {
	if cfg.Handler == nil {
		return errors.New("transport: ServerConfig.Handler is nil: a Server needs a frame handler")
	}
	return nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// SetHello makes h the hello that the server checks dialers' hellos
// against and answers with, from the next handshake on; connections
// already open are left as they are. Safe for concurrent use.
func (s *Server) SetHello(h Hello) { s.hello.Store(&h) }

// BytesReceived is the number of bytes of frames read so far, headers and
// payloads, over all connections. Safe for concurrent use.
func (s *Server) BytesReceived() int64 { return s.bytesReceived.Load() }

// Close stops accepting and closes the listener, sends every handshaken
// connection a close frame, so that its dialer knows this worker is
// shutting down rather than failing, closes every connection, and waits
// for their goroutines, OnClose calls included.
//
// The close frames are best effort, sent together, and bounded by one
// deadline, closeFrameTimeout (1 s) from the start. A connection whose
// frame is out stays open until its dialer hangs up, its frames dropped
// unread, since closing with bytes unread would reset it and could discard
// the close frame; a frame that cannot go out, because a Write holds the
// connection or the peer does not read, is given up. Either way the
// connection is closed by the deadline.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	var open []*ServerConn
	for c, sc := range s.conns {
		if sc == nil {
			c.Close() // still shaking hands: no close frame before a hello
		} else {
			open = append(open, sc)
		}
	}
	s.mu.Unlock()
	err := s.ln.Close()
	deadline := time.Now().Add(closeFrameTimeout)
	var wg sync.WaitGroup
	for _, sc := range open {
		wg.Go(func() { sc.closeOrderly(deadline) })
	}
	wg.Wait()
	s.wg.Wait()
	s.refuseLog.Flush(s.log, slog.LevelError, "refused more worker connections than were logged")
	s.closeLog.Flush(s.log, slog.LevelError, "closed more worker connections than were logged")
	return err
}

// closing reports whether Close has begun.
func (s *Server) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		s.mu.Lock()
		closed := s.closed
		busy := err == nil && !closed && s.handshakes.Load() >= int64(s.cfg.MaxHandshakes)
		if err == nil && !closed && !busy {
			s.conns[c] = nil
			s.wg.Add(1)
			s.handshakes.Add(1)
		}
		s.mu.Unlock()
		switch {
		case err != nil:
			if !closed {
				s.log.Error("stopped accepting worker connections", "addr", s.Addr(), "err", err)
			}
			return
		case closed:
			c.Close()
			return
		case busy:
			c.Close()
			s.refuseLog.Log(s.log, slog.LevelError, "refused a worker connection", "remote", c.RemoteAddr().String(),
				"err", fmt.Sprintf("%d connections are shaking hands already, the most allowed: the peers do not say hello, or too many connect at once", s.cfg.MaxHandshakes))
			continue
		}
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
	sc, err := s.handshake(c, remote)
	if err != nil {
		if !errors.Is(err, net.ErrClosed) { // else Close
			s.refuseLog.Log(s.log, slog.LevelError, "refused a worker connection", "remote", remote, "err", err)
		}
		return
	}
	var rc net.Conn = c // what frames are read from
	if pc, ok := newPollConn(c); ok {
		rc = pc
	}
	fr := NewFrameReader(rc, s.cfg.MaxFrameSize)
	deadline := func() {
		if s.cfg.IdleTimeout > 0 {
			rc.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		}
	}
	peer := sc.peer
	defer func() {
		close(sc.readDone)
		sc.Close()
		if s.cfg.OnClose != nil {
			s.cfg.OnClose(sc)
		}
	}()
	if s.cfg.OnOpen != nil {
		s.cfg.OnOpen(sc)
	}
	for {
		deadline()
		kind, payload, err := fr.Read()
		if err != nil {
			s.readError(peer, remote, err)
			return
		}
		s.bytesReceived.Add(frameHeader + int64(len(payload)))
		if sc.closed.Load() {
			// Dropped: after ServerConn.Close it came from the read
			// buffer, and the next read fails; after Server.Close's close
			// frame the dialer is about to hang up.
			continue
		}
		switch kind {
		case FrameClose:
			return
		case FrameHello, FrameRefuse, FrameProof:
			why := "a second hello on the connection"
			switch kind {
			case FrameRefuse:
				why = "a refuse frame from the dialer: only a listener refuses, at the hello"
			case FrameProof:
				why = "a proof frame after the handshake"
			}
			s.closeLog.Log(s.log, slog.LevelError, "closed a worker connection", "peer", peer.Worker, "remote", remote, "err", why)
			return
		}
		s.cfg.Handler(sc, kind, payload)
	}
}

// handshake reads the dialer's hello, within HandshakeTimeout and
// MaxHelloFrame, and answers with this worker's, returning the connection
// for its later frames; a hello it refuses gets a refusal frame saying
// why. With a secret, the answer carries this worker's proof, and the
// dialer's proof must follow within the same HandshakeTimeout; the
// acceptance is an empty proof frame. The connection joins s.conns as
// handshaken before the last answer goes out, and the answer holds its
// write lock, so that a Close from then on sends its close frame after
// it: a dialer that has read the hello (or the acceptance) always gets
// one.
func (s *Server) handshake(c net.Conn, remote string) (*ServerConn, error) {
	defer s.handshakes.Add(-1)
	c.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	kind, payload, err := s.readHandshakeFrame(c, "the hello")
	if err != nil {
		return nil, err
	}
	if kind != FrameHello {
		err := &helloError{reason: fmt.Sprintf("the first frame is %s, not hello", kind)}
		s.refuse(c, true, err.reason)
		return nil, err
	}
	own := *s.hello.Load()
	if len(s.cfg.Secret) > 0 {
		own.Nonce = newNonce()
	}
	peer, err := ParseHello(payload)
	if err == nil {
		err = own.Accept(peer)
	}
	if err != nil {
		var he *helloError
		if errors.As(err, &he) {
			// A hello that does not parse comes from another version, or
			// from something that is not a Gale worker: retrying cannot
			// help either. A peer with a newer assignment than this
			// worker's retries until this worker is reassigned.
			s.refuse(c, !he.behind, he.reason)
		}
		return nil, err
	}
	fw := NewFrameWriter(c, s.cfg.MaxFrameSize)
	answer := FrameHello
	var answerPayload []byte
	if len(s.cfg.Secret) > 0 {
		own.Proof = prove(s.cfg.Secret, roleListener, own, peer.Nonce)
		c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if err := fw.Write(FrameHello, AppendHello(nil, own)); err != nil {
			return nil, fmt.Errorf("sending the hello: %w", err)
		}
		if err := fw.Flush(); err != nil {
			return nil, fmt.Errorf("sending the hello: %w", err)
		}
		kind, proof, err := s.readHandshakeFrame(c, "the proof")
		if err != nil {
			return nil, err
		}
		if kind != FrameProof {
			err := &helloError{mismatch: true, reason: fmt.Sprintf("worker %q %s (it sent a %s frame where its proof belongs)", peer.Worker, noProof, kind)}
			s.refuse(c, true, err.reason)
			return nil, err
		}
		if err := checkProof(s.cfg.Secret, roleDialer, peer, own.Nonce, string(proof)); err != nil {
			s.refuse(c, true, err.(*helloError).reason)
			return nil, err
		}
		answer = FrameProof // accepted
	} else {
		answerPayload = AppendHello(nil, own)
	}
	c.SetReadDeadline(time.Time{})
	sc := &ServerConn{c: c, fw: fw, wlock: make(chan struct{}, 1),
		readDone: make(chan struct{}), peer: peer, remote: remote, timeout: s.cfg.WriteTimeout}
	sc.wlock <- struct{}{}
	defer func() { <-sc.wlock }()
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.conns[c] = sc
	}
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("answering the hello: %w", net.ErrClosed) // Close has closed c
	}
	c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	err = sc.fw.Write(answer, answerPayload)
	if err == nil {
		err = sc.fw.Flush()
	}
	if err != nil {
		sc.closed.Store(true) // for Close, which may have it already
		return nil, fmt.Errorf("sending the %s: %w", answer, err)
	}
	return sc, nil
}

// readHandshakeFrame reads one frame of the handshake (what names it),
// within MaxHelloFrame and the read deadline set; a timeout or a bad
// frame gets the dialer a refusal.
func (s *Server) readHandshakeFrame(c net.Conn, what string) (FrameKind, []byte, error) {
	kind, payload, err := readFirstFrame(c, &s.handshakeBytes)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		err = fmt.Errorf("no %s within %s: the peer is not a Gale worker, or too slow to reach", strings.TrimPrefix(what, "the "), s.cfg.HandshakeTimeout)
		s.refuse(c, false, err.Error())
		return 0, nil, err
	case err != nil:
		var fe *FrameError
		if errors.As(err, &fe) {
			s.refuse(c, true, fe.Reason)
		}
		return 0, nil, fmt.Errorf("reading %s: %w", what, err)
	}
	s.bytesReceived.Add(frameHeader + int64(len(payload)))
	return kind, payload, nil
}

// refuseTimeout bounds how long a refusal may take to send: a few
// kilobytes to a new connection go out at once unless the peer holds its
// receive window shut.
const refuseTimeout = time.Second

// refuse sends the dialer a refusal, best effort, within refuseTimeout:
// its dialer, if a Gale worker, reports the reason and, if permanent,
// stops retrying.
func (s *Server) refuse(c net.Conn, permanent bool, reason string) {
	f := appendRefusal(make([]byte, frameHeader, frameHeader+64+len(reason)), permanent, reason)
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	f[4] = byte(FrameRefuse)
	c.SetWriteDeadline(time.Now().Add(min(refuseTimeout, s.cfg.WriteTimeout)))
	c.Write(f)
}

func (s *Server) readError(peer Hello, remote string, err error) {
	var ne net.Error
	switch {
	case errors.Is(err, net.ErrClosed):
		return // Close, or a failed Write whose caller has the error
	case s.closing():
		return // the dialer may hang up on the close frame before Close closes c
	case errors.Is(err, io.EOF):
		s.closeLog.Log(s.log, slog.LevelInfo, "worker connection ended without a close frame", "peer", peer.Worker, "remote", remote)
	case errors.As(err, &ne) && ne.Timeout():
		s.closeLog.Log(s.log, slog.LevelError, "closed an idle worker connection", "peer", peer.Worker, "remote", remote,
			"err", fmt.Sprintf("no frame for %s: the peer's heartbeats stopped", s.cfg.IdleTimeout))
	default:
		s.closeLog.Log(s.log, slog.LevelError, "closed a worker connection", "peer", peer.Worker, "remote", remote, "err", err)
	}
}

// ErrConnClosed is returned by ServerConn.Write once the connection has
// ended. It wraps net.ErrClosed.
var ErrConnClosed = fmt.Errorf("transport: connection closed: %w", net.ErrClosed)

// ServerConn is a connection a Server accepted and shook hands on. Its
// methods are safe for concurrent use.
type ServerConn struct {
	c       net.Conn
	peer    Hello
	remote  string
	timeout time.Duration
	closed  atomic.Bool
	// readDone is closed when the connection's goroutine has stopped
	// reading.
	readDone chan struct{}

	// wlock, a semaphore of one, serializes Writes and the close frame
	// Server.Close sends. It guards fw alone, and holding it across the
	// socket write is its purpose: frames must not interleave. It is a
	// channel rather than a mutex so that Server.Close can give up waiting
	// for it.
	wlock chan struct{}
	fw    *FrameWriter
}

// Peer is the dialer's hello.
func (sc *ServerConn) Peer() Hello { return sc.peer }

// RemoteAddr is the dialer's address.
func (sc *ServerConn) RemoteAddr() string { return sc.remote }

// Write sends one frame to the dialer and flushes it, waiting at most
// ServerConfig.WriteTimeout for the peer to take it; payload may be reused
// once it returns. Safe for concurrent use.
//
// A caller may send only backpressure and heartbeat frames (the close
// frame is Server.Close's): another kind, or a payload over the frame
// bound, is an error wrapping ErrMalformedFrame and sends nothing. Once the
// connection has ended Write returns ErrConnClosed without blocking. Any
// other failure (the timeout, a reset) may leave a frame half sent, so it
// ends the connection.
func (sc *ServerConn) Write(kind FrameKind, payload []byte) error {
	if kind != FrameBackpressure && kind != FrameHeartbeat {
		return fmt.Errorf("transport: %w: a listener cannot send a %s frame: a dialer takes only backpressure and heartbeat frames", ErrMalformedFrame, kind)
	}
	if sc.closed.Load() {
		return ErrConnClosed
	}
	sc.wlock <- struct{}{}
	defer func() { <-sc.wlock }()
	if sc.closed.Load() {
		return ErrConnClosed
	}
	sc.c.SetWriteDeadline(time.Now().Add(sc.timeout))
	err := sc.fw.Write(kind, payload)
	if err == nil {
		err = sc.fw.Flush()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrMalformedFrame):
		return err // nothing was written
	case sc.closed.Load() || errors.Is(err, net.ErrClosed):
		return ErrConnClosed
	}
	sc.Close()
	return fmt.Errorf("transport: send a %s frame to worker %q at %s: %w", kind, sc.peer.Worker, sc.remote, err)
}

// Close ends the connection, without a close frame: the dialer sees it drop
// and reconnects, warning. No Handler call starts after it, and OnClose
// follows from the connection's goroutine. Idempotent.
func (sc *ServerConn) Close() {
	if !sc.closed.Swap(true) {
		sc.c.Close()
	}
}

// closeOrderly sends the dialer a close frame, then closes the connection.
// Best effort: it gives up at deadline, whether a Write still holds the
// connection, the peer does not take the frame, or it does not hang up.
// Once the frame is out no Write can follow it.
func (sc *ServerConn) closeOrderly(deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case sc.wlock <- struct{}{}:
	case <-t.C:
		sc.Close() // a Write to a peer that does not read holds the connection
		return
	}
	if sc.closed.Swap(true) {
		<-sc.wlock
		return // it has ended already
	}
	sc.c.SetWriteDeadline(deadline)
	err := sc.fw.Write(FrameClose, nil)
	if err == nil {
		err = sc.fw.Flush()
	}
	<-sc.wlock
	if err == nil {
		// Closing with bytes unread would reset the connection, and a
		// reset can discard the frame before it leaves: let the
		// connection's goroutine read, and drop, what comes until the
		// dialer, having read the frame, hangs up.
		select {
		case <-sc.readDone:
		case <-t.C:
		}
	}
	sc.c.Close()
}

// SenderConfig configures the connection to one peer.
type SenderConfig struct {
	Hello Hello // this worker's
	Addr  string
	// Secret, if set, is the topology's secret, which the listener must
	// prove it holds, and this worker proves in turn (see the handshake
	// above).
	Secret       []byte
	MaxFrameSize int // bounds frames both ways; ≤ 0: DefaultMaxFrameSize
	// Heartbeat is how long the connection may go without a frame before
	// the sender sends a heartbeat; 0 means never.
	Heartbeat time.Duration
	// MinBackoff and MaxBackoff bound the wait between connection attempts,
	// which doubles from the first to the second, with jitter. Defaults:
	// 10 ms and 1 s.
	MinBackoff, MaxBackoff time.Duration
	// DialTimeout bounds one connection attempt: the dial and the
	// listener's answers in the handshake. It is not tied to the backoff,
	// so that a short backoff does not give up on a listener that is slow
	// to answer because its machine is busy, or on a connection whose
	// first SYN was lost (the kernel sends it again after 1 s). Close and
	// Redirect cut an attempt short. ≤ 0: 10 s, as long as a listener
	// waits for a dialer's hello (ServerConfig.HandshakeTimeout).
	DialTimeout time.Duration
	QueueLen    int // frames waiting to be sent; default 64
	// Linger is how long the sender may hold frames, after the first one
	// arrives, for more to fill the same write; 0 writes at once.
	Linger time.Duration
	// Release, if set, gets back each queued frame's payload once the
	// sender is done with it (written, or lost with the connection), so
	// the caller can reuse the buffer. Called from the sender's goroutine.
	Release func(payload []byte)
	// QuietAfterClose is how long after the listener closed the connection
	// with a close frame (its worker is shutting down) failed connection
	// attempts log at DEBUG rather than WARN; the first attempt to fail
	// after it warns that the peer has been down that long. A successful
	// connection ends it at once. ≤ 0: 10 s.
	QuietAfterClose time.Duration
	// OnConnect, if set, is called from the sender's goroutine after each
	// successful handshake, the first and every reconnection, before any
	// queued frame is written on the new connection. Nothing drains the
	// queue until it returns, so it must not wait on Send.
	OnConnect func()
	// OnRefused, if set, is called once, from the sender's goroutine, with
	// the *RefusedError that made the sender stop connecting: a hello
	// refused, by either side, for a reason retrying cannot help
	// (ErrMismatch). The sender has logged it; its owner decides what to
	// do (a worker stops, so that it is restarted with the right
	// topology). Send keeps queuing until the queue is full, then blocks;
	// Close works as ever.
	OnRefused func(err error)
	// Handler, if set, gets every backpressure frame the listener sends,
	// from the connection's reader goroutine; payload is valid until it
	// returns. Without it they are dropped. It must not block for long (in
	// particular not on Send with the queue full): the connection reads
	// nothing meanwhile, and a reconnection or Close waits for it.
	Handler func(kind FrameKind, payload []byte)
	Logger  *slog.Logger // nil: slog.Default()
}

// Frame is a frame waiting to be sent.
type Frame struct {
	Kind    FrameKind
	Payload []byte
}

// Sender keeps a connection to one peer, reconnecting with backoff, sends
// the frames given to Send in order, and passes the frames the peer sends
// back to SenderConfig.Handler.
type Sender struct {
	cfg  SenderConfig
	log  *slog.Logger
	q    chan Frame
	quit chan struct{}
	done chan struct{}
	once sync.Once
	// wake cuts a wait between connection attempts short: Redirect.
	wake chan struct{}
	// life ends MaxBackoff after Close, and with it a connection attempt
	// under way.
	life    context.Context
	endLife context.CancelFunc

	// addr and hello are the target of the connection being made or up,
	// owned by run's goroutine, which copies them from mu.
	addr  string
	hello Hello

	mu struct {
		sync.Mutex
		addr  string
		hello Hello
		// gen counts the Redirects; conn is the connection up, if any;
		// abort ends the connection attempt under way, if any.
		gen   uint64
		conn  net.Conn
		abort context.CancelFunc
	}

	connected             atomic.Bool
	bytesSent, framesSent atomic.Int64
	// endLog rate-limits the lines on connections' ends, which the peer
	// can cause as fast as the sender reconnects.
	endLog *ratelog.Limiter
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
	if cfg.QuietAfterClose <= 0 {
		cfg.QuietAfterClose = defaultQuietAfterClose
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = defaultDialTimeout
	}
	s := &Sender{cfg: cfg, log: cfg.Logger, q: make(chan Frame, cfg.QueueLen),
		quit: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1), endLog: ratelog.New(0, 0, nil)}
	s.life, s.endLife = context.WithCancel(context.Background())
	s.mu.addr, s.mu.hello = cfg.Addr, cfg.Hello
	if s.log == nil {
		s.log = slog.Default()
	}
	go s.run()
	return s
}

// defaultQuietAfterClose is SenderConfig.QuietAfterClose's default.
const defaultQuietAfterClose = 10 * time.Second

// defaultDialTimeout is SenderConfig.DialTimeout's default.
const defaultDialTimeout = defaultHandshakeTimeout

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
	case s.q <- Frame{kind, payload}:
		return nil
	case <-s.quit:
		return ErrSenderClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Queue is the sender's queue, for a caller that must select on room in
// it alongside other events (a spout draining its completions while it
// waits). Only Send checks for a closed sender: put nothing on the queue
// after Close.
func (s *Sender) Queue() chan<- Frame { return s.q }

// Close sends what is queued if connected, then a close frame, and stops.
// It gives a peer that does not read MaxBackoff to take them, and a
// connection attempt under way as long to succeed, and send them. No
// callback runs after Close returns.
func (s *Sender) Close() {
	s.once.Do(func() {
		close(s.quit)
		end := time.AfterFunc(s.cfg.MaxBackoff, s.endLife)
		<-s.done
		end.Stop()
		s.endLife()
	})
	<-s.done
}

// Addr is the address the sender connects to: SenderConfig.Addr, or the
// last Redirect's. Safe for concurrent use.
func (s *Sender) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.addr
}

// SetHello makes h the hello of the sender's next handshakes; a
// connection already up is left as it is. Safe for concurrent use.
func (s *Sender) SetHello(h Hello) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.hello = h
}

// Redirect points the sender at addr, with hello h: the peer has moved.
// The connection up, if any, is dropped, as is a wait between attempts
// and a connection attempt under way to the old address, whatever it
// would have come to, a refusal included; the sender connects to addr at
// once. Frames queued stay queued and go to addr; frames written to
// the dropped connection are lost with it, as with any broken connection.
// A sender that has stopped connecting after a refusal (OnRefused) stays
// stopped. Safe for concurrent use.
func (s *Sender) Redirect(addr string, h Hello) {
	s.mu.Lock()
	s.mu.addr, s.mu.hello = addr, h
	s.mu.gen++
	c, abort := s.mu.conn, s.mu.abort
	s.mu.Unlock()
	if c != nil {
		c.Close() // a write blocked on a peer that does not read ends too
	}
	if abort != nil {
		abort()
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// target copies the address and hello to connect with for run's
// goroutine, and returns their generation and the context of an attempt
// to connect to them: it ends after DialTimeout, at a Redirect, and
// MaxBackoff after Close. The caller must call the CancelFunc.
func (s *Sender) target() (uint64, context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(s.life, s.cfg.DialTimeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addr, s.hello = s.mu.addr, s.mu.hello
	s.mu.abort = cancel
	return s.mu.gen, ctx, cancel
}

// track records c as the connection up, unless a Redirect has come since
// generation gen (c is then to the old address); nil clears it.
func (s *Sender) track(c net.Conn, gen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c != nil && s.mu.gen != gen {
		return false
	}
	s.mu.conn = c
	return true
}

// stopping reports whether Close has been called.
func (s *Sender) stopping() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// redirected reports whether a Redirect has come since generation gen.
func (s *Sender) redirected(gen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.gen != gen
}

// Connected reports whether a handshaken connection is up.
func (s *Sender) Connected() bool { return s.connected.Load() }

// BytesSent is the number of bytes of frames sent so far, headers and
// payloads, hellos and heartbeats included. A frame counts once a flush
// that carried it has succeeded. Safe for concurrent use.
func (s *Sender) BytesSent() int64 { return s.bytesSent.Load() }

// FramesSent is the number of frames sent so far, counted as BytesSent.
func (s *Sender) FramesSent() int64 { return s.framesSent.Load() }

func (s *Sender) run() {
	defer close(s.done)
	defer func() {
		s.endLog.Flush(s.log, slog.LevelWarn, "lost more connections to a peer worker than were logged", "addr", s.addr)
	}()
	// fails counts the waits since the last success or reset: the next
	// is wait.Delay(fails+1), with jitter.
	wait := backoff.Doubling{Min: s.cfg.MinBackoff, Max: s.cfg.MaxBackoff}
	fails := 0
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	// closedAt is when the listener last closed the connection with a
	// close frame, if no connection has succeeded since and the quiet
	// period has not ended; zero otherwise.
	var closedAt time.Time
	for {
		gen, ctx, cancel := s.target()
		c, fr, fw, err := s.connect(ctx)
		cancel()
		if err != nil && s.stopping() {
			return // the attempt was cut short by Close, or ended with it
		}
		if s.redirected(gen) {
			// The peer moved while this attempt was under way: whatever
			// answered at the old address does not count.
			if c != nil {
				c.Close()
			}
			fails, closedAt = 0, time.Time{}
			continue
		}
		if errors.Is(err, ErrMismatch) {
			s.log.Error("cannot connect to a peer worker; not retrying, since retrying cannot help", "addr", s.addr, "err", err)
			if s.cfg.OnRefused != nil {
				s.cfg.OnRefused(err)
			}
			<-s.quit
			return
		}
		if err != nil {
			closedAt = s.connectFailed(err, wait.Delay(fails+1), closedAt)
		} else {
			closedAt = time.Time{}
			if !s.track(c, gen) {
				c.Close() // redirected since the attempt began
				fails = 0
				continue
			}
			stop, end := s.session(c, fr, fw)
			s.track(nil, gen)
			if stop {
				return
			}
			switch {
			case s.redirected(gen):
				s.endLog.Log(s.log, slog.LevelInfo, "peer worker moved; connecting to its new address", "from", s.addr, "to", s.Addr())
				fails = 0
				continue
			case errors.Is(end, errPeerClosed):
				s.endLog.Log(s.log, slog.LevelInfo, "peer worker closed the connection: it is shutting down", "addr", s.addr)
				closedAt = time.Now()
				fails = 0
				continue // it may be restarting: try it again at once
			case errors.Is(end, errListenerFrame) || errors.Is(end, ErrMalformedFrame):
				// A peer that breaks the protocol: back off, as for one
				// that refuses the connection, rather than spin.
				s.endLog.Log(s.log, slog.LevelError, "broke the connection to a peer worker; reconnecting", "addr", s.addr, "err", end)
			default:
				// A peer that went away: try it again at once.
				s.endLog.Log(s.log, slog.LevelWarn, "lost the connection to a peer worker; reconnecting", "addr", s.addr, "err", end)
				fails = 0
				continue
			}
		}
		d := wait.Delay(fails + 1)
		timer.Reset(d/2 + rand.N(d/2+1))
		select {
		case <-timer.C:
		case <-s.wake:
			timer.Stop() // no stale tick after Stop since Go 1.23
			if s.redirected(gen) {
				fails, closedAt = 0, time.Time{}
				continue
			}
		case <-s.quit:
			return
		}
		fails++
	}
}

// connectFailed logs a failed connection attempt and returns closedAt as
// run keeps it. After an orderly close (closedAt set) the attempts are
// expected, and logged at DEBUG, for QuietAfterClose; the first to fail
// after that warns that the peer has been down that long, and ends the
// quiet period. A hello the sender refuses always warns: whatever answers
// on the address is not the peer that shut down.
func (s *Sender) connectFailed(err error, delay time.Duration, closedAt time.Time) time.Time {
	down := time.Since(closedAt)
	switch {
	case closedAt.IsZero() || errors.Is(err, ErrBadHello):
		s.log.Warn("cannot connect to a peer worker; retrying", "addr", s.addr, "err", err, "in", delay)
	case down < s.cfg.QuietAfterClose:
		s.log.Debug("cannot connect to a peer worker; retrying", "addr", s.addr, "err", err, "in", delay)
	default:
		s.log.Warn("peer worker has been down since it closed the connection; retrying", "addr", s.addr,
			"for", down.Round(time.Millisecond), "err", err, "in", delay)
		return time.Time{}
	}
	return closedAt
}

// connect dials the peer and shakes hands, within ctx. The reader it
// returns has read the peer's hello (and, with a secret, its acceptance)
// and nothing after it.
func (s *Sender) connect(ctx context.Context) (net.Conn, *FrameReader, *FrameWriter, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return nil, nil, nil, err
	}
	// The handshake's reads and writes end with ctx: by its deadline, or
	// at once when it is cancelled.
	if deadline, ok := ctx.Deadline(); ok {
		c.SetDeadline(deadline)
	}
	cut := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	own := s.hello
	if len(s.cfg.Secret) > 0 {
		own.Nonce = newNonce()
	}
	fw := NewFrameWriter(c, s.cfg.MaxFrameSize)
	hello := AppendHello(nil, own)
	if err = fw.Write(FrameHello, hello); err == nil {
		err = fw.Flush()
	}
	if err == nil {
		s.bytesSent.Add(frameHeader + int64(len(hello)))
		s.framesSent.Add(1)
		var peer Hello
		peer, err = s.checkAnswer(c, own)
		if err == nil && len(s.cfg.Secret) > 0 {
			err = s.prove(c, fw, own, peer)
		}
	}
	if !cut() && err == nil {
		err = ctx.Err() // the deadline may be in place: the connection is no good
	}
	c.SetDeadline(time.Time{})
	if err != nil {
		c.Close()
		var re *RefusedError
		if errors.As(err, &re) {
			return nil, nil, nil, err // it names the address
		}
		return nil, nil, nil, fmt.Errorf("handshake with %s: %w", s.addr, err)
	}
	return c, NewFrameReader(c, s.cfg.MaxFrameSize), fw, nil
}

// checkAnswer reads the listener's answer to the hello own: its own
// hello, which must match, and with a secret prove it, or a refusal (a
// *RefusedError).
func (s *Sender) checkAnswer(c net.Conn, own Hello) (Hello, error) {
	kind, payload, err := readFirstFrame(c, nil)
	switch {
	case err != nil:
		return Hello{}, err
	case kind == FrameRefuse:
		return Hello{}, parseRefusal(s.addr, payload)
	case kind != FrameHello:
		return Hello{}, &helloError{reason: fmt.Sprintf("the peer answered with a %s frame", kind)}
	}
	peer, err := ParseHello(payload)
	if err == nil {
		err = own.Accept(peer)
	}
	if err == nil && len(s.cfg.Secret) > 0 {
		err = checkProof(s.cfg.Secret, roleListener, peer, own.Nonce, peer.Proof)
	}
	var he *helloError
	if errors.As(err, &he) && he.mismatch {
		return Hello{}, &RefusedError{Addr: s.addr, Reason: he.reason, Permanent: true}
	}
	return peer, err
}

// prove sends the listener this worker's proof, answering the nonce of
// its hello peer, and reads its acceptance or refusal.
func (s *Sender) prove(c net.Conn, fw *FrameWriter, own, peer Hello) error {
	proof := prove(s.cfg.Secret, roleDialer, own, peer.Nonce)
	err := fw.Write(FrameProof, []byte(proof))
	if err == nil {
		err = fw.Flush()
	}
	if err != nil {
		return err
	}
	s.bytesSent.Add(frameHeader + int64(len(proof)))
	s.framesSent.Add(1)
	kind, payload, err := readFirstFrame(c, nil)
	switch {
	case err != nil:
		return err
	case kind == FrameRefuse:
		return parseRefusal(s.addr, payload)
	case kind != FrameProof || len(payload) != 0:
		return &helloError{reason: fmt.Sprintf("the peer answered the proof with a %s frame of %d bytes, not an empty proof frame", kind, len(payload))}
	}
	return nil
}

// errListenerFrame is wrapped by the error for a frame a listener may not
// send.
var errListenerFrame = errors.New("a listener sends only backpressure and heartbeat frames, then a close frame")

// errPeerClosed ends a connection on which the listener sent a close frame.
var errPeerClosed = errors.New("transport: the peer worker closed the connection: it is shutting down")

// drainTimeout bounds how long a session whose write failed waits for its
// reader to take what the peer sent before the failure: on a busy machine
// a reader behind a full buffer needs a while to reach a close frame at
// its end.
const drainTimeout = time.Second

// session runs one handshaken connection until the sender is closed (stop)
// or the connection ends, and returns why it ended: errPeerClosed for an
// orderly close, an error wrapping errListenerFrame or ErrMalformedFrame
// for a listener that broke the protocol, else the failure.
func (s *Sender) session(c net.Conn, fr *FrameReader, fw *FrameWriter) (stop bool, end error) {
	s.connected.Store(true)
	if s.cfg.OnConnect != nil {
		s.cfg.OnConnect()
	}
	// The reader passes the peer's frames to the Handler, and shows at once
	// when the peer goes away, rather than at the next write.
	var readErr error
	broken := make(chan struct{})
	go func() {
		defer close(broken)
		readErr = s.read(c, fr)
	}()
	// Close must not wait forever on a write to a peer that stopped
	// reading: on quit, give writes MaxBackoff to finish.
	pumped, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-s.quit:
			c.SetWriteDeadline(time.Now().Add(s.cfg.MaxBackoff))
		case <-pumped:
		}
	}()
	stop, err := s.pump(fw, broken)
	s.connected.Store(false)
	close(pumped)
	<-watched
	if !stop && err != nil {
		// A write failed, most likely because the peer has gone: let the
		// reader take what the peer sent first, a close frame say, which
		// tells why.
		c.SetReadDeadline(time.Now().Add(drainTimeout))
		<-broken
	}
	c.Close()
	<-broken
	select {
	case <-s.quit:
		return true, nil // stop, or a write cut short by Close
	default:
	}
	if err == nil || errors.Is(readErr, errPeerClosed) ||
		errors.Is(readErr, errListenerFrame) || errors.Is(readErr, ErrMalformedFrame) {
		return false, readErr
	}
	return false, err
}

// read passes the peer's backpressure frames to the Handler until the
// connection ends, and returns why: errPeerClosed after a close frame, or
// the failure. A close frame, or a frame the peer may not send, closes the
// connection, which also ends a write blocked on it.
func (s *Sender) read(c net.Conn, fr *FrameReader) error {
	for {
		kind, payload, err := fr.Read()
		if err != nil {
			if errors.Is(err, ErrMalformedFrame) {
				c.Close()
			}
			return err
		}
		switch kind {
		case FrameBackpressure:
			if s.cfg.Handler != nil {
				s.cfg.Handler(kind, payload)
			}
		case FrameHeartbeat:
		case FrameClose:
			c.Close() // nothing follows
			return errPeerClosed
		default:
			c.Close()
			return fmt.Errorf("transport: the peer sent a %s frame: %w", kind, errListenerFrame)
		}
	}
}

// coalesceBytes is how much a lingering sender gathers before it writes.
const coalesceBytes = 32 << 10

// pump sends queued frames until the sender is closed (stop) or the
// connection breaks: err is the write's error, or nil if the reader saw
// the break.
func (s *Sender) pump(fw *FrameWriter, broken <-chan struct{}) (stop bool, err error) {
	var hb <-chan time.Time
	var hbTimer *time.Timer
	if s.cfg.Heartbeat > 0 {
		hbTimer = time.NewTimer(s.cfg.Heartbeat)
		defer hbTimer.Stop()
		hb = hbTimer.C
	}
	var pendBytes, pendFrames int64 // written to fw, not yet flushed
	var linger *time.Timer
	write := func(kind FrameKind, payload []byte) error {
		err := fw.Write(kind, payload)
		if s.cfg.Release != nil && payload != nil {
			s.cfg.Release(payload) // copied into the buffer or written out
		}
		switch {
		case err == nil:
			pendBytes += frameHeader + int64(len(payload))
			pendFrames++
		case errors.Is(err, ErrMalformedFrame):
			s.log.Error("dropped a frame for a peer worker", "addr", s.addr, "err", err)
			return nil // the connection is fine
		}
		return err
	}
	flush := func() error {
		if err := fw.Flush(); err != nil {
			return err
		}
		s.bytesSent.Add(pendBytes)
		s.framesSent.Add(pendFrames)
		pendBytes, pendFrames = 0, 0
		if hbTimer != nil {
			hbTimer.Reset(s.cfg.Heartbeat)
		}
		return nil
	}
	for {
		select {
		case f := <-s.q:
			if err := write(f.Kind, f.Payload); err != nil {
				return false, err
			}
			// Take what else is queued into the same flush. A write to a
			// socket costs about as much per call as per kilobyte (on
			// loopback it runs the receiver's side of TCP too), so with
			// Linger set, wait up to that long for coalesceBytes to
			// gather before writing.
			for n := len(s.q); n > 0; n-- {
				f := <-s.q
				if err := write(f.Kind, f.Payload); err != nil {
					return false, err
				}
			}
			if s.cfg.Linger > 0 && fw.Buffered() < coalesceBytes {
				if linger == nil {
					linger = time.NewTimer(s.cfg.Linger)
					defer linger.Stop()
				} else {
					linger.Reset(s.cfg.Linger)
				}
			gather:
				for fw.Buffered() < coalesceBytes {
					select {
					case f := <-s.q:
						if err := write(f.Kind, f.Payload); err != nil {
							return false, err
						}
					case <-linger.C:
						break gather
					case <-s.quit:
						break gather
					}
				}
				linger.Stop()
			}
			if err := flush(); err != nil {
				return false, err
			}
		case <-hb:
			if err := write(FrameHeartbeat, nil); err != nil {
				return false, err
			}
			if err := flush(); err != nil {
				return false, err
			}
		case <-broken:
			return false, nil
		case <-s.quit:
			for n := len(s.q); n > 0; n-- {
				f := <-s.q
				if write(f.Kind, f.Payload) != nil {
					return true, nil
				}
			}
			if write(FrameClose, nil) == nil {
				flush()
			}
			return true, nil
		}
	}
}
