package transport

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/testutil"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// quietWindow is how long a test watches for a retry that must not come:
// a sender that retried would have dialled several times over by then
// (its backoff starts at 1 ms), however busy the machine.
const quietWindow = 300 * time.Millisecond

// A listener that refuses a hello for a reason retrying cannot help says
// why in a refusal frame; the dialer logs it once at ERROR, tells its
// owner through OnRefused and dials no more.
func TestSenderStopsWhenRefused(t *testing.T) {
	lg := newLogs()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	other := hello("b")
	other.Topology = "wc-2"
	srv, err := Serve(cl, ServerConfig{Hello: other, Handler: func(*ServerConn, FrameKind, []byte) {}, Logger: lg.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	refused := make(chan error, 2)
	slg := newLogs()
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: srv.Addr(), Logger: slg.logger(), MinBackoff: time.Millisecond,
		OnRefused: func(err error) { refused <- err }})
	defer snd.Close()
	err = recv(t, refused, "OnRefused")
	var re *RefusedError
	const reason = `worker "a" runs topology "wc-1", worker "b" runs "wc-2": a stale worker, or a port reused across topologies`
	if !errors.As(err, &re) || !re.ByPeer || !re.Permanent || re.Reason != reason || re.Addr != srv.Addr() || !errors.Is(err, ErrMismatch) {
		t.Fatalf("OnRefused(%#v), want a permanent *RefusedError by the peer at %s saying %q", err, srv.Addr(), reason)
	}
	window := time.NewTimer(quietWindow)
	defer window.Stop()
	<-window.C
	if n := cl.n.Load(); n != 1 {
		t.Errorf("the sender dialled %d times, want once: retrying cannot help", n)
	}
	if n := slg.count("ERROR cannot connect to a peer worker; not retrying", reason); n != 1 {
		t.Errorf("%d ERROR lines with the reason on the refused side, want 1; lines:\n%s", n, strings.Join(slg.snapshot(), "\n"))
	}
	if n := slg.count("WARN"); n != 0 {
		t.Errorf("%d WARN lines on the refused side, want none; lines:\n%s", n, strings.Join(slg.snapshot(), "\n"))
	}
	select {
	case err := <-refused:
		t.Errorf("OnRefused called twice; the second time with %v", err)
	default:
	}
	if err := snd.Send(t.Context(), FrameData, []byte{1}); err != nil {
		t.Errorf("Send after the refusal: %v, want it queued", err)
	}
}

// answeringListener answers every hello with answer(i), i counting the
// connections from 0, then waits for the dialer to hang up, or, with
// hangUp, hangs up itself. A connection that ends before its hello fails
// the test, unless closing is set: a Sender's Close cuts its connection
// attempt short, however far it got.
func answeringListener(t *testing.T, hangUp bool, closing *atomic.Bool, answer func(i int) []byte) (addr string, accepted *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			i := int(n.Add(1)) - 1
			wg.Go(func() {
				defer c.Close()
				if kind, _, err := readFirstFrame(c, nil); err != nil || kind != FrameHello {
					if closing != nil && closing.Load() && errors.Is(err, io.EOF) {
						return
					}
					t.Errorf("listener: first frame %v, %v, want a hello", kind, err)
					return
				}
				if _, err := c.Write(answer(i)); err != nil || hangUp {
					return
				}
				var b [64]byte
				for {
					if _, err := c.Read(b[:]); err != nil {
						return // the dialer hung up
					}
				}
			})
		}
	})
	return ln.Addr().String(), &n
}

// A sender that refuses the listener's hello, for a reason retrying cannot
// help, stops as if refused.
func TestSenderStopsWhenRefusing(t *testing.T) {
	other := hello("b")
	other.Assignment = "as-2"
	addr, accepted := answeringListener(t, false, nil, func(int) []byte {
		return encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, other)})
	})
	slg := newLogs()
	refused := make(chan error, 2)
	self := hello("a")
	self.Assignment = "as-1"
	snd := NewSender(SenderConfig{Hello: self, Addr: addr, Logger: slg.logger(), MinBackoff: time.Millisecond,
		OnRefused: func(err error) { refused <- err }})
	defer snd.Close()
	err := recv(t, refused, "OnRefused")
	var re *RefusedError
	if !errors.As(err, &re) || re.ByPeer || !re.Permanent || !strings.Contains(re.Reason, "hold different assignments") {
		t.Fatalf("OnRefused(%v), want a permanent *RefusedError of this worker's about the assignments", err)
	}
	window := time.NewTimer(quietWindow)
	defer window.Stop()
	<-window.C
	if n := accepted.Load(); n != 1 {
		t.Errorf("the sender dialled %d times, want once", n)
	}
}

// A refusal that retrying may cure (the listener was busy, or the hello
// slow) is retried with backoff, and the sender connects once the
// listener takes it.
func TestSenderRetriesTransientRefusal(t *testing.T) {
	addr, accepted := answeringListener(t, false, nil, func(i int) []byte {
		if i < 2 {
			return encodeFrames(t, 0, frame{FrameRefuse, appendRefusal(nil, false, "no hello within 10s")})
		}
		return encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, hello("b"))})
	})
	slg := newLogs()
	onConnect, connected := connectSignal()
	snd := NewSender(SenderConfig{Hello: hello("a"), Addr: addr, Logger: slg.logger(), MinBackoff: time.Millisecond,
		OnConnect: onConnect,
		OnRefused: func(err error) { t.Errorf("OnRefused(%v) for a transient refusal", err) }})
	defer snd.Close()
	recv(t, connected, "a connection after two transient refusals")
	if n := accepted.Load(); n != 3 {
		t.Errorf("%d connections, want 3", n)
	}
	slg.wait(t, "WARN cannot connect to a peer worker; retrying", "refused this worker's hello: no hello within 10s")
}

// A listener that ends every connection as soon as it is made, however
// fast the sender reconnects, gets a few log lines a minute, not one per
// connection.
func TestSenderRateLimitsConnectionEnds(t *testing.T) {
	for _, tt := range []struct {
		name, log string
		after     []byte
	}{
		{"close frame", "peer worker closed the connection", encodeFrames(t, 0, frame{FrameClose, nil})},
		{"bad frame", "broke the connection to a peer worker", []byte{0, 0, 0, 1, 77}},
		{"hang up", "lost the connection to a peer worker", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var closing atomic.Bool
			addr, accepted := answeringListener(t, tt.after == nil, &closing, func(int) []byte {
				return append(encodeFrames(t, 0, frame{FrameHello, AppendHello(nil, hello("b"))}), tt.after...)
			})
			slg := newLogs()
			snd := NewSender(SenderConfig{Hello: hello("a"), Addr: addr, Logger: slg.logger(), MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
			defer snd.Close()
			const conns = 40
			testutil.Eventually(t, 10*time.Second, "40 connections", func() bool { return accepted.Load() >= conns })
			closing.Store(true)
			snd.Close()
			if n := slg.count(tt.log); n < 1 || n > 10 {
				t.Errorf("%d lines %q for %d connections, want 1 to 10; lines:\n%s", n, tt.log, accepted.Load(), strings.Join(slg.snapshot(), "\n"))
			}
			// Close reports how many it held back.
			slg.wait(t, "lost more connections to a peer worker than were logged", "suppressed=")
		})
	}
}
