package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/testutil"
)

// recv returns the next value from ch, failing the test after 10 s.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// dialRaw connects to addr as a hand-written dialer and sends its hello
// followed by extra bytes.
func dialRaw(t *testing.T, addr, worker string, extra []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	msg := append(encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, hello(worker))}), extra...)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	return c
}

// The listener answers every data frame with credits, and sends a heartbeat
// and a first grant as soon as the connection opens: the dialer's Handler
// gets exactly those credits, in order, and no heartbeat.
func TestReverseCredits(t *testing.T) {
	const n, numDests = 500, 7
	creditsFor := func(i uint32) []Credit {
		cs := []Credit{{Dest: int32(i % numDests), N: i + 1}}
		if i%3 == 0 {
			cs = append(cs, Credit{Dest: int32((i + 1) % numDests), N: 1})
		}
		return cs
	}
	first := []Credit{{Dest: 0, N: 99}, {Dest: numDests - 1, N: 1}}

	lg := newLogs()
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Logger: lg.logger(),
		OnOpen: func(c *ServerConn) {
			for _, kind := range []FrameKind{FrameData, FrameHello, FrameClose} {
				if err := c.Write(kind, nil); !errors.Is(err, ErrMalformedFrame) {
					t.Errorf("Write of a %s frame to a dialer: %v, want ErrMalformedFrame", kind, err)
				}
			}
			// Hard on the heels of the hello: the dialer must not lose
			// these while it reads the hello.
			if err := c.Write(FrameHeartbeat, nil); err != nil {
				t.Errorf("Write(heartbeat): %v", err)
			}
			if err := c.Write(FrameBackpressure, AppendCredits(nil, first)); err != nil {
				t.Errorf("Write(first credits): %v", err)
			}
		},
		Handler: func(c *ServerConn, kind FrameKind, p []byte) {
			if kind != FrameData {
				return
			}
			if err := c.Write(FrameBackpressure, AppendCredits(nil, creditsFor(binary.BigEndian.Uint32(p)))); err != nil {
				t.Errorf("Write(credits): %v", err)
			}
		}})

	grants := make(chan []Credit, n+1)
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: lg.logger(),
		Handler: func(kind FrameKind, p []byte) {
			if kind != FrameBackpressure {
				t.Errorf("Handler got a %s frame, want only backpressure", kind)
				return
			}
			cs, err := ParseCredits(p, numDests, nil)
			if err != nil {
				t.Errorf("ParseCredits: %v", err)
			}
			grants <- cs
		}})
	defer snd.Close()

	if got := recv(t, grants, "the first credits"); !slices.Equal(got, first) {
		t.Fatalf("first credits %v, want %v (sent from OnOpen)", got, first)
	}
	if !snd.Connected() {
		t.Error("Connected() = false on a connection that carries credits")
	}
	sendData(t, snd, 0, n)
	for i := range uint32(n) {
		got := recv(t, grants, fmt.Sprintf("the credits for frame %d", i))
		if want := creditsFor(i); !slices.Equal(got, want) {
			t.Fatalf("credits #%d: got %v, want %v", i, got, want)
		}
	}
	snd.Close()
	select {
	case cs := <-grants:
		t.Errorf("unexpected credits %v", cs)
	default:
	}
}

// connEvents records a server's callbacks and checks their order.
type connEvents struct {
	t      *testing.T
	mu     sync.Mutex
	opens  map[*ServerConn]int
	closes map[*ServerConn]int
	opened chan *ServerConn
	closed chan *ServerConn
}

func newConnEvents(t *testing.T) *connEvents {
	return &connEvents{t: t, opens: map[*ServerConn]int{}, closes: map[*ServerConn]int{},
		opened: make(chan *ServerConn, 16), closed: make(chan *ServerConn, 16)}
}

func (e *connEvents) config(cfg ServerConfig) ServerConfig {
	cfg.OnOpen = func(c *ServerConn) {
		e.mu.Lock()
		e.opens[c]++
		e.mu.Unlock()
		e.opened <- c
	}
	handler := cfg.Handler
	cfg.Handler = func(c *ServerConn, kind FrameKind, p []byte) {
		e.mu.Lock()
		opens, closes := e.opens[c], e.closes[c]
		e.mu.Unlock()
		if opens != 1 || closes != 0 {
			e.t.Errorf("Handler(%s) after %d OnOpen and %d OnClose, want 1 and 0", kind, opens, closes)
		}
		if handler != nil {
			handler(c, kind, p)
		}
	}
	cfg.OnClose = func(c *ServerConn) {
		e.mu.Lock()
		e.closes[c]++
		opens := e.opens[c]
		e.mu.Unlock()
		if opens != 1 {
			e.t.Errorf("OnClose after %d OnOpen, want 1", opens)
		}
		if err := c.Write(FrameHeartbeat, nil); !errors.Is(err, ErrConnClosed) {
			e.t.Errorf("Write in OnClose: %v, want ErrConnClosed", err)
		}
		e.closed <- c
	}
	return cfg
}

// check reports connections whose callbacks did not run exactly once each.
func (e *connEvents) check(wantConns int) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.opens) != wantConns {
		e.t.Errorf("OnOpen for %d connections, want %d", len(e.opens), wantConns)
	}
	for c, n := range e.opens {
		if n != 1 || e.closes[c] != 1 {
			e.t.Errorf("connection from %s: %d OnOpen, %d OnClose, want 1 each", c.Peer().Worker, n, e.closes[c])
		}
	}
}

// OnOpen and OnClose run once each per connection however it ends, and
// once OnClose has run Write fails at once with ErrConnClosed.
func TestServerConnLifecycle(t *testing.T) {
	helloOf := func(w string) []byte { return encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, hello(w))}) }
	data := encodeFrames(t, 0, frame{FrameData, []byte{1, 2, 3}})
	big := make([]byte, 1<<20)
	var closedOnce atomic.Bool // for "ServerConn.Close in the Handler"
	tests := []struct {
		name string
		cfg  ServerConfig
		end  func(t *testing.T, srv *Server, e *connEvents) // from OnOpen on, end the connection
		log  []string                                       // logged as it ends, if set
	}{
		{name: "close frame", end: func(t *testing.T, srv *Server, e *connEvents) {
			snd := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: newLogs().logger()})
			sendData(t, snd, 0, 3)
			recv(t, e.opened, "OnOpen")
			snd.Close()
		}},
		{name: "EOF", log: []string{"ended without a close frame", "peer=raw"}, end: func(t *testing.T, srv *Server, e *connEvents) {
			c := dialRaw(t, srv.Addr(), "raw", data)
			recv(t, e.opened, "OnOpen")
			c.(*net.TCPConn).CloseWrite() // not Close: unread bytes would make it a reset
		}},
		{name: "cut mid-frame", log: []string{"closed a worker connection", "unexpected EOF"}, end: func(t *testing.T, srv *Server, e *connEvents) {
			c := dialRaw(t, srv.Addr(), "raw", data[:len(data)-1])
			recv(t, e.opened, "OnOpen")
			c.(*net.TCPConn).CloseWrite()
		}},
		{name: "bad frame", log: []string{"closed a worker connection", "unknown frame kind 77"}, end: func(t *testing.T, srv *Server, e *connEvents) {
			dialRaw(t, srv.Addr(), "raw", []byte{0, 0, 0, 1, 77})
			recv(t, e.opened, "OnOpen")
		}},
		{name: "second hello", log: []string{"closed a worker connection", "second hello"}, end: func(t *testing.T, srv *Server, e *connEvents) {
			dialRaw(t, srv.Addr(), "raw", helloOf("raw"))
			recv(t, e.opened, "OnOpen")
		}},
		{name: "idle timeout", cfg: ServerConfig{IdleTimeout: 300 * time.Millisecond}, // also bounds the hello's arrival log: []string{"closed an idle worker connection"},
			end: func(t *testing.T, srv *Server, e *connEvents) {
				dialRaw(t, srv.Addr(), "raw", nil)
				recv(t, e.opened, "OnOpen")
			}},
		{name: "Server.Close", end: func(t *testing.T, srv *Server, e *connEvents) {
			dialRaw(t, srv.Addr(), "raw", nil)
			recv(t, e.opened, "OnOpen")
			srv.Close()
		}},
		{name: "ServerConn.Close in the Handler",
			cfg: ServerConfig{Handler: func(c *ServerConn, kind FrameKind, _ []byte) {
				if closedOnce.Swap(true) {
					t.Errorf("Handler(%s) after ServerConn.Close", kind)
				}
				c.Close()
				c.Close() // idempotent
			}},
			end: func(t *testing.T, srv *Server, e *connEvents) {
				// The second frame is in the server's read buffer when
				// the first one's Handler closes the connection.
				dialRaw(t, srv.Addr(), "raw", append(bytes.Clone(data), data...))
				recv(t, e.opened, "OnOpen")
			}},
		{name: "write timeout", cfg: ServerConfig{WriteTimeout: 50 * time.Millisecond}, end: func(t *testing.T, srv *Server, e *connEvents) {
			dialRaw(t, srv.Addr(), "raw", nil) // and never reads
			c := recv(t, e.opened, "OnOpen")
			for {
				err := c.Write(FrameBackpressure, big)
				if err == nil {
					continue
				}
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("Write to a peer that does not read: %v, want a deadline error", err)
				}
				return
			}
		}},
		{name: "Server.Close during a blocked Write", end: func(t *testing.T, srv *Server, e *connEvents) {
			dialRaw(t, srv.Addr(), "raw", nil) // and never reads
			c := recv(t, e.opened, "OnOpen")
			wrote, failed := make(chan struct{}, 1), make(chan error, 1)
			go func() {
				for {
					if err := c.Write(FrameBackpressure, big); err != nil {
						failed <- err
						return
					}
					select {
					case wrote <- struct{}{}:
					default:
					}
				}
			}()
			recv(t, wrote, "a first Write")
			start := time.Now()
			srv.Close()
			// It gives up on the close frame after closeFrameTimeout; the
			// margin is for this shared host's stalls.
			if d := time.Since(start); d > 20*closeFrameTimeout {
				t.Errorf("Server.Close took %v with a Write blocked, want about %v", d, closeFrameTimeout)
			}
			if err := recv(t, failed, "the blocked Write to fail"); !errors.Is(err, ErrConnClosed) {
				t.Errorf("Write during Server.Close: %v, want ErrConnClosed", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, lg := newConnEvents(t), newLogs()
			cfg := tt.cfg
			cfg.Hello, cfg.Logger = hello("b"), lg.logger()
			if cfg.WriteTimeout == 0 {
				cfg.WriteTimeout = time.Minute // a Write that blocks would stand out
			}
			if cfg.Handler == nil {
				cfg.Handler = func(*ServerConn, FrameKind, []byte) {}
			}
			srv := listen(t, "127.0.0.1:0", e.config(cfg))
			tt.end(t, srv, e)
			c := recv(t, e.closed, "OnClose")
			if tt.log != nil {
				lg.wait(t, tt.log...)
			}

			wrote := make(chan error, 1)
			go func() { wrote <- c.Write(FrameBackpressure, AppendCredits(nil, []Credit{{Dest: 1, N: 1}})) }()
			if err := recv(t, wrote, "Write after OnClose"); !errors.Is(err, ErrConnClosed) || !errors.Is(err, net.ErrClosed) {
				t.Errorf("Write after OnClose: %v, want ErrConnClosed wrapping net.ErrClosed", err)
			}
			c.Close() // idempotent, also after the end
			srv.Close()
			e.check(1)
		})
	}
}

// A refused dialer gets no callbacks.
func TestServerCallbacksSkipRefused(t *testing.T) {
	e, lg := newConnEvents(t), newLogs()
	srv := listen(t, "127.0.0.1:0", e.config(ServerConfig{Hello: hello("b"), Logger: lg.logger()}))
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, Hello{Version: ProtocolVersion, Topology: "wc-2", Worker: "x", Types: 42})}))
	lg.wait(t, "refused a worker connection", `runs topology "wc-2"`)
	srv.Close()
	e.check(0)
}

// OnConnect runs again when the sender reconnects to a new listener on
// the same address, and before any frame reaches it.
func TestOnConnectBeforeFrames(t *testing.T) {
	lg := newLogs()
	var connects atomic.Int32
	type seen struct {
		connects int32
		frame    uint32
	}
	seenBy := func(ch chan seen) func(*ServerConn, FrameKind, []byte) {
		return func(_ *ServerConn, kind FrameKind, p []byte) {
			if kind == FrameData {
				ch <- seen{connects.Load(), binary.BigEndian.Uint32(p)}
			}
		}
	}
	seen1, seen2 := make(chan seen, 16), make(chan seen, 16)
	opened2 := make(chan struct{})
	srv1 := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Logger: lg.logger(), Handler: seenBy(seen1)})
	addr := srv1.Addr()
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: addr, Logger: lg.logger(), MaxBackoff: 50 * time.Millisecond,
		OnConnect: func() {
			if connects.Load() == 1 {
				// Give frames written too early time to reach the new
				// listener: its Handler would see the old count.
				select {
				case <-opened2:
				case <-time.After(10 * time.Second):
					t.Error("the new listener's OnOpen did not come")
				}
			}
			connects.Add(1)
		}})
	defer snd.Close()

	sendData(t, snd, 0, 5)
	for i := range uint32(5) {
		if s := recv(t, seen1, "a frame"); s != (seen{1, i}) {
			t.Fatalf("first listener saw %+v, want frame %d after OnConnect #1", s, i)
		}
	}
	if !snd.Connected() {
		t.Error("Connected() = false with frames arriving")
	}
	srv1.Close()
	lg.wait(t, logShuttingDown, addr)
	testutil.Eventually(t, 10*time.Second, "Connected() is false", func() bool { return !snd.Connected() })

	// Queued while there is no connection: the first frames the new
	// connection carries.
	sendData(t, snd, 100, 105)
	listen(t, addr, ServerConfig{Hello: hello("b"), Logger: lg.logger(), Handler: seenBy(seen2),
		OnOpen: func(*ServerConn) { close(opened2) }})
	for i := range uint32(5) {
		if s := recv(t, seen2, "a frame"); s != (seen{2, 100 + i}) {
			t.Fatalf("new listener saw %+v, want frame %d after OnConnect #2", s, 100+i)
		}
	}
	if !snd.Connected() {
		t.Error("Connected() = false after the reconnection")
	}
}

// fakeListener shakes hands as a listener would, then sends bad bytes.
func fakeListener(t *testing.T, bad []byte) (addr string, accepted <-chan struct{}) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	msg := append(encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, hello("fake"))}), bad...)
	acc := make(chan struct{}, 16)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case acc <- struct{}{}:
			default: // the test waits for two; more come as the sender retries
			}
			wg.Go(func() {
				defer c.Close()
				fr := NewFrameReader(c, 0)
				if kind, _, err := fr.Read(); err != nil || kind != FrameHello {
					t.Errorf("fake listener: first frame %v, %v, want a hello", kind, err)
					return
				}
				if _, err := c.Write(msg); err != nil {
					return
				}
				for {
					if _, _, err := fr.Read(); err != nil {
						return // the dialer closed
					}
				}
			})
		}
	})
	return ln.Addr().String(), acc
}

// A listener that sends a frame a dialer does not take loses the
// connection with a logged error, and the sender reconnects.
func TestSenderBreaksOnListenerFrame(t *testing.T) {
	for _, tt := range []struct {
		name string
		bad  []byte
		log  string
	}{
		{"data", encodeFrames(t, 0, frame{FrameData, []byte{1}}), "sent a data frame"},
		{"hello", encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, hello("fake"))}), "sent a hello frame"},
		{"unknown kind", []byte{0, 0, 0, 1, 77}, "unknown frame kind 77"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr, accepted := fakeListener(t, tt.bad)
			lg := newLogs()
			connected := make(chan struct{}, 16)
			snd := NewSender(SenderConfig{Hello: hello("a"), Addr: addr, Logger: lg.logger(),
				OnConnect: func() {
					select {
					case connected <- struct{}{}:
					default:
					}
				},
				Handler: func(kind FrameKind, _ []byte) { t.Errorf("Handler got a %s frame", kind) }})
			defer snd.Close()
			recv(t, accepted, "the first connection")
			recv(t, connected, "the first OnConnect")
			lg.wait(t, "ERROR broke the connection to a peer worker; reconnecting", addr, tt.log)
			recv(t, accepted, "a reconnection")
			recv(t, connected, "the second OnConnect")
		})
	}
}

// The sender's byte and frame counters match what the server reads: the
// hello, the data frames and, after Close, the close frame.
func TestByteCounters(t *testing.T) {
	e, lg := newConnEvents(t), newLogs()
	var got atomic.Int64
	srv := listen(t, "127.0.0.1:0", e.config(ServerConfig{Hello: hello("b"), Logger: lg.logger(),
		Handler: func(_ *ServerConn, kind FrameKind, _ []byte) {
			if kind == FrameData {
				got.Add(1)
			}
		}}))
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: lg.logger()}) // no heartbeats
	defer snd.Close()

	want := int64(frameHeader + len(AppendHello(nil, hello("a"))))
	const n = 300
	for i := range n {
		p := make([]byte, i*37%5000)
		want += int64(frameHeader + len(p))
		if err := snd.Send(t.Context(), FrameData, p); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 10*time.Second, fmt.Sprintf("%d data frames arrived", n), func() bool { return got.Load() == n })
	testutil.Eventually(t, 10*time.Second, fmt.Sprintf("BytesSent = BytesReceived = %d", want), func() bool {
		return snd.BytesSent() == want && srv.BytesReceived() == want
	})
	if got, want := snd.FramesSent(), int64(1+n); got != want {
		t.Errorf("FramesSent = %d, want %d (hello and data)", got, want)
	}

	snd.Close()
	recv(t, e.closed, "OnClose after the close frame")
	want += frameHeader
	if s, r := snd.BytesSent(), srv.BytesReceived(); s != want || r != want {
		t.Errorf("after Close: BytesSent = %d, BytesReceived = %d, want %d each", s, r, want)
	}
	if got, want := snd.FramesSent(), int64(2+n); got != want {
		t.Errorf("after Close: FramesSent = %d, want %d", got, want)
	}
}

// Serve serves a listener the caller bound, and Close closes it.
func TestServeBoundListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Serve(ln, ServerConfig{Hello: hello("b")}); err == nil {
		t.Fatal("Serve without a Handler: no error")
	}
	if _, err := Listen("127.0.0.1:0", ServerConfig{Hello: hello("b")}); err == nil {
		t.Fatal("Listen without a Handler: no error")
	}

	rec, lg := newReceived(), newLogs()
	srv, err := Serve(ln, ServerConfig{Hello: hello("b"), Handler: rec.handle, Logger: lg.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if got, want := srv.Addr(), ln.Addr().String(); got != want {
		t.Errorf("Addr() = %s, want the listener's %s", got, want)
	}
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: ln.Addr().String(), Logger: lg.logger()})
	defer snd.Close()
	sendData(t, snd, 0, 10)
	rec.waitFor(t, FrameData, 10)

	snd.Close()
	srv.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Server.Close: %v, want net.ErrClosed", err)
	}
	lg.mu.Lock()
	defer lg.mu.Unlock()
	for _, line := range lg.lines {
		if strings.Contains(line, "ERROR") {
			t.Errorf("unexpected error: %s", line)
		}
	}
}

// TestSenderReleasesPayloads: every queued payload comes back through
// Release exactly once, and only after its bytes went out: the receiver
// sees each frame intact although the test scribbles over every released
// buffer.
func TestSenderReleasesPayloads(t *testing.T) {
	lg := newLogs()
	const n = 500
	var bad, got atomic.Int64
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Logger: lg.logger(),
		Handler: func(_ *ServerConn, kind FrameKind, p []byte) {
			if kind != FrameData {
				return
			}
			if p[0] == 0xFF {
				bad.Add(1) // the test's scribble: values sent are < 200
			}
			for _, c := range p[1:] {
				if c != p[0] {
					bad.Add(1)
					break
				}
			}
			got.Add(1)
		}})
	var mu sync.Mutex
	released := map[*byte]int{}
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: lg.logger(), Linger: 50 * time.Microsecond,
		Release: func(p []byte) {
			mu.Lock()
			released[&p[:1][0]]++
			mu.Unlock()
			for i := range p {
				p[i] = 0xFF // a reused buffer gets overwritten
			}
		}})
	defer snd.Close()
	for i := range n {
		p := bytes.Repeat([]byte{byte(i % 200)}, 1+i*13%3000)
		if err := snd.Send(t.Context(), FrameData, p); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 10*time.Second, fmt.Sprintf("%d frames arrived", n), func() bool { return got.Load() == n })
	testutil.Eventually(t, 10*time.Second, fmt.Sprintf("%d payloads released", n), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(released) == n
	})
	mu.Lock()
	defer mu.Unlock()
	for _, k := range released {
		if k != 1 {
			t.Fatalf("a payload was released %d times", k)
		}
	}
	if b := bad.Load(); b > 0 {
		t.Fatalf("%d frames arrived altered: a payload was released before it was written", b)
	}
}
