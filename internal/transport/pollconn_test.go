//go:build unix

package transport

import (
	"bytes"
	"encoding/binary"
	"net"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// busy keeps the process's Ps running goroutines that work for a while and
// yield, as a worker's executors do at a high rate, until stop is called.
// A server's bounded parks on an empty socket then end on their timers
// (pollConn), not on the netpoller.
func busy(t *testing.T) (stop func()) {
	t.Helper()
	var quit atomic.Bool
	var wg sync.WaitGroup
	for range 2 * goruntime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !quit.Load() {
				for t0 := time.Now(); time.Since(t0) < 20*time.Microsecond; {
				}
				goruntime.Gosched()
			}
		}()
	}
	stop = func() { quit.Store(true); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

// Frames of every size arrive whole and in order while the reading process
// is busy, when the server's bounded parks on an empty socket end on their
// timers rather than on the netpoller, and while it is idle; and the same
// through plain reads (the path off Unix, taken for a connection that is
// not a socket).
func TestPollConnReadsWhileBusy(t *testing.T) {
	t.Run("busy", func(t *testing.T) {
		busy(t)
		checkFramesIntact(t, false)
	})
	t.Run("idle", func(t *testing.T) { checkFramesIntact(t, false) })
	t.Run("plain reads", func(t *testing.T) {
		busy(t)
		checkFramesIntact(t, true)
	})
}

// notSocket hides a connection's syscall.Conn, so that a Server reads it
// plainly, not through pollConn.
type notSocket struct{ net.Conn }

// plainListener accepts connections as notSockets.
type plainListener struct{ net.Listener }

func (l plainListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return notSocket{c}, nil
}

func checkFramesIntact(t *testing.T, plain bool) {
	rec, lg := newReceived(), newLogs()
	cfg := ServerConfig{Hello: hello("b"), Handler: rec.handle, Logger: lg.logger(), IdleTimeout: 10 * time.Second}
	var srv *Server
	if plain {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if srv, err = Serve(plainListener{ln}, cfg); err != nil {
			ln.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		if _, ok := newPollConn(notSocket{}); ok {
			t.Fatal("a notSocket is read through pollConn")
		}
	} else {
		srv = listen(t, "127.0.0.1:0", cfg)
	}
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: lg.logger()})
	defer snd.Close()
	const n = 2000
	for i := range n {
		p := make([]byte, 4+i*37%20000) // from 4 bytes to many socket reads' worth
		binary.BigEndian.PutUint32(p, uint32(i))
		for j := 4; j < len(p); j++ {
			p[j] = byte(i + j)
		}
		if err := snd.Send(t.Context(), FrameData, p); err != nil {
			t.Fatal(err)
		}
	}
	got := rec.waitFor(t, FrameData, n)
	for i, f := range got {
		want := make([]byte, 4+i*37%20000)
		binary.BigEndian.PutUint32(want, uint32(i))
		for j := 4; j < len(want); j++ {
			want[j] = byte(i + j)
		}
		if !bytes.Equal(f.payload, want) {
			t.Fatalf("frame %d: %d bytes, starting %x; want %d bytes starting %x", i, len(f.payload), f.payload[:min(8, len(f.payload))], len(want), want[:min(8, len(want))])
		}
	}
}

// The idle timeout holds while the reader's bounded parks keep ending on
// their timers: a peer that says hello and then nothing is closed, however
// busy the process is.
func TestPollConnIdleTimeoutWhileBusy(t *testing.T) {
	busy(t)
	lg := newLogs()
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Handler: func(*ServerConn, FrameKind, []byte) {}, Logger: lg.logger(), IdleTimeout: 300 * time.Millisecond})
	defer dialSilent(t, srv.Addr(), "silent").Close()
	lg.wait(t, "closed an idle worker connection", "peer=silent")
}

// A peer that hangs up while the process is busy ends the connection with
// the usual log line, and one that resets it is reported as an error.
func TestPollConnPeerGoneWhileBusy(t *testing.T) {
	busy(t)
	lg := newLogs()
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Handler: func(*ServerConn, FrameKind, []byte) {}, Logger: lg.logger(), IdleTimeout: 10 * time.Second})
	for _, tc := range []struct {
		peer  string
		reset bool
		want  string
	}{
		{peer: "quits", want: "worker connection ended without a close frame"},
		{peer: "resets", reset: true, want: "closed a worker connection"},
	} {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, hello(tc.peer))}))
		if tc.reset {
			c.(*net.TCPConn).SetLinger(0) // Close sends a reset
		}
		// Wait for the handshake's answer so the server is reading frames.
		if _, _, err := NewFrameReader(c, 0).Read(); err != nil {
			t.Fatalf("%s: reading the hello: %v", tc.peer, err)
		}
		c.Close()
		lg.wait(t, tc.want, "peer="+tc.peer)
	}
}
