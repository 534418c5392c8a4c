package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// logs records log lines and lets a test wait for one.
type logs struct {
	mu    sync.Mutex
	lines []string
	added chan struct{} // signalled on every line
}

func newLogs() *logs { return &logs{added: make(chan struct{}, 1)} }

func (l *logs) logger() *slog.Logger { return slog.New(&logHandler{l}) }

// wait returns the first line containing all of want, failing the test if
// none comes within 10 s.
func (l *logs) wait(t *testing.T, want ...string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(line, w)
			}
			if ok {
				l.mu.Unlock()
				return line
			}
		}
		l.mu.Unlock()
		select {
		case <-l.added:
		case <-deadline:
			l.mu.Lock()
			lines := strings.Join(l.lines, "\n")
			l.mu.Unlock()
			t.Fatalf("no log line with %q; lines:\n%s", want, lines)
		}
	}
}

type logHandler struct{ l *logs }

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *logHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logHandler) WithGroup(string) slog.Handler            { return h }
func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.l.mu.Lock()
	h.l.lines = append(h.l.lines, b.String())
	h.l.mu.Unlock()
	select {
	case h.l.added <- struct{}{}:
	default:
	}
	return nil
}

// received collects the frames a server handled.
type received struct {
	mu     sync.Mutex
	frames []frame
	added  chan struct{}
}

func newReceived() *received { return &received{added: make(chan struct{}, 1)} }

func (r *received) handle(_ *ServerConn, kind FrameKind, payload []byte) {
	r.mu.Lock()
	r.frames = append(r.frames, frame{kind, bytes.Clone(payload)})
	r.mu.Unlock()
	select {
	case r.added <- struct{}{}:
	default:
	}
}

// waitFor waits until n frames of kind arrived and returns them.
func (r *received) waitFor(t *testing.T, kind FrameKind, n int) []frame {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		var got []frame
		for _, f := range r.frames {
			if f.kind == kind {
				got = append(got, f)
			}
		}
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.added:
		case <-deadline:
			t.Fatalf("%d %s frames arrived, want %d", len(got), kind, n)
		}
	}
}

var testHello = Hello{Version: ProtocolVersion, Topology: "wc-1", Types: 42}

func hello(worker string) Hello { h := testHello; h.Worker = worker; return h }

func listen(t *testing.T, addr string, cfg ServerConfig) *Server {
	t.Helper()
	s, err := Listen(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sendData(t *testing.T, s *Sender, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := s.Send(t.Context(), FrameData, binary.BigEndian.AppendUint32(nil, uint32(i))); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSendReceive(t *testing.T) {
	rec, lg := newReceived(), newLogs()
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Handler: rec.handle, Logger: lg.logger()})
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: lg.logger()})
	defer snd.Close()

	const n = 2000
	sendData(t, snd, 0, n)
	got := rec.waitFor(t, FrameData, n)
	for i, f := range got {
		if v := binary.BigEndian.Uint32(f.payload); v != uint32(i) {
			t.Fatalf("frame %d carries %d: out of order or lost", i, v)
		}
	}
	snd.Close()
	if err := snd.Send(t.Context(), FrameData, nil); err != ErrSenderClosed {
		t.Errorf("Send after Close: %v, want ErrSenderClosed", err)
	}
}

// A peer that is not a Gale worker, or that breaks the framing, loses its
// connection with a logged error; the server goes on serving others.
func TestServerClosesBadPeers(t *testing.T) {
	helloFrame := encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, hello("bad"))})
	tests := []struct {
		name string
		send []byte
		log  []string
	}{
		{"HTTP", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), []string{"refused a worker connection", "over the"}},
		{"data before hello", encodeFrames(t, 0, frame{FrameData, []byte{1}}), []string{"refused", "first frame is data, not hello"}},
		{"other topology", encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, Hello{Version: ProtocolVersion, Topology: "wc-2", Worker: "bad", Types: 42})}), []string{"refused", `runs topology "wc-2"`}},
		{"garbage after hello", append(bytes.Clone(helloFrame), 0, 0, 0, 1, 77), []string{"closed a worker connection", "peer=bad", "unknown frame kind 77"}},
		{"cut mid-frame", append(bytes.Clone(helloFrame), append(binary.BigEndian.AppendUint32(nil, 100), byte(FrameData), 1, 2, 3)...), []string{"closed a worker connection", "peer=bad", "unexpected EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, lg := newReceived(), newLogs()
			srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Handler: rec.handle, Logger: lg.logger(), MaxFrameSize: 1 << 20})
			c, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			c.Write(tt.send)
			if tt.name == "cut mid-frame" {
				c.(*net.TCPConn).CloseWrite()
			}
			lg.wait(t, tt.log...)
			c.Close()

			snd := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: lg.logger()})
			defer snd.Close()
			sendData(t, snd, 0, 10)
			rec.waitFor(t, FrameData, 10)
		})
	}
}

// When the peer goes away and comes back on the same address, the sender
// reconnects and later frames arrive.
func TestSenderReconnects(t *testing.T) {
	rec, lg := newReceived(), newLogs()
	cfg := ServerConfig{Hello: hello("b"), Handler: rec.handle, Logger: lg.logger()}
	srv := listen(t, "127.0.0.1:0", cfg)
	addr := srv.Addr()
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: addr, Logger: lg.logger(), MaxBackoff: 50 * time.Millisecond})
	defer snd.Close()
	sendData(t, snd, 0, 5)
	rec.waitFor(t, FrameData, 5)

	srv.Close()
	lg.wait(t, logShuttingDown, addr)

	listen(t, addr, cfg)
	deadline := time.Now().Add(10 * time.Second)
	for i := 100; ; i++ {
		sendData(t, snd, i, i+1)
		got := rec.waitForAny(t)
		if binary.BigEndian.Uint32(got.payload) >= 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no frame arrived after the peer came back")
		}
	}
}

// waitForAny waits for the next frame to arrive and returns it.
func (r *received) waitForAny(t *testing.T) frame {
	t.Helper()
	r.mu.Lock()
	n := len(r.frames)
	r.mu.Unlock()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		if len(r.frames) > n {
			f := r.frames[len(r.frames)-1]
			r.mu.Unlock()
			return f
		}
		r.mu.Unlock()
		select {
		case <-r.added:
		case <-deadline:
			t.Fatal("no frame arrived")
		}
	}
}

// Heartbeats keep an idle connection open past the server's idle timeout;
// a peer that stops sending is closed with a logged error.
func TestHeartbeatsAndIdleTimeout(t *testing.T) {
	rec, lg := newReceived(), newLogs()
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Handler: rec.handle, Logger: lg.logger(), IdleTimeout: time.Second})
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: lg.logger(), Heartbeat: 10 * time.Millisecond})
	defer snd.Close()
	// 150 heartbeats at 10 ms outlast the 1 s idle timeout on one
	// connection (the margin is for this shared host's stalls).
	rec.waitFor(t, FrameHeartbeat, 150)
	srv.mu.Lock()
	conns := len(srv.conns)
	srv.mu.Unlock()
	if conns != 1 {
		t.Errorf("%d connections, want the first one still open", conns)
	}
	lg.mu.Lock()
	for _, line := range lg.lines {
		if strings.Contains(line, "idle") || strings.Contains(line, "reconnecting") {
			t.Errorf("connection dropped despite heartbeats: %s", line)
		}
	}
	lg.mu.Unlock()

	// A peer that says hello and then nothing.
	defer dialSilent(t, srv.Addr(), "silent").Close()
	lg.wait(t, "closed an idle worker connection", "peer=silent")
}

// dialSilent connects to addr as worker name, says hello and nothing more.
func dialSilent(t *testing.T, addr, name string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, hello(name))})); err != nil {
		c.Close()
		t.Fatal(err)
	}
	return c
}

// Close returns even when the peer has stopped reading and the
// connection's buffers are full.
func TestSenderCloseWithStuckPeer(t *testing.T) {
	release := make(chan struct{})
	lg := newLogs()
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Logger: lg.logger(),
		Handler: func(*ServerConn, FrameKind, []byte) { <-release }})
	defer close(release) // before srv.Close, which waits for the handler
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: lg.logger(), MaxBackoff: 100 * time.Millisecond, QueueLen: 4})
	// Fill the queue and the socket buffers: Send blocks once they are full.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	payload := make([]byte, 1<<20)
	for {
		if err := snd.Send(ctx, FrameData, payload); err != nil {
			break // full: the peer is not reading
		}
	}
	done := make(chan struct{})
	go func() { snd.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with the peer not reading")
	}
}
