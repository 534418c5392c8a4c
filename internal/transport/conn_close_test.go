package transport

import (
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/testutil"
)

// Log lines the tests below look for.
const (
	logShuttingDown = "INFO peer worker closed the connection: it is shutting down"
	logRetryQuiet   = "DEBUG cannot connect to a peer worker; retrying"
	logRetryWarn    = "WARN cannot connect to a peer worker; retrying"
	logLost         = "WARN lost the connection to a peer worker; reconnecting"
	logStillDown    = "WARN peer worker has been down since it closed the connection; retrying"
)

// snapshot returns the lines logged so far.
func (l *logs) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// count is the number of lines logged so far that contain all of want.
func (l *logs) count(want ...string) int {
	n := 0
	for _, line := range l.snapshot() {
		if containsAll(line, want) {
			n++
		}
	}
	return n
}

func containsAll(line string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(line, w) {
			return false
		}
	}
	return true
}

// noLoudLines fails the test for every WARN or ERROR line in lines.
func noLoudLines(t *testing.T, lines []string) {
	t.Helper()
	for _, line := range lines {
		if strings.HasPrefix(line, "WARN") || strings.HasPrefix(line, "ERROR") {
			t.Errorf("unexpected line: %s", line)
		}
	}
}

// crash ends srv as a killed worker's kernel would: the listener and every
// connection closed, no close frames; with reset, connections are reset
// rather than closed.
func crash(t *testing.T, srv *Server, reset bool) {
	t.Helper()
	srv.mu.Lock()
	srv.closed = true
	srv.ln.Close()
	for c := range srv.conns {
		if reset {
			if err := c.(*net.TCPConn).SetLinger(0); err != nil {
				t.Errorf("SetLinger: %v", err)
			}
		}
		c.Close()
	}
	srv.mu.Unlock()
	srv.wg.Wait()
}

// connectSignal returns an OnConnect that signals on the returned channel,
// dropping signals the test has not taken while 16 are pending.
func connectSignal() (func(), <-chan struct{}) {
	ch := make(chan struct{}, 16)
	return func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}, ch
}

// When the listener's Server closes, the sender logs once at INFO that the
// peer is shutting down, and its attempts to reconnect to the closed
// address log at DEBUG: nothing warns. Frames flow both ways all the
// while: the listener's credits contend with the close frame for the
// connection, and the sender's data may meet a connection already reset.
func TestSenderQuietOnOrderlyClose(t *testing.T) {
	lg := newLogs()
	var writers sync.WaitGroup
	t.Cleanup(writers.Wait) // after the listener's Close, which stops them
	writeErr := make(chan error, 1)
	credits := AppendCredits(nil, []Credit{{Dest: 0, N: 1}})
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Logger: lg.logger(),
		Handler: func(*ServerConn, FrameKind, []byte) {},
		OnOpen: func(c *ServerConn) {
			writers.Go(func() {
				for {
					if err := c.Write(FrameBackpressure, credits); err != nil {
						writeErr <- err
						return
					}
				}
			})
		}})
	addr := srv.Addr()
	onConnect, connected := connectSignal()
	granted := make(chan struct{}, 1)
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: addr, Logger: lg.logger(),
		MaxBackoff: 20 * time.Millisecond, QuietAfterClose: time.Minute, OnConnect: onConnect,
		Handler: func(FrameKind, []byte) {
			select {
			case granted <- struct{}{}:
			default:
			}
		}})
	defer snd.Close()
	recv(t, connected, "OnConnect")
	recv(t, granted, "credits")
	var senders sync.WaitGroup
	t.Cleanup(senders.Wait) // after the deferred snd.Close, which stops it
	senders.Go(func() {
		payload := make([]byte, 1024)
		for snd.Send(t.Context(), FrameData, payload) == nil {
		}
	})

	srv.Close()
	if err := recv(t, writeErr, "the writer to stop"); !errors.Is(err, ErrConnClosed) {
		t.Errorf("Write during Server.Close: %v, want ErrConnClosed", err)
	}
	lg.wait(t, logShuttingDown, "addr="+addr)
	testutil.Eventually(t, 10*time.Second, "the sender made 3 attempts", func() bool { return lg.count(logRetryQuiet, "addr="+addr) >= 3 })
	snd.Close()

	lines := lg.snapshot()
	noLoudLines(t, lines)
	if n := lg.count(logShuttingDown); n != 1 {
		t.Errorf("%d lines %q, want 1; lines:\n%s", n, logShuttingDown, strings.Join(lines, "\n"))
	}
	select {
	case <-connected:
		t.Error("OnConnect with the listener closed")
	default:
	}
}

// A peer that goes away without a close frame, as a killed worker does,
// still warns: the lost connection and every failed attempt after it.
func TestSenderWarnsOnCrash(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reset bool
		err   string
	}{
		{"EOF", false, "err=EOF"},
		{"reset", true, "connection reset by peer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lg := newLogs()
			srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Logger: lg.logger(),
				Handler: func(*ServerConn, FrameKind, []byte) {}})
			addr := srv.Addr()
			onConnect, connected := connectSignal()
			snd := NewSender(SenderConfig{Hello: hello("a"), Addr: addr, Logger: lg.logger(),
				MaxBackoff: 20 * time.Millisecond, OnConnect: onConnect})
			defer snd.Close()
			recv(t, connected, "OnConnect")

			crash(t, srv, tt.reset)
			lg.wait(t, logLost, "addr="+addr, tt.err)
			testutil.Eventually(t, 10*time.Second, "3 attempts warned", func() bool {
				return lg.count(logRetryWarn, "addr="+addr, "connection refused") >= 3
			})
			snd.Close()
			for _, quiet := range []string{"shutting down", "DEBUG"} {
				if n := lg.count(quiet); n != 0 {
					t.Errorf("%d lines with %q after a crash, want none; lines:\n%s",
						n, quiet, strings.Join(lg.snapshot(), "\n"))
				}
			}
		})
	}
}

// After an orderly close the sender reconnects to a new listener on the
// same address, and that ends the quiet period: when the new one crashes,
// the lost connection and the failed attempts warn again.
func TestSenderReconnectsAfterOrderlyClose(t *testing.T) {
	lg := newLogs()
	srv1 := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Logger: lg.logger(),
		Handler: func(*ServerConn, FrameKind, []byte) {}})
	addr := srv1.Addr()
	onConnect, connected := connectSignal()
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: addr, Logger: lg.logger(),
		MaxBackoff: 20 * time.Millisecond, QuietAfterClose: time.Minute, OnConnect: onConnect})
	defer snd.Close()
	recv(t, connected, "the first OnConnect")

	srv1.Close()
	lg.wait(t, logShuttingDown, "addr="+addr)
	lg.wait(t, logRetryQuiet, "addr="+addr)

	rec := newReceived()
	srv2 := listen(t, addr, ServerConfig{Hello: hello("b"), Logger: lg.logger(), Handler: rec.handle})
	recv(t, connected, "OnConnect on the new listener")
	sendData(t, snd, 0, 3)
	rec.waitFor(t, FrameData, 3)
	noLoudLines(t, lg.snapshot())

	crash(t, srv2, false)
	lg.wait(t, logLost, "addr="+addr, "err=EOF")
	lg.wait(t, logRetryWarn, "addr="+addr, "connection refused")
	if n := lg.count(logShuttingDown); n != 1 {
		t.Errorf("%d lines %q, want 1 (for the first listener)", n, logShuttingDown)
	}
}

// Once QuietAfterClose has passed without a connection, the sender warns
// once that the peer has been down that long, and its attempts warn from
// then on.
func TestSenderWarnsAfterQuietPeriod(t *testing.T) {
	const quiet = 200 * time.Millisecond
	lg := newLogs()
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Logger: lg.logger(),
		Handler: func(*ServerConn, FrameKind, []byte) {}})
	addr := srv.Addr()
	onConnect, connected := connectSignal()
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: addr, Logger: lg.logger(),
		MaxBackoff: 20 * time.Millisecond, QuietAfterClose: quiet, OnConnect: onConnect})
	defer snd.Close()
	recv(t, connected, "OnConnect")

	start := time.Now()
	srv.Close()
	lg.wait(t, logStillDown, "addr="+addr, "connection refused")
	if d := time.Since(start); d < quiet {
		t.Errorf("warned %v after the close, want ≥ QuietAfterClose = %v", d, quiet)
	}
	testutil.Eventually(t, 10*time.Second, "3 attempts warned", func() bool { return lg.count(logRetryWarn, "addr="+addr) >= 3 })
	snd.Close()

	lines := lg.snapshot()
	var order []string // the sender's lines that matter, in order, repeats folded
	for _, line := range lines {
		for _, l := range []string{logShuttingDown, logRetryQuiet, logStillDown, logRetryWarn} {
			if strings.HasPrefix(line, l) && (len(order) == 0 || order[len(order)-1] != l) {
				order = append(order, l)
			}
		}
	}
	if want := []string{logShuttingDown, logRetryQuiet, logStillDown, logRetryWarn}; !slices.Equal(order, want) {
		t.Errorf("lines in the order\n\t%s\nwant\n\t%s\nlines:\n%s",
			strings.Join(order, "\n\t"), strings.Join(want, "\n\t"), strings.Join(lines, "\n"))
	}
	if n := lg.count(logStillDown); n != 1 {
		t.Errorf("%d lines %q, want 1", n, logStillDown)
	}
}

// A close frame from a listener is not a violation: the sender drops the
// connection without an error, ignores whatever follows the frame, and
// reconnects at once.
func TestSenderTakesListenerClose(t *testing.T) {
	bad := encodeFrames(t, 0, frame{FrameClose, nil}, frame{FrameData, []byte{1}})
	addr, accepted := fakeListener(t, bad)
	lg := newLogs()
	onConnect, connected := connectSignal()
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: addr, Logger: lg.logger(), OnConnect: onConnect,
		Handler: func(kind FrameKind, _ []byte) { t.Errorf("Handler got a %s frame", kind) }})
	defer snd.Close()
	recv(t, accepted, "the first connection")
	recv(t, connected, "the first OnConnect")
	lg.wait(t, logShuttingDown, "addr="+addr)
	recv(t, accepted, "a reconnection")
	recv(t, connected, "the second OnConnect")
	snd.Close()
	noLoudLines(t, lg.snapshot())
}

// A listener resets the connection right after its close frame, as one
// does that gave up waiting for the dialer to hang up, while the sender's
// reader is busy in the Handler: the sender's write fails first. The
// reader still takes the close frame, and the sender logs an orderly
// close, not a lost connection.
func TestSenderReadsCloseBeforeReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	sendClose := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(func() { ln.Close() })
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			t.Errorf("Accept: %v", err)
			return
		}
		defer c.Close()
		if kind, _, err := NewFrameReader(c, 0).Read(); err != nil || kind != FrameHello {
			t.Errorf("fake listener: first frame %v, %v, want a hello", kind, err)
			return
		}
		c.Write(encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, hello("fake"))},
			frame{FrameBackpressure, AppendCredits(nil, []Credit{{Dest: 0, N: 1}})}))
		select {
		case <-sendClose:
		case <-t.Context().Done():
			return
		}
		c.Write(encodeFrames(t, 0, frame{FrameClose, nil}))
		c.(*net.TCPConn).SetLinger(0) // Close resets, with the dialer's data unread
	})

	lg := newLogs()
	inHandler, release := make(chan struct{}, 1), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: addr, Logger: lg.logger(),
		MaxBackoff: 20 * time.Millisecond, QuietAfterClose: time.Minute,
		Handler: func(FrameKind, []byte) {
			select {
			case inHandler <- struct{}{}:
			default:
			}
			<-release
		}})
	defer snd.Close()
	defer releaseOnce() // before snd.Close, which waits for the Handler

	recv(t, inHandler, "the credits")
	close(sendClose)
	testutil.Eventually(t, 10*time.Second, "a write failed", func() bool {
		select {
		case snd.Queue() <- Frame{FrameData, []byte{1}}:
		default:
		}
		return !snd.Connected()
	})
	releaseOnce()
	lg.wait(t, logShuttingDown, "addr="+addr)
	if n := lg.count(logLost); n != 0 {
		t.Errorf("%d lines %q, want none; lines:\n%s", n, logLost, strings.Join(lg.snapshot(), "\n"))
	}
}
