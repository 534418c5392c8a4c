package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// pipeListener is a net.Listener over net.Pipe: inside a synctest bubble
// its connections' deadlines run on the bubble's clock.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial connects to the listener; the server's side is accepted.
func (l *pipeListener) dial(t *testing.T) net.Conn {
	t.Helper()
	client, server := net.Pipe()
	select {
	case l.conns <- server:
	case <-l.closed:
		t.Fatal("dial: the listener is closed")
	}
	t.Cleanup(func() { client.Close() })
	return client
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// answer reads the listener's answer to a hello: its kind and payload, or
// the error that ended the connection first.
func answer(c net.Conn) (FrameKind, []byte, error) { return readFirstFrame(c, nil) }

// A first frame announced larger than any hello is refused at its header:
// the listener reads none of it, answers with a refusal and closes, and
// goes on accepting peers that say hello.
func TestServerBoundsFirstFrame(t *testing.T) {
	lg := newLogs()
	rec := newReceived()
	srv := listen(t, "127.0.0.1:0", ServerConfig{Hello: hello("b"), Handler: rec.handle, Logger: lg.logger()})
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A 16 MiB hello's header and its first 64 KiB: the data-frame bound
	// would take all of it, and wait for the rest.
	msg := binary.BigEndian.AppendUint32(nil, DefaultMaxFrameSize)
	msg = append(msg, byte(FrameHello))
	go c.Write(append(msg, make([]byte, 64<<10)...)) // may block: the listener reads none of it
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	kind, payload, err := answer(c)
	if err != nil || kind != FrameRefuse {
		t.Fatalf("answer to an oversized hello: %v %q, %v; want a refusal", kind, payload, err)
	}
	bound := fmt.Sprintf("over the %d-byte bound of a hello", MaxHelloFrame)
	if re := parseRefusal("", payload); !strings.Contains(re.Reason, bound) {
		t.Errorf("refusal %q, want it to name the hello's bound", re.Reason)
	}
	var one [1]byte
	if _, err := c.Read(one[:]); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the refusal: %v, want the connection closed", err)
	}
	lg.wait(t, "refused a worker connection", bound)
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: lg.logger()})
	defer snd.Close()
	sendData(t, snd, 0, 3)
	rec.waitFor(t, FrameData, 3)
}

// Connections that do not finish their hello hold at most MaxHandshakes
// first frames of at most MaxHelloFrame bytes: those beyond the cap are
// closed as they arrive, the others when HandshakeTimeout passes, with a
// refusal that says so. A legitimate peer then connects.
func TestServerBoundsHandshakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lg := newLogs()
		ln := newPipeListener()
		const maxHandshakes, timeout = 8, 5 * time.Second
		srv, err := Serve(ln, ServerConfig{Hello: hello("b"), Handler: func(*ServerConn, FrameKind, []byte) {}, Logger: lg.logger(),
			MaxHandshakes: maxHandshakes, HandshakeTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()

		// 100 peers each send the largest first frame a hello may be, less
		// its last byte, and wait.
		const peers = 100
		partial := binary.BigEndian.AppendUint32(nil, MaxHelloFrame)
		partial = append(partial, byte(FrameHello))
		partial = append(partial, make([]byte, MaxHelloFrame-2)...)
		type result struct {
			wrote error
			kind  FrameKind
			ans   []byte
			err   error
		}
		results := make([]result, peers)
		var wg sync.WaitGroup
		for i := range peers {
			c := ln.dial(t)
			wg.Go(func() {
				if _, err := c.Write(partial); err != nil {
					results[i].wrote = err
					return
				}
				results[i].kind, results[i].ans, results[i].err = answer(c)
			})
		}
		synctest.Wait()
		if n := srv.handshakes.Load(); n != maxHandshakes {
			t.Errorf("%d connections shaking hands, want the cap of %d", n, maxHandshakes)
		}
		if got, max := srv.handshakeBytes.Load(), int64(maxHandshakes*MaxHelloFrame); got > max || got == 0 {
			t.Errorf("the server holds %d bytes of first frames, want at most %d (%d × %d) and some", got, max, maxHandshakes, MaxHelloFrame)
		}
		refusedAtOnce := lg.count("refused a worker connection", "shaking hands already")
		if refusedAtOnce == 0 || refusedAtOnce > 10 {
			t.Errorf("%d log lines for the %d connections over the cap, want some, rate-limited to at most 10", refusedAtOnce, peers-maxHandshakes)
		}

		time.Sleep(timeout) // the bubble's clock: the handshakes time out
		wg.Wait()
		closedAtOnce, timedOut := 0, 0
		for i, r := range results {
			switch {
			case r.wrote != nil:
				closedAtOnce++
			case r.kind == FrameRefuse:
				re := parseRefusal("", r.ans)
				if re.Permanent || !strings.Contains(re.Reason, "no hello within 5s") {
					t.Errorf("peer %d: refusal %+v, want a transient one saying no hello came within 5s", i, re)
				}
				timedOut++
			default:
				t.Errorf("peer %d: answer %v %q, %v; want a refusal", i, r.kind, r.ans, r.err)
			}
		}
		if closedAtOnce != peers-maxHandshakes || timedOut != maxHandshakes {
			t.Errorf("%d closed at once and %d timed out, want %d and %d", closedAtOnce, timedOut, peers-maxHandshakes, maxHandshakes)
		}
		synctest.Wait()
		if n, b := srv.handshakes.Load(), srv.handshakeBytes.Load(); n != 0 || b != 0 {
			t.Errorf("after the timeout: %d handshakes holding %d bytes, want none", n, b)
		}

		// A worker that says hello gets the listener's.
		c := ln.dial(t)
		go c.Write(encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, hello("a"))}))
		kind, payload, err := answer(c)
		if err != nil || kind != FrameHello {
			t.Fatalf("a legitimate hello got %v %q, %v; want the listener's hello", kind, payload, err)
		}
		if h, err := ParseHello(payload); err != nil || h.Worker != "b" {
			t.Errorf("answer %+v, %v; want worker b's hello", h, err)
		}
		c.Close()

		// Close reports the lines it held back.
		srv.Close()
		lg.wait(t, "refused more worker connections than were logged", "suppressed=")
	})
}

// A connection that sends nothing is closed once HandshakeTimeout has
// passed, whatever the idle timeout (none here).
func TestServerHandshakeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lg := newLogs()
		ln := newPipeListener()
		srv, err := Serve(ln, ServerConfig{Hello: hello("b"), Handler: func(*ServerConn, FrameKind, []byte) {}, Logger: lg.logger()})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		c := ln.dial(t)
		var ended atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			io.Copy(io.Discard, c) // until the listener closes
			ended.Store(true)
		}()
		time.Sleep(defaultHandshakeTimeout - time.Millisecond)
		synctest.Wait()
		if ended.Load() {
			t.Fatal("the connection was closed before the handshake timeout")
		}
		time.Sleep(time.Millisecond)
		<-done
		lg.wait(t, "refused a worker connection", "no hello within 10s")
	})
}

// readFirstFrame never reads past the frame it returns, never holds more
// than MaxHelloFrame, and gives back what it held.
func FuzzReadFirstFrame(f *testing.F) {
	f.Add(encodeFrames(f, 0, frame{FrameHello, AppendHello(nil, hello("a"))}))
	f.Add(encodeFrames(f, 0, frame{FrameRefuse, appendRefusal(nil, true, "no")}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, p []byte) {
		r := &limitedReads{data: p}
		var held atomic.Int64
		kind, payload, err := readFirstFrame(r, &held)
		if held.Load() != 0 {
			t.Fatalf("holds %d bytes after returning", held.Load())
		}
		if err != nil {
			return
		}
		if len(payload)+1 > MaxHelloFrame {
			t.Fatalf("a %s frame of %d bytes, over the bound", kind, len(payload)+1)
		}
		if r.off != frameHeader+len(payload) {
			t.Fatalf("read %d bytes for a frame of %d", r.off, frameHeader+len(payload))
		}
	})
}

// limitedReads hands out its data a few bytes at a time.
type limitedReads struct {
	data []byte
	off  int
}

func (r *limitedReads) Read(p []byte) (int, error) {
	if r.off == len(r.data) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 7)], r.data[r.off:])
	r.off += n
	return n, nil
}
